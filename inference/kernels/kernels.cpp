// Reference (portable) kernels, instruction-set selection, and the matmul
// driver that fans rows out over the context's threads.
#include "inference/kernels/kernels.h"

#include <cpuid.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <thread>

#include "base/assert.h"
#include "inference/gguf/fp16.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/gguf/quant.h"
#include "inference/kernels/thread_team.h"

namespace tachyon {
namespace {

// ---- reference dot products -------------------------------------------------
// Integer sums are exact; the float accumulation order is the natural one.

// Float weights: f32, or f16 / bf16 widened element by element.
inline float as_f32(float v) { return v; }

template <class Elem, float (*ToF32)(Elem)>
float dot_float(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const Elem*>(w);
    const auto* b = static_cast<const float*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += ToF32(a[i]) * b[i];
    return sum;
}

constexpr auto dot_f32 = dot_float<float, as_f32>;
constexpr auto dot_f16 = dot_float<uint16_t, fp16_to_fp32>;
constexpr auto dot_bf16 = dot_float<uint16_t, bf16_to_fp32>;

// q4_K and q5_K: eight sub-blocks of 32 with a 6-bit scale and min; q5_K's
// values take a fifth bit from qh (bit j of qh[l] for sub-block j).
template <class Block, bool FiveBits>
float dot_q45_k(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const Block*>(w);
    const auto* b = static_cast<const block_q8_k*>(x);
    float sum = 0.0f;
    for (int64_t k = 0; k < n / qk_k; ++k) {
        int sumi = 0;   // sum_j sc_j * sum(q * x) over sub-block j
        int summ = 0;   // sum_j m_j * sum(x) over sub-block j
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            q4_k_scale_min(j, a[k].scales, sc, m);
            const uint8_t* q = a[k].qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            int s = 0;
            for (int l = 0; l < 32; ++l) {
                int v = (q[l] >> shift) & 0x0f;
                if constexpr (FiveBits) v |= ((a[k].qh[l] >> j) & 1) << 4;
                s += v * b[k].qs[32 * j + l];
            }
            sumi += sc * s;
            summ += m * (b[k].bsums[2 * j] + b[k].bsums[2 * j + 1]);
        }
        sum += b[k].d * (fp16_to_fp32(a[k].d) * static_cast<float>(sumi) -
                         fp16_to_fp32(a[k].dmin) * static_cast<float>(summ));
    }
    return sum;
}

constexpr auto dot_q4_k = dot_q45_k<block_q4_k, false>;
constexpr auto dot_q5_k = dot_q45_k<block_q5_k, true>;

float dot_q6_k(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const block_q6_k*>(w);
    const auto* b = static_cast<const block_q8_k*>(x);
    float sum = 0.0f;
    for (int64_t k = 0; k < n / qk_k; ++k) {
        int8_t q[qk_k];  // the 6-bit values minus 32, in element order
        for (int half = 0; half < 2; ++half) {
            const uint8_t* ql = a[k].ql + 64 * half;
            const uint8_t* qh = a[k].qh + 32 * half;
            int8_t* out = q + 128 * half;
            for (int l = 0; l < 32; ++l) {
                out[l] = static_cast<int8_t>(((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32);
                out[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32);
                out[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                out[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
        }
        int sumi = 0;
        for (int s = 0; s < 16; ++s) {
            int p = 0;
            for (int l = 0; l < 16; ++l) p += q[16 * s + l] * b[k].qs[16 * s + l];
            sumi += a[k].scales[s] * p;
        }
        sum += fp16_to_fp32(a[k].d) * b[k].d * static_cast<float>(sumi);
    }
    return sum;
}

// q4_1 / q5_1 against q8_1: (d_w * d_x) * sum(q * x) + m * s per block,
// the min term from the activations' block sums. Quants(block, j) is the
// unsigned value of element j.
template <class Block, int (*Quant)(const Block&, int)>
float dot_with_min(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const Block*>(w);
    const auto* b = static_cast<const block_q8_1*>(x);
    float sum = 0.0f;
    for (int64_t k = 0; k < n / qk_32; ++k) {
        int sumi = 0;
        for (int j = 0; j < qk_32; ++j) sumi += Quant(a[k], j) * b[k].qs[j];
        sum += fp16_to_fp32(a[k].d) * fp16_to_fp32(b[k].d) * static_cast<float>(sumi) +
               fp16_to_fp32(a[k].m) * fp16_to_fp32(b[k].s);
    }
    return sum;
}

// Small-block types against q8_0: d_w * d_x * sum(q * x) per block, q the
// signed value of element j.
template <class Block, int (*Quant)(const Block&, int)>
float dot_by_q8_0(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const Block*>(w);
    const auto* b = static_cast<const block_q8_0*>(x);
    float sum = 0.0f;
    for (int64_t k = 0; k < n / qk_32; ++k) {
        int sumi = 0;
        for (int j = 0; j < qk_32; ++j) sumi += Quant(a[k], j) * b[k].qs[j];
        sum += fp16_to_fp32(a[k].d) * fp16_to_fp32(b[k].d) * static_cast<float>(sumi);
    }
    return sum;
}

// Element j's nibble of a q4_0-ordered block (low nibbles 0..15, high 16..31).
inline int nibble_of(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4; }
inline int high_bit_of(const uint8_t* qh, int j) { return ((qh[j / 8] >> (j % 8)) & 1) << 4; }

int quant_q8_0(const block_q8_0& b, int j) { return b.qs[j]; }
int quant_q4_0(const block_q4_0& b, int j) { return nibble_of(b.qs, j) - 8; }
int quant_q4_1(const block_q4_1& b, int j) { return nibble_of(b.qs, j); }
int quant_q5_1(const block_q5_1& b, int j) { return nibble_of(b.qs, j) | high_bit_of(b.qh, j); }
int quant_q5_0(const block_q5_0& b, int j) { return (nibble_of(b.qs, j) | high_bit_of(b.qh, j)) - 16; }
int quant_iq4_nl(const block_iq4_nl& b, int j) { return iq4_nl_values[nibble_of(b.qs, j)]; }

constexpr auto dot_q4_1 = dot_with_min<block_q4_1, quant_q4_1>;
constexpr auto dot_q5_1 = dot_with_min<block_q5_1, quant_q5_1>;
constexpr auto dot_q8_0 = dot_by_q8_0<block_q8_0, quant_q8_0>;
constexpr auto dot_q4_0 = dot_by_q8_0<block_q4_0, quant_q4_0>;
constexpr auto dot_q5_0 = dot_by_q8_0<block_q5_0, quant_q5_0>;
constexpr auto dot_iq4_nl = dot_by_q8_0<block_iq4_nl, quant_iq4_nl>;

// q3_K and q2_K share their element order: element 128h + 32g + l holds
// bits 2g..2g+1 of qs[32h + l].
inline int low2_of(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

float dot_q3_k(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const block_q3_k*>(w);
    const auto* b = static_cast<const block_q8_k*>(x);
    float sum = 0.0f;
    for (int64_t k = 0; k < n / qk_k; ++k) {
        int8_t scales[16];
        q3_k_scales(a[k].scales, scales);
        int sumi = 0;
        for (int s = 0; s < 16; ++s) {
            int p = 0;
            for (int e = 16 * s; e < 16 * s + 16; ++e) {
                const int hbit = (a[k].hmask[e % 32] >> (4 * (e / 128) + (e % 128) / 32)) & 1;
                p += (low2_of(a[k].qs, e) - (hbit != 0 ? 0 : 4)) * b[k].qs[e];
            }
            sumi += scales[s] * p;
        }
        sum += fp16_to_fp32(a[k].d) * b[k].d * static_cast<float>(sumi);
    }
    return sum;
}

float dot_q2_k(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const block_q2_k*>(w);
    const auto* b = static_cast<const block_q8_k*>(x);
    float sum = 0.0f;
    for (int64_t k = 0; k < n / qk_k; ++k) {
        int sumi = 0, summ = 0;
        for (int s = 0; s < 16; ++s) {
            int p = 0;
            for (int e = 16 * s; e < 16 * s + 16; ++e) p += low2_of(a[k].qs, e) * b[k].qs[e];
            sumi += (a[k].scales[s] & 0x0f) * p;
            summ += (a[k].scales[s] >> 4) * b[k].bsums[s];
        }
        sum += b[k].d * (fp16_to_fp32(a[k].d) * static_cast<float>(sumi) -
                         fp16_to_fp32(a[k].dmin) * static_cast<float>(summ));
    }
    return sum;
}

float dot_iq4_xs(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const block_iq4_xs*>(w);
    const auto* b = static_cast<const block_q8_k*>(x);
    float sum = 0.0f;
    for (int64_t k = 0; k < n / qk_k; ++k) {
        int sumi = 0;
        for (int s = 0; s < 8; ++s) {
            int p = 0;
            for (int j = 0; j < 32; ++j) p += iq4_nl_values[nibble_of(a[k].qs + 16 * s, j)] * b[k].qs[32 * s + j];
            sumi += (iq4_xs_scale(a[k], s) - 32) * p;
        }
        sum += fp16_to_fp32(a[k].d) * b[k].d * static_cast<float>(sumi);
    }
    return sum;
}

void quantize_q8_0(const float* x, void* dst, int64_t n) { quantize_row_q8_0(x, static_cast<block_q8_0*>(dst), n); }
void quantize_q8_1(const float* x, void* dst, int64_t n) { quantize_row_q8_1(x, static_cast<block_q8_1*>(dst), n); }
void quantize_q8_k(const float* x, void* dst, int64_t n) { quantize_row_q8_k(x, static_cast<block_q8_k*>(dst), n); }

// The reference matmul: one dot product per (token, row).
template <float (*Dot)(int64_t, const void*, const void*)>
void gemm_by_dot(const detail::gemm_args& a, int64_t r0, int64_t r1) {
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        const std::byte* x = a.x + t * a.x_row_bytes;
        for (int64_t r = r0; r < r1; ++r) a.y[t * a.ldy + r] = Dot(a.n_cols, a.w + r * a.w_row_bytes, x);
    }
}

constexpr detail::type_kernels scalar_f32{gemm_by_dot<dot_f32>, dot_f32, nullptr};
constexpr detail::type_kernels scalar_f16{gemm_by_dot<dot_f16>, dot_f16, nullptr};
constexpr detail::type_kernels scalar_bf16{gemm_by_dot<dot_bf16>, dot_bf16, nullptr};
constexpr detail::type_kernels scalar_q8_0{gemm_by_dot<dot_q8_0>, dot_q8_0, quantize_q8_0};
constexpr detail::type_kernels scalar_q4_0{gemm_by_dot<dot_q4_0>, dot_q4_0, quantize_q8_0};
constexpr detail::type_kernels scalar_q4_k{gemm_by_dot<dot_q4_k>, dot_q4_k, quantize_q8_k};
constexpr detail::type_kernels scalar_q6_k{gemm_by_dot<dot_q6_k>, dot_q6_k, quantize_q8_k};
constexpr detail::type_kernels scalar_q4_1{gemm_by_dot<dot_q4_1>, dot_q4_1, quantize_q8_1};
constexpr detail::type_kernels scalar_q5_0{gemm_by_dot<dot_q5_0>, dot_q5_0, quantize_q8_0};
constexpr detail::type_kernels scalar_q5_1{gemm_by_dot<dot_q5_1>, dot_q5_1, quantize_q8_1};
constexpr detail::type_kernels scalar_iq4_nl{gemm_by_dot<dot_iq4_nl>, dot_iq4_nl, quantize_q8_0};
constexpr detail::type_kernels scalar_q2_k{gemm_by_dot<dot_q2_k>, dot_q2_k, quantize_q8_k};
constexpr detail::type_kernels scalar_q3_k{gemm_by_dot<dot_q3_k>, dot_q3_k, quantize_q8_k};
constexpr detail::type_kernels scalar_q5_k{gemm_by_dot<dot_q5_k>, dot_q5_k, quantize_q8_k};
constexpr detail::type_kernels scalar_iq4_xs{gemm_by_dot<dot_iq4_xs>, dot_iq4_xs, quantize_q8_k};

const detail::type_kernels& kernels_of(kernel_isa isa, tensor_type weight) {
    const detail::type_kernels* k = isa >= kernel_isa::amx        ? detail::amx_kernels(weight)
                                    : isa >= kernel_isa::avx512 ? detail::avx512_kernels(weight)
                                    : isa >= kernel_isa::avx_vnni ? detail::avx_vnni_kernels(weight)
                                    : isa == kernel_isa::avx2   ? detail::avx2_kernels(weight)
                                                                : detail::scalar_kernels(weight);
    TACHYON_ASSERT(k != nullptr, "no kernels for this tensor type");
    return *k;
}

// Rows are handed out in multiples of the AVX2 row tile.
constexpr int64_t rows_per_unit = 16;
// Rows per group of weight_panels (rows_by_broadcast's tile in kernels_avx512.cpp).
constexpr int64_t panel_rows = 32;

}  // namespace

namespace detail {
const type_kernels* scalar_kernels(tensor_type weight) {
    switch (weight) {
        case tensor_type::f32: return &scalar_f32;
        case tensor_type::f16: return &scalar_f16;
        case tensor_type::bf16: return &scalar_bf16;
        case tensor_type::q8_0: return &scalar_q8_0;
        case tensor_type::q4_0: return &scalar_q4_0;
        case tensor_type::q4_k: return &scalar_q4_k;
        case tensor_type::q6_k: return &scalar_q6_k;
        case tensor_type::q4_1: return &scalar_q4_1;
        case tensor_type::q5_0: return &scalar_q5_0;
        case tensor_type::q5_1: return &scalar_q5_1;
        case tensor_type::iq4_nl: return &scalar_iq4_nl;
        case tensor_type::q2_k: return &scalar_q2_k;
        case tensor_type::q3_k: return &scalar_q3_k;
        case tensor_type::q5_k: return &scalar_q5_k;
        case tensor_type::iq4_xs: return &scalar_iq4_xs;
        default: return nullptr;
    }
}
}  // namespace detail

std::string_view to_string(kernel_isa isa) {
    switch (isa) {
        case kernel_isa::avx2: return "avx2";
        case kernel_isa::avx_vnni: return "avx_vnni";
        case kernel_isa::avx512: return "avx512";
        case kernel_isa::amx: return "amx";
        default: return "scalar";
    }
}

bool cpu_has_avx2() {
    __builtin_cpu_init();
    // F16C from CPUID leaf 1, ECX bit 29: clang 14's __builtin_cpu_supports
    // does not know the feature (the fuzz targets build with clang).
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const bool f16c = (ecx >> 29) & 1;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
}

bool cpu_has_avx_vnni() {
    if (!cpu_has_avx2()) return false;
    // CPUID leaf 7, sub-leaf 1, EAX bit 4 (GCC 12's __builtin_cpu_supports
    // does not know the feature).
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
    return (eax >> 4) & 1;
}

bool cpu_has_avx512() {
    if (!cpu_has_avx2()) return false;
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512dq") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512vnni"))
        return false;
    // XCR0: the OS saves opmask and zmm state (bits 5-7) besides xmm/ymm (1-2).
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xE6u) == 0xE6u;
}

bool detail::cpu_is_amd() {
    static const bool amd = [] {
        // TACHYON_VENDOR=amd|intel takes the other vendor's routes (tests
        // check both on either machine; benchmarks compare them).
        if (const char* v = std::getenv("TACHYON_VENDOR")) {
            if (std::string_view(v) == "amd") return true;
            if (std::string_view(v) == "intel") return false;
        }
        __builtin_cpu_init();
        return __builtin_cpu_is("amd") != 0;
    }();
    return amd;
}

bool detail::cpu_is_amd_zen4() {
    static const bool zen4 = [] {
        if (!cpu_is_amd()) return false;
        if (const char* v = std::getenv("TACHYON_VENDOR"); v != nullptr && std::string_view(v) == "amd") return true;
        // CPUID leaf 1: the family is the base field (EAX bits 8-11) plus the
        // extended one (bits 20-27) where the base reads 15.
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return true;
        unsigned family = (eax >> 8) & 0xfu;
        if (family == 0xfu) family += (eax >> 20) & 0xffu;
        return family <= 25;
    }();
    return zen4;
}

bool cpu_has_amx() {
    static const bool granted = [] {
        if (!cpu_has_avx512()) return false;
        // CPUID leaf 7, sub-leaf 0, EDX bits 24 (AMX-TILE) and 25 (AMX-INT8).
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
        if (((edx >> 24) & 3u) != 3u) return false;
        return detail::os_grants_amx();
    }();
    return granted;
}

bool cpu_has_amx_bf16() {
    static const bool has = [] {
        if (!cpu_has_amx()) return false;
        // CPUID leaf 7: sub-leaf 0 EDX bit 22 (AMX-BF16), sub-leaf 1 EAX bit 5 (AVX512-BF16).
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || ((edx >> 22) & 1u) == 0) return false;
        if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) || ((eax >> 5) & 1u) == 0) return false;
        return true;
    }();
    return has;
}

kernel_isa select_isa(const char* env_value, bool has_avx2, bool has_avx_vnni, bool has_avx512, bool has_amx) {
    const std::string_view env = env_value != nullptr ? env_value : "";
    if (env == "scalar") return kernel_isa::scalar;
    if (!has_avx2) return kernel_isa::scalar;
    if (env == "avx2") return kernel_isa::avx2;
    // AVX-512 (with its own VNNI) does not need AVX-VNNI: Zen 4, Ice Lake
    // and Cascade Lake have the one and not the other.
    if (env == "avx_vnni" || !has_avx512) return has_avx_vnni ? kernel_isa::avx_vnni : kernel_isa::avx2;
    if (env == "avx512" || !has_amx) return kernel_isa::avx512;
    return kernel_isa::amx;
}

std::vector<kernel_isa> available_isas() {
    std::vector<kernel_isa> v{kernel_isa::scalar};
    if (cpu_has_avx2()) v.push_back(kernel_isa::avx2);
    if (cpu_has_avx_vnni()) v.push_back(kernel_isa::avx_vnni);
    if (cpu_has_avx512()) v.push_back(kernel_isa::avx512);
    if (cpu_has_amx()) v.push_back(kernel_isa::amx);
    return v;
}

kernel_isa default_isa() {
    static const kernel_isa isa =
        select_isa(std::getenv("TACHYON_KERNELS"), cpu_has_avx2(), cpu_has_avx_vnni(), cpu_has_avx512(), cpu_has_amx());
    return isa;
}

bool has_kernels(tensor_type weight) { return detail::scalar_kernels(weight) != nullptr; }

tensor_type activation_type(tensor_type weight) {
    switch (weight) {
        case tensor_type::q8_0:
        case tensor_type::q4_0:
        case tensor_type::q5_0:
        case tensor_type::iq4_nl: return tensor_type::q8_0;
        case tensor_type::q4_1:
        case tensor_type::q5_1: return tensor_type::q8_1;
        case tensor_type::q2_k:
        case tensor_type::q3_k:
        case tensor_type::q4_k:
        case tensor_type::q5_k:
        case tensor_type::q6_k:
        case tensor_type::iq4_xs: return tensor_type::q8_k;
        default: return tensor_type::f32;
    }
}

void quantize_activations(kernel_isa isa, tensor_type weight, const float* x, void* dst, int64_t n) {
    const auto& k = kernels_of(isa, weight);
    if (k.quantize != nullptr) {
        k.quantize(x, dst, n);
    } else {
        std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
    }
}

float vec_dot(kernel_isa isa, tensor_type weight, int64_t n, const void* w, const void* x) {
    return kernels_of(isa, weight).dot(n, w, x);
}

kernel_context::kernel_context(int n_threads, kernel_isa isa) : isa_(isa), n_threads_(std::max(1, n_threads)) {}

kernel_context::~kernel_context() = default;

std::byte* kernel_context::scratch(size_t n_bytes) {
    if (scratch_.size() < n_bytes) scratch_.resize(n_bytes);
    return scratch_.data();
}

void kernel_context::run_parallel(int64_t n, int64_t grain, void (*body)(const void*, int64_t, int64_t),
                                  const void* fn) {
    // One contiguous part per thread, so each thread streams its own rows of
    // the weights.
    if (!team_) team_ = std::make_unique<thread_team>(n_threads_);
    team_->run(n, grain, body, fn);
}

namespace {

// 1, or all of ctx's threads, for a split of n_rows whose weight bytes times
// tokens are `work`.
int split_threads(const kernel_context& ctx, int64_t n_rows, double work) {
    if (ctx.n_threads() <= 1 || n_rows <= rows_per_unit) return 1;
    return work < static_cast<double>(min_parallel_matmul_bytes) ? 1 : ctx.n_threads();
}

}  // namespace

int matmul_threads(const kernel_context& ctx, tensor_type weight, int64_t n_rows, int64_t n_cols, int64_t n_tokens) {
    const double work = static_cast<double>(row_size(weight, n_cols)) * static_cast<double>(n_rows) * static_cast<double>(n_tokens);
    return split_threads(ctx, n_rows, work);
}

int default_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

namespace {

bool is_float(tensor_type t) { return t == tensor_type::f32 || t == tensor_type::f16 || t == tensor_type::bf16; }

// The AMX level multiplies the packed types' batches of this many tokens
// and more on AMX-BF16 tiles (kernels_amx_quant.cpp), dequantized from the
// panels (kernels_packed_amx.cpp): a call pays for the dequantization of
// every weight, and then little for each tile of 16 tokens. q4_K, q5_K and
// iq4_xs batches of 8 to 16 tokens (packed_int8_min_tokens..) take the AMX-INT8
// tiles on the panels, whose tile unit spends about as long on a sub-block
// of 2 tokens as of 8 (two sub-blocks a product up to 8 tokens); the other
// batches the packed kernels. Sapphire Rapids, us, q4_K packed / AMX-INT8
// / AMX-BF16: 2816 x 1024 from 64 MiB (in L3), 1 thread: 4 tokens 78-86 /
// 86 / -, 6 103 / 103 / -, 8 121-125 / 110-114 / -, 10 161 / 142 / -;
// 8960 x 1536 from 512 MiB, 2 threads: 6 tokens 404 / 443 / -, 8 443-458
// / 456 / -, 12 606 / 528-568 / -, 16 694 / 638 / 981, 20 849 / - / 1203,
// 24 947 / - / 1034, 28 1063 / - / 1218, 32 1213 / - / 1046; q5_K 16 824 /
// 758 / -, 24 1106 / - / 1218; q6_K (no AMX-INT8 tiles: its sub-blocks of
// 16 would need twice the tile products) 24 1173 / - / 1035, 32 1490 / - /
// 1128.
constexpr int64_t amx_k_min_tokens = 32, amx_q6_k_min_tokens = 16;

// q4_0, q4_1, iq4_nl, q5_0, q5_1 and q8_0: packed from the AVX2 level to
// AVX-512 (not at AMX; q8_0 at AVX-512 only, rows16_level), where the
// one-token row kernels spend more instructions on a block than the memory
// takes to bring it (Zen 5, one thread, 2816 x 1024 in L2: q4_0 31 GB/s,
// iq4_nl 26, q5_0 24, so 13-18 from DRAM against 38 of plain reads;
// packed, q4_0 80 in L2; at TACHYON_KERNELS=avx2 the 220M Q4_0 model
// decoded 103-113 tokens/s in place against 135-146 for llama.cpp's AVX2
// build; from 256 MiB, in place -> packed: q4_1 16.5 -> 22.5, AVX2 18.4 ->
// 32.0; q5_1 14.2 -> 23.3, AVX2 13.2 -> 19.8), and read from the panels at
// every batch size there (the AMX level keeps its INT8 tiles on the
// weights in place).
bool packs_rows16(tensor_type weight) {
    return weight == tensor_type::q4_0 || weight == tensor_type::q4_1 || weight == tensor_type::iq4_nl || weight == tensor_type::q5_0 ||
           weight == tensor_type::q5_1 || weight == tensor_type::q8_0;
}

// The levels that read a type's packed16 panels: AVX-512 all six; AVX2
// and AVX-VNNI all but q8_0, whose rows in place decoded faster there (the
// 220M Q8_0 model at TACHYON_KERNELS=avx2 on Zen 5, one thread: 95-115
// tokens/s in place against 79-80 packed, though `bench matmul` read both
// at 22-25 GB/s).
bool rows16_level(tensor_type weight, kernel_isa isa) {
    if (isa == kernel_isa::avx512) return true;
    return isa >= kernel_isa::avx2 && isa < kernel_isa::avx512 && weight != tensor_type::q8_0;
}

// Below AVX-512 the packed16 kernel (2 tokens a pass) takes batches of up
// to 11 tokens; larger ones take the 8-row prompt tiles, which lay their
// rows out from the panels. Measured on Zen 5 at TACHYON_KERNELS=avx2, one
// thread, `tachyon bench matmul --type T --rows 2816 --cols 1024 --mib 64
// --tokens 3,4,8,16 --no-bandwidth`, us, packed kernel / tiles from the
// panels: q4_0 96 / 151, 148 / 181, 270 / 278, 511 / 476; q5_0 138 / 205,
// 195 / 235, 340 / 362, 652 / 606; iq4_nl 170 / 215, -, 430 / 444, 821 /
// 753.
constexpr int64_t rows16_min_tokens_tiles = 12;

bool on_rows16_tiles(tensor_type weight, kernel_isa isa, int64_t n_tokens) {
    return packs_rows16(weight) && rows16_level(weight, isa) && isa < kernel_isa::avx512 && n_tokens >= rows16_min_tokens_tiles;
}

// q2_K and q3_K have no AMX tiles: every batch of them reads the panels
// through the AVX-512 packed kernels there.
bool on_amx_tiles(tensor_type weight, kernel_isa isa, int64_t n_tokens) {
    if (weight == tensor_type::q2_k || weight == tensor_type::q3_k) return false;
    return packs_quantized(weight) && isa == kernel_isa::amx &&
           n_tokens >= (weight == tensor_type::q6_k ? amx_q6_k_min_tokens : amx_k_min_tokens);
}

bool on_amx_int8_packed(tensor_type weight, kernel_isa isa, int64_t n_tokens) {
    return isa == kernel_isa::amx && n_tokens >= detail::packed_int8_min_tokens && n_tokens <= detail::packed_int8_max_tokens &&
           detail::packed_gemm_amx_int8(weight) != nullptr;
}

// The AVX2 level's prompt tiles (kernels_avx2_kquants.cpp, their rows laid
// out from the panels) multiply q4_K and q6_K batches of this many tokens
// and more faster than the packed kernels, whose 16 registers hold 4 tokens
// a pass (Zen 4, one thread, 8960 x 1536, us packed / tile: q4_K 16 tokens
// 2131 / 2482, 32 4335 / 4359, 64 9013 / 8302, 256 36618 / 30058; q6_K 1
// token 553 / 617, 8 1869 / 2126, 16 3685 / 3542); q5_K from 12 (Sapphire
// Rapids at TACHYON_KERNELS=avx2, same shape, packed / tile: 8 tokens 1838
// / 2145, 12 about 2700 / 2514). iq4_xs has no such tile: its packed
// kernels win at every size (packed / in place: 16 tokens 4365 / 5203, 64
// 16434 / 22807, 256 80751 / 85350).
constexpr int64_t avx2_q4_k_min_tokens_tiles = 32;
constexpr int64_t avx2_q5_k_min_tokens_tiles = 12;
constexpr int64_t avx2_q6_k_min_tokens_tiles = 16;

bool on_avx2_tiles(tensor_type weight, kernel_isa isa, int64_t n_tokens) {
    if (isa != kernel_isa::avx2) return false;
    if (weight == tensor_type::q4_k) return n_tokens >= avx2_q4_k_min_tokens_tiles;
    if (weight == tensor_type::q5_k) return n_tokens >= avx2_q5_k_min_tokens_tiles;
    if (weight == tensor_type::q6_k) return n_tokens >= avx2_q6_k_min_tokens_tiles;
    return false;
}

// True when the packed kernels (kernels_k_packed.cpp) multiply this batch;
// the AMX and AVX2 tiles that take the others read the panels too.
bool reads_packed(tensor_type weight, kernel_isa isa, int64_t n_tokens) {
    if (packs_rows16(weight)) return rows16_level(weight, isa) && !on_rows16_tiles(weight, isa, n_tokens);
    return packs_quantized(weight) && isa >= kernel_isa::avx2 && !on_amx_tiles(weight, isa, n_tokens) &&
           !on_avx2_tiles(weight, isa, n_tokens);
}

}  // namespace

bool packs_quantized(tensor_type weight) {
    if (packs_rows16(weight)) return rows16_level(weight, default_isa());
    return weight == tensor_type::q2_k || weight == tensor_type::q3_k || weight == tensor_type::q4_k || weight == tensor_type::q5_k ||
           weight == tensor_type::q6_k || weight == tensor_type::iq4_xs;
}

bool panels_pay(tensor_type weight, int64_t n_rows, int64_t n_cols) {
    if (packs_rows16(weight)) return n_rows > 0 && n_cols > 0 && n_cols % qk_32 == 0 && packs_quantized(weight);
    if (packs_quantized(weight)) return n_rows > 0 && n_cols > 0 && n_cols % qk_k == 0 && default_isa() >= kernel_isa::avx2;
    return is_float(weight) && n_rows >= panel_rows && n_cols > 0 && n_cols % 16 == 0 && default_isa() >= kernel_isa::avx2;
}

// Float weights are packed in place of the file's pages from the AVX2
// level to AVX-512 (not at AMX), whole groups of 32 rows (the rows past the last group
// would be read in place): the panels stream from huge pages as one run of
// 32 rows, where rows in place cross a 4 KiB page every 2048 f16 values.
bool panels_replace_weights(tensor_type weight, int64_t n_rows, int64_t n_cols) {
    if (!panels_pay(weight, n_rows, n_cols)) return false;
    if (packs_quantized(weight)) return default_isa() >= kernel_isa::avx2;
    return is_float(weight) && default_isa() >= kernel_isa::avx2 && default_isa() <= kernel_isa::avx512 && n_rows % panel_rows == 0;
}

void weight_panels::release::operator()(std::byte* p) const noexcept { std::free(p); }

// Storage for `bytes` of panels: 64-byte aligned, and where it spans a huge
// page at least, 2 MiB aligned with MADV_HUGEPAGE asked before any page is
// touched (Linux; elsewhere, or when refused, small pages) for its whole
// huge pages only: the tail stays in small pages, as a huge one there would
// hold up to 2 MiB that nothing uses (one 3 MiB matrix took 4).
weight_panels allocate_weight_panels(size_t bytes) {
    constexpr size_t huge = size_t{2} << 20;
    const size_t align = bytes >= huge ? huge : 64;
    const size_t rounded = (std::max<size_t>(bytes, 1) + align - 1) / align * align;
    auto* mem = static_cast<std::byte*>(std::aligned_alloc(align, rounded));
    if (mem == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (align == huge) ::madvise(mem, bytes / huge * huge, MADV_HUGEPAGE);
#endif
    weight_panels p;
    p.storage.reset(mem);
    p.bytes = bytes;  // what the kernels read, not the padding
    p.data = mem;
    return p;
}

size_t panels_bytes(tensor_type weight, int64_t n_rows, int64_t n_cols) {
    if (!panels_pay(weight, n_rows, n_cols)) return 0;
    if (packs_rows16(weight)) return detail::packed16_bytes(weight, n_rows, n_cols);
    switch (weight) {
        case tensor_type::q2_k:
        case tensor_type::q3_k: return detail::q23_k_packed_bytes(weight, n_rows, n_cols);
        case tensor_type::q4_k: return detail::q4_k_packed_bytes(n_rows, n_cols);
        case tensor_type::q5_k: return detail::q5_k_packed_bytes(n_rows, n_cols);
        case tensor_type::q6_k: return detail::q6_k_packed_bytes(n_rows, n_cols);
        case tensor_type::iq4_xs: return detail::iq4_xs_packed_bytes(n_rows, n_cols);
        default: break;
    }
    const size_t elem = weight == tensor_type::f32 ? 4 : 2;
    return static_cast<size_t>((n_rows / panel_rows) * n_cols * panel_rows) * elem;
}

void pack_panels_into(tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols, std::byte* dst) {
    TACHYON_ASSERT(panels_pay(weight, n_rows, n_cols), "pack_panels_into: no panels for this weight");
    TACHYON_ASSERT(reinterpret_cast<uintptr_t>(dst) % 64 == 0, "pack_panels_into: destination not 64-byte aligned");
    if (packs_rows16(weight)) {
        detail::pack_rows16(weight, w, n_rows, n_cols, dst);
        return;
    }
    switch (weight) {
        case tensor_type::q2_k:
        case tensor_type::q3_k: detail::pack_q23_k(weight, w, n_rows, n_cols, dst); return;
        case tensor_type::q4_k: detail::pack_q4_k(w, n_rows, n_cols, dst); return;
        case tensor_type::q5_k: detail::pack_q5_k(w, n_rows, n_cols, dst); return;
        case tensor_type::q6_k: detail::pack_q6_k(w, n_rows, n_cols, dst); return;
        case tensor_type::iq4_xs: detail::pack_iq4_xs(w, n_rows, n_cols, dst); return;
        default: break;
    }
    const int64_t n_groups = n_rows / panel_rows;
    // dst[g][k][i] = W[g * 32 + i][k]
    const auto pack = [&](auto* out, const auto* in) {
        for (int64_t g = 0; g < n_groups; ++g)
            for (int64_t i = 0; i < panel_rows; ++i) {
                const auto* row = in + (g * panel_rows + i) * n_cols;
                auto* group = out + g * n_cols * panel_rows + i;
                for (int64_t k = 0; k < n_cols; ++k) group[k * panel_rows] = row[k];
            }
    };
    if (weight == tensor_type::f32) pack(reinterpret_cast<float*>(dst), static_cast<const float*>(w));
    else pack(reinterpret_cast<uint16_t*>(dst), static_cast<const uint16_t*>(w));
}

weight_panels pack_panels(tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols) {
    const size_t bytes = panels_bytes(weight, n_rows, n_cols);
    if (bytes == 0) return {};
    weight_panels p = allocate_weight_panels(bytes);
    pack_panels_into(weight, w, n_rows, n_cols, p.storage.get());
    return p;
}

namespace {

// One operand of a matmul, ready for its kernel but for its activations.
struct prepared_matmul {
    detail::gemm_args a{};
    detail::gemm_fn gemm = nullptr;
    detail::quantize_fn quantize = nullptr;  // nullptr: the kernel reads x as f32
    int64_t unit = rows_per_unit;            // rows a thread takes at a time
    int64_t n_units = 0;
    int64_t n_rows = 0;
    int64_t unit_lines = 1;                  // cache lines of weights a unit reads (at least 1)
};

prepared_matmul prepare_matmul(const kernel_context& ctx, const matmul_operand& op, int64_t n_cols, int64_t n_tokens) {
    TACHYON_ASSERT(has_kernels(op.weight), "matmul: no kernels for this weight type");
    TACHYON_ASSERT(op.n_rows >= 0 && n_cols >= 0 && n_tokens >= 0, "matmul: negative shape");
    TACHYON_ASSERT(n_cols % traits_of(op.weight).block_size == 0, "matmul: row length not a multiple of the block size");
    const auto& k = kernels_of(ctx.isa(), op.weight);
    prepared_matmul p;
    p.n_rows = op.n_rows;
    p.quantize = k.quantize;
    p.a.w = static_cast<const std::byte*>(op.w);
    p.a.w_row_bytes = row_size(op.weight, n_cols);
    p.a.n_cols = n_cols;
    p.a.n_tokens = n_tokens;
    p.a.y = op.y;
    p.a.ldy = op.n_rows;
    p.a.x_row_bytes = k.quantize == nullptr ? static_cast<size_t>(n_cols) * sizeof(float) : row_size(activation_type(op.weight), n_cols);
    p.gemm = k.gemm;
    if (op.panels != nullptr && reads_packed(op.weight, ctx.isa(), n_tokens)) {
        // groups of 16 rows, as rows_per_unit
        p.a.panels = op.panels;
        p.gemm = on_amx_int8_packed(op.weight, ctx.isa(), n_tokens) ? detail::packed_gemm_amx_int8(op.weight)
                                                                    : detail::packed_gemm(op.weight, ctx.isa() >= kernel_isa::avx512);
    } else if (op.panels != nullptr && (on_amx_tiles(op.weight, ctx.isa(), n_tokens) || on_avx2_tiles(op.weight, ctx.isa(), n_tokens) ||
                                        on_rows16_tiles(op.weight, ctx.isa(), n_tokens))) {
        p.a.panels = op.panels;  // the AMX-BF16 tiles dequantize the panels, the AVX2 tiles lay their rows out from them
    } else if (op.panels != nullptr && is_float(op.weight) && ctx.isa() >= kernel_isa::avx2) {
        // With panels, threads take whole groups of 32 rows: a row's sum then
        // comes from the same kernel however many threads run.
        p.a.panels = op.panels;
        p.unit = panel_rows;
    }
    p.n_units = (op.n_rows + p.unit - 1) / p.unit;
    p.unit_lines = std::max<int64_t>(1, p.unit * static_cast<int64_t>(p.a.w_row_bytes) / 64);
    return p;
}

}  // namespace

void matmul_same_input(kernel_context& ctx, std::span<const matmul_operand> ops, int64_t n_cols, const float* x,
                       int64_t n_tokens) {
    TACHYON_ASSERT(ops.size() <= max_same_input_matrices, "matmul_same_input: too many operands");
    if (n_tokens == 0) return;
    std::array<prepared_matmul, max_same_input_matrices> prepared;
    const size_t n_ops = ops.size();
    // the first operand whose kernels convert the activations as operand i's do
    const auto first_alike = [&](size_t i) {
        size_t j = 0;
        while (prepared[j].quantize != prepared[i].quantize) ++j;
        return j;
    };
    int64_t total_rows = 0, total_lines = 0;
    double work = 0;
    size_t x_bytes = 0;
    for (size_t i = 0; i < n_ops; ++i) {
        prepared_matmul& p = prepared[i];
        p = prepare_matmul(ctx, ops[i], n_cols, n_tokens);
        total_rows += p.n_rows;
        total_lines += p.n_units * p.unit_lines;
        work += static_cast<double>(p.a.w_row_bytes) * static_cast<double>(p.n_rows) * static_cast<double>(n_tokens);
        // operands whose kernels quantize alike share the converted activations
        if (p.quantize != nullptr && first_alike(i) == i) x_bytes += p.a.x_row_bytes * static_cast<size_t>(n_tokens);
    }
    if (total_rows == 0) return;
    std::byte* scratch = x_bytes > 0 ? ctx.scratch(x_bytes) : nullptr;  // [form][n_tokens, x_row_bytes]
    for (size_t i = 0; i < n_ops; ++i) {
        prepared_matmul& p = prepared[i];
        if (p.quantize == nullptr) {
            p.a.x = reinterpret_cast<const std::byte*>(x);
            continue;
        }
        if (const size_t j = first_alike(i); j < i) {
            p.a.x = prepared[j].a.x;
            continue;
        }
        for (int64_t t = 0; t < n_tokens; ++t) p.quantize(x + t * n_cols, scratch + t * p.a.x_row_bytes, n_cols);
        p.a.x = scratch;
        scratch += p.a.x_row_bytes * static_cast<size_t>(n_tokens);
    }
    // The range split over the threads counts the weights' cache lines, the
    // operands' one after the other, so that each thread reads as many bytes
    // where the types differ (a q6_K v beside a q4_K q and k); a unit goes to
    // the part that holds its first line. Against parts of as many rows,
    // four alternating rounds of `tachyon bench decode -t 2 -p 0 -n 64`
    // (Zen 5), mean t/s: the 220M llama shape Q4_K_M 371 -> 391, the
    // Qwen2.5-0.5B shape Q4_K_M (q5_0 and q8_0 fallbacks) 124 -> 130.
    const int64_t grain = split_threads(ctx, total_rows, work) > 1 ? 1 : total_lines;
    ctx.parallel_for(total_lines, grain, [&](int64_t l0, int64_t l1) {
        int64_t first = 0;  // the operand's first line in the range
        for (size_t i = 0; i < n_ops && first < l1; ++i) {
            const prepared_matmul& p = prepared[i];
            const auto units_before = [&](int64_t line) {
                return line <= first ? 0 : std::min(p.n_units, (line - first + p.unit_lines - 1) / p.unit_lines);
            };
            const int64_t u0 = units_before(l0), u1 = units_before(l1);
            if (u0 < u1) p.gemm(p.a, u0 * p.unit, std::min(p.n_rows, u1 * p.unit));
            first += p.n_units * p.unit_lines;
        }
    });
}

void matmul(kernel_context& ctx, tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols,
            const float* x, int64_t n_tokens, float* y, const std::byte* panels) {
    const matmul_operand op{weight, w, n_rows, y, panels};
    matmul_same_input(ctx, std::span(&op, 1), n_cols, x, n_tokens);
}

}  // namespace tachyon
