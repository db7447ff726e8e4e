// AVX2/FMA/F16C kernels. Every function carries its own target attribute so
// the file builds for plain x86-64; kernels.cpp only calls in here after
// checking the CPU (default_isa).
//
// matmul works on tiles of RM weight rows x RN tokens: each weight block is
// loaded (and unpacked) once per tile and multiplied with RN activation rows,
// each activation block once and multiplied with RM weight rows. For one
// token (decode) RM = 4 independent rows keep four accumulator chains in
// flight while the weights stream from memory; the horizontal sum happens
// once per (row, token), never per block.
#include <immintrin.h>

#include <cstring>

#include "inference/gguf/fp16.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/gguf/quant.h"

#define TACHYON_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TACHYON_TILE_TARGET TACHYON_AVX2
#define TACHYON_TILE_VNNI 0
#include "inference/kernels/kernels_q8_tile.h"

namespace tachyon::detail {
namespace {

TACHYON_AVX2 inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

TACHYON_AVX2 inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// ---- f32 / f16 / bf16 weights against f32 activations ------------------------

struct load_f32 {
    using elem = float;
    TACHYON_AVX2 static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
    static float one(const float* p) { return *p; }
};

struct load_f16 {
    using elem = uint16_t;
    TACHYON_AVX2 static __m256 load8(const uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static float one(const uint16_t* p) { return fp16_to_fp32(*p); }
};

struct load_bf16 {
    using elem = uint16_t;
    TACHYON_AVX2 static __m256 load8(const uint16_t* p) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
    static float one(const uint16_t* p) { return bf16_to_fp32(*p); }
};

template <class L>
struct float_tile {
    static constexpr int rn = 2;

    template <int RM, int RN>
    TACHYON_AVX2 static void run(const gemm_args& a, int64_t r, int64_t t) {
        using elem = typename L::elem;
        const elem* w[RM];
        const float* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const elem*>(a.w + (r + i) * a.w_row_bytes);
        for (int j = 0; j < RN; ++j) x[j] = reinterpret_cast<const float*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[RM][RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
        const int64_t n = a.n_cols;
        const bool stream = a.n_tokens <= max_stream_tokens;
        int64_t k = 0;
        for (; k + 8 <= n; k += 8) {
            __m256 xv[RN];
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) xv[j] = _mm256_loadu_ps(x[j] + k);
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                if (stream && ((k * static_cast<int64_t>(sizeof(elem))) & 63) == 0) prefetch_l2(w[i] + k, float_prefetch_bytes);
                const __m256 wv = L::load8(w[i] + k);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
            }
        }
        for (int i = 0; i < RM; ++i) {
            for (int j = 0; j < RN; ++j) {
                float s = hsum(acc[i][j]);
                for (int64_t kk = k; kk < n; ++kk) s += L::one(w[i] + kk) * x[j][kk];
                a.y[(t + j) * a.ldy + r + i] = s;
            }
        }
    }
};

// ---- q4_K weights against q8_K activations -----------------------------------

// The 8 scales (bytes 0..7) and 8 mins (bytes 8..15) of a q4_K block, the
// 12-byte 6-bit packing undone with 32-bit word operations.
inline void q4_k_unpack_scales(const uint8_t* packed, uint8_t out[16]) {
    constexpr uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
    uint32_t u[4];
    std::memcpy(u, packed, 12);
    u[3] = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);  // mins 4..7
    const uint32_t mins_lo = u[1] & low6;                        // mins 0..3
    u[1] = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);          // scales 4..7
    u[2] = mins_lo;
    u[0] &= low6;                                                // scales 0..3
    std::memcpy(out, u, 16);
}

struct q4_k_tile {
    static constexpr int rn = 4;

    template <int RM, int RN>
    TACHYON_AVX2 static void run(const gemm_args& a, int64_t r, int64_t t) {
        const block_q4_k* w[RM];
        const block_q8_k* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const block_q4_k*>(a.w + (r + i) * a.w_row_bytes);
        for (int j = 0; j < RN; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[RM][RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
        const __m256i low4 = _mm256_set1_epi8(0x0f);
        const int64_t nb = a.n_cols / qk_k;
        for (int64_t b = 0; b < nb; ++b) {
            // Sums of x over each 32-element sub-block, from the 16-element bsums.
            __m128i xsum[RN];
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) {
                const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums));
                const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums + 8));
                xsum[j] = _mm_hadd_epi16(lo, hi);
            }
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                const block_q4_k& wb = w[i][b];
                alignas(16) uint8_t sm[16];
                q4_k_unpack_scales(wb.scales, sm);
                const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
                __m256i sumi[RN];
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) sumi[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * c));
                    const __m256i lo = _mm256_and_si256(raw, low4);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
                    const __m256i s_lo = _mm256_set1_epi16(sm[2 * c]);
                    const __m256i s_hi = _mm256_set1_epi16(sm[2 * c + 1]);
#pragma GCC unroll 16
                    for (int j = 0; j < RN; ++j) {
                        const int8_t* xq = x[j][b].qs + 64 * c;
                        // nibbles are unsigned: maddubs takes them as they are.
                        const __m256i p_lo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
                        const __m256i p_hi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32)));
                        sumi[j] = _mm256_add_epi32(sumi[j], _mm256_add_epi32(_mm256_madd_epi16(p_lo, s_lo),
                                                                             _mm256_madd_epi16(p_hi, s_hi)));
                    }
                }
                const float d = half_to_float(wb.d);
                const float dmin = half_to_float(wb.dmin);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const __m256i summ = _mm256_zextsi128_si256(_mm_madd_epi16(mins, xsum[j]));
                    acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[j]), _mm256_set1_ps(d * x[j][b].d), acc[i][j]);
                    acc[i][j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_set1_ps(dmin * x[j][b].d), acc[i][j]);
                }
            }
        }
        for (int i = 0; i < RM; ++i)
            for (int j = 0; j < RN; ++j) a.y[(t + j) * a.ldy + r + i] = hsum(acc[i][j]);
    }
};

// ---- q6_K weights against q8_K activations -----------------------------------

struct q6_k_tile {
    static constexpr int rn = 4;

    template <int RM, int RN>
    TACHYON_AVX2 static void run(const gemm_args& a, int64_t r, int64_t t) {
        const block_q6_k* w[RM];
        const block_q8_k* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const block_q6_k*>(a.w + (r + i) * a.w_row_bytes);
        for (int j = 0; j < RN; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[RM][RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
        const __m256i low4 = _mm256_set1_epi8(0x0f);
        const __m256i low2 = _mm256_set1_epi8(0x03);
        const int64_t nb = a.n_cols / qk_k;
        for (int64_t b = 0; b < nb; ++b) {
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                const block_q6_k& wb = w[i][b];
                const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
                // The quants are stored as q + 32 (0..63, unsigned, as
                // maddubs wants); subtract 32 * sum_s scale_s * sum(x in s) once.
                __m256i sumi[RN];
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].bsums));
                    sumi[j] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(scales, bs), 5));
                }
#pragma GCC unroll 2
                for (int h = 0; h < 2; ++h) {
                    const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.ql + 64 * h));
                    const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.ql + 64 * h + 32));
                    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh + 32 * h));
                    __m256i q[4];
                    q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4));
                    q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4));
                    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4));
                    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4));
#pragma GCC unroll 4
                    for (int g = 0; g < 4; ++g) {
                        // Sub-blocks of 16: one scale per 128-bit lane.
                        const int s = 8 * h + 2 * g;
                        const __m256i sv = _mm256_set_m128i(_mm_set1_epi16(wb.scales[s + 1]), _mm_set1_epi16(wb.scales[s]));
#pragma GCC unroll 16
                        for (int j = 0; j < RN; ++j) {
                            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs + 128 * h + 32 * g));
                            sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(_mm256_maddubs_epi16(q[g], xv), sv));
                        }
                    }
                }
                const float d = half_to_float(wb.d);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j)
                    acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[j]), _mm256_set1_ps(d * x[j][b].d), acc[i][j]);
            }
        }
        for (int i = 0; i < RM; ++i)
            for (int j = 0; j < RN; ++j) a.y[(t + j) * a.ldy + r + i] = hsum(acc[i][j]);
    }
};

// ---- activation quantizers ----------------------------------------------------

// 32 floats -> 32 int8 (round to nearest even) scaled by `id`.
TACHYON_AVX2 inline __m256i quantize32(const float* x, __m256 id) {
    const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), id));
    const __m256i q1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), id));
    const __m256i q2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), id));
    const __m256i q3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), id));
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
    // The packs work per 128-bit lane; restore element order.
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

TACHYON_AVX2 inline float max_abs(const float* x, int n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < n; k += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TACHYON_AVX2 void quantize_q8_0(const float* x, void* dst, int64_t n) {
    auto* out = static_cast<block_q8_0*>(dst);
    for (int64_t b = 0; b < n / qk_32; ++b) {
        const float* xb = x + b * qk_32;
        const float d = max_abs(xb, qk_32) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = fp32_to_fp16(d);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), quantize32(xb, _mm256_set1_ps(id)));
    }
}

TACHYON_AVX2 void quantize_q8_k(const float* x, void* dst, int64_t n) {
    auto* out = static_cast<block_q8_k*>(dst);
    const __m256i ones8 = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < n / qk_k; ++b) {
        const float* xb = x + b * qk_k;
        const float d = max_abs(xb, qk_k) / 127.0f;
        const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
        out[b].d = d;
        for (int c = 0; c < qk_k / 32; ++c) {
            const __m256i q = quantize32(xb + 32 * c, id);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs + 32 * c), q);
            // Pair sums, then sums of 16 per 128-bit lane.
            const __m256i p = _mm256_maddubs_epi16(ones8, q);
            const __m256i s = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
            out[b].bsums[2 * c] = static_cast<int16_t>(hsum_i32(_mm256_blend_epi32(s, _mm256_setzero_si256(), 0xf0)));
            out[b].bsums[2 * c + 1] = static_cast<int16_t>(hsum_i32(_mm256_blend_epi32(s, _mm256_setzero_si256(), 0x0f)));
        }
    }
}

constexpr type_kernels avx2_f32{gemm<float_tile<load_f32>>, dot<float_tile<load_f32>>, nullptr};
constexpr type_kernels avx2_f16{gemm<float_tile<load_f16>>, dot<float_tile<load_f16>>, nullptr};
constexpr type_kernels avx2_bf16{gemm<float_tile<load_bf16>>, dot<float_tile<load_bf16>>, nullptr};
constexpr type_kernels avx2_q8_0{gemm<q8_tile<unpack_q8_0>>, dot<q8_tile<unpack_q8_0>>, quantize_q8_0};
constexpr type_kernels avx2_q4_0{gemm<q8_tile<unpack_q4_0>>, dot<q8_tile<unpack_q4_0>>, quantize_q8_0};
constexpr type_kernels avx2_q4_k{gemm<q4_k_tile>, dot<q4_k_tile>, quantize_q8_k};
constexpr type_kernels avx2_q6_k{gemm<q6_k_tile>, dot<q6_k_tile>, quantize_q8_k};

}  // namespace

const type_kernels* avx2_kernels(tensor_type weight) {
    switch (weight) {
        case tensor_type::f32: return &avx2_f32;
        case tensor_type::f16: return &avx2_f16;
        case tensor_type::bf16: return &avx2_bf16;
        case tensor_type::q8_0: return &avx2_q8_0;
        case tensor_type::q4_0: return &avx2_q4_0;
        case tensor_type::q4_k: return &avx2_q4_k;
        case tensor_type::q6_k: return &avx2_q6_k;
        default: return nullptr;
    }
}

}  // namespace tachyon::detail
