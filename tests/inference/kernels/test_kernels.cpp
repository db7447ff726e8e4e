#include "inference/kernels/kernels.h"

#include <doctest/doctest.h>

#include <tuple>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "inference/gguf/fp16.h"
#include "inference/gguf/quant.h"
#include "tests/inference/kernels/kernel_test_data.h"

using namespace tachyon;

using kernel_test::random_floats;

namespace {

const tensor_type all_types[] = {tensor_type::f32, tensor_type::f16, tensor_type::bf16, tensor_type::q8_0,
                                 tensor_type::q4_0, tensor_type::q4_k, tensor_type::q6_k};

bool is_float_type(tensor_type t) {
    return t == tensor_type::f32 || t == tensor_type::f16 || t == tensor_type::bf16;
}

// n_rows rows of `type` with arbitrary quants (every bit pattern, including
// q8_0's -128) and finite, modest block scales.
std::vector<std::byte> random_weights(tensor_type type, int64_t n_rows, int64_t n_cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const size_t rb = row_size(type, n_cols);
    std::vector<std::byte> w(rb * static_cast<size_t>(n_rows));
    if (is_float_type(type)) {
        const auto f = random_floats(static_cast<size_t>(n_rows * n_cols), seed);
        for (int64_t r = 0; r < n_rows; ++r) quantize_row(type, f.data() + r * n_cols, w.data() + r * rb, n_cols);
        return w;
    }
    for (auto& b : w) b = static_cast<std::byte>(rng() & 0xff);
    std::uniform_real_distribution<float> scale(0.001f, 0.05f);
    const auto traits = traits_of(type);
    const int64_t n_blocks = n_rows * (n_cols / traits.block_size);
    for (int64_t i = 0; i < n_blocks; ++i) {
        std::byte* block = w.data() + i * traits.type_size;
        const uint16_t d = fp32_to_fp16(scale(rng));
        const uint16_t dmin = fp32_to_fp16(scale(rng));
        switch (type) {
            case tensor_type::q4_1:
            case tensor_type::q5_1:
                std::memcpy(block, &d, 2);
                std::memcpy(block + 2, &dmin, 2);
                break;
            case tensor_type::q8_0:
            case tensor_type::q4_0:
            case tensor_type::q5_0:
            case tensor_type::iq4_nl: std::memcpy(block, &d, 2); break;
            case tensor_type::q4_k:
            case tensor_type::q5_k:
                std::memcpy(block, &d, 2);
                std::memcpy(block + 2, &dmin, 2);
                break;
            case tensor_type::q2_k:
                std::memcpy(block + offsetof(block_q2_k, d), &d, 2);
                std::memcpy(block + offsetof(block_q2_k, dmin), &dmin, 2);
                break;
            case tensor_type::q3_k: std::memcpy(block + offsetof(block_q3_k, d), &d, 2); break;
            case tensor_type::q6_k: std::memcpy(block + offsetof(block_q6_k, d), &d, 2); break;
            case tensor_type::iq4_xs: std::memcpy(block + offsetof(block_iq4_xs, d), &d, 2); break;
            default: break;
        }
    }
    return w;
}

int64_t cols_for(tensor_type type, int64_t n_float) {
    return is_float_type(type) ? n_float : 2 * qk_k;  // two super-blocks, 16 q8_0 blocks
}

}  // namespace

// The kernel sets this CPU can run besides the reference.
std::vector<kernel_isa> simd_isas() {
    std::vector<kernel_isa> v = available_isas();
    v.erase(v.begin());  // the reference
    return v;
}

TEST_CASE("TACHYON_KERNELS=scalar selects the reference kernels") {
    CHECK(select_isa("scalar", true) == kernel_isa::scalar);
    CHECK(select_isa("scalar", false) == kernel_isa::scalar);
    CHECK(select_isa(nullptr, true) == kernel_isa::avx2);
    CHECK(select_isa("", true) == kernel_isa::avx2);
    CHECK(select_isa("avx2", true) == kernel_isa::avx2);
    CHECK(select_isa("avx2", false) == kernel_isa::scalar);  // never run instructions the CPU lacks
    CHECK(select_isa(nullptr, false) == kernel_isa::scalar);
    // The process-wide choice follows the environment this test runs in.
    // AVX-VNNI when the CPU has it, unless "avx2" asks for plain AVX2.
    CHECK(select_isa(nullptr, true, true) == kernel_isa::avx_vnni);
    CHECK(select_isa("auto", true, true) == kernel_isa::avx_vnni);
    CHECK(select_isa("avx2", true, true) == kernel_isa::avx2);
    CHECK(select_isa("scalar", true, true) == kernel_isa::scalar);
    CHECK(select_isa(nullptr, false, true) == kernel_isa::scalar);
    // AVX-512 on top of AVX-VNNI, unless "avx_vnni" or "avx2" caps it
    CHECK(select_isa(nullptr, true, true, true) == kernel_isa::avx512);
    CHECK(select_isa("avx_vnni", true, true, true) == kernel_isa::avx_vnni);
    CHECK(select_isa("avx2", true, true, true) == kernel_isa::avx2);
    // AVX-512 without AVX-VNNI (Zen 4, Ice Lake): the AVX-512 set, whose
    // 256-bit dpbusd is EVEX-encoded; "avx_vnni" caps it at plain AVX2
    CHECK(select_isa(nullptr, true, false, true) == kernel_isa::avx512);
    CHECK(select_isa("avx_vnni", true, false, true) == kernel_isa::avx2);
    CHECK(select_isa(nullptr, true, false, true, true) == kernel_isa::amx);
    CHECK(select_isa(nullptr, true, true, true, true) == kernel_isa::amx);
    CHECK(select_isa("avx512", true, true, true, true) == kernel_isa::avx512);
    CHECK(select_isa("amx", true, true, true, false) == kernel_isa::avx512);  // granted by the OS or not at all
    CHECK(select_isa(nullptr, true, true, false, true) == kernel_isa::avx_vnni);
    CHECK(default_isa() ==
          select_isa(std::getenv("TACHYON_KERNELS"), cpu_has_avx2(), cpu_has_avx_vnni(), cpu_has_avx512(), cpu_has_amx()));
    CHECK(to_string(kernel_isa::scalar) == "scalar");
    CHECK(to_string(kernel_isa::avx_vnni) == "avx_vnni");
    CHECK(to_string(kernel_isa::avx512) == "avx512");
    CHECK(to_string(kernel_isa::amx) == "amx");
    CHECK(kernel_context(2, kernel_isa::scalar).isa() == kernel_isa::scalar);
}

TEST_CASE("activation formats per weight type") {
    CHECK(activation_type(tensor_type::f16) == tensor_type::f32);
    CHECK(activation_type(tensor_type::q4_0) == tensor_type::q8_0);
    CHECK(activation_type(tensor_type::q8_0) == tensor_type::q8_0);
    CHECK(activation_type(tensor_type::q4_k) == tensor_type::q8_k);
    CHECK(activation_type(tensor_type::q6_k) == tensor_type::q8_k);
    CHECK(has_kernels(tensor_type::q6_k));
    CHECK(has_kernels(tensor_type::q5_0));
    CHECK_FALSE(has_kernels(tensor_type::q8_k));  // an activation format only
}

TEST_CASE("AVX2 and AVX-VNNI dot products match the scalar reference") {
    if (!cpu_has_avx2()) {
        MESSAGE("skipped: CPU without AVX2/FMA/F16C");
        return;
    }
    for (kernel_isa isa : simd_isas())
    for (tensor_type type : all_types) {
        // Float types: lengths that are not multiples of 8 or 16 exercise the tails.
        const std::vector<int64_t> lengths =
            is_float_type(type) ? std::vector<int64_t>{1, 7, 8, 13, 100, 1001} : std::vector<int64_t>{256, 768, 2048};
        for (int64_t n : lengths) {
            CAPTURE(to_string(isa));
            CAPTURE(to_string(type));
            CAPTURE(n);
            const auto w = random_weights(type, 1, n, static_cast<uint32_t>(n));
            const auto xf = random_floats(static_cast<size_t>(n), 99);
            std::vector<std::byte> xq(row_size(activation_type(type), n));
            quantize_activations(kernel_isa::scalar, type, xf.data(), xq.data(), n);
            const float ref = vec_dot(kernel_isa::scalar, type, n, w.data(), xq.data());
            const float got = vec_dot(isa, type, n, w.data(), xq.data());
            // Integer block sums are exact; only the float summation order
            // differs: allow 1e-5 of the sum of |terms|.
            std::vector<float> wf(static_cast<size_t>(n)), xd(static_cast<size_t>(n));
            dequantize_row(type, w.data(), wf.data(), n);
            dequantize_row(activation_type(type) == tensor_type::q8_k ? tensor_type::f32 : activation_type(type),
                           activation_type(type) == tensor_type::q8_k ? static_cast<const void*>(xf.data()) : xq.data(),
                           xd.data(), n);
            double mag = 0.0;
            for (int64_t k = 0; k < n; ++k) mag += std::fabs(static_cast<double>(wf[k]) * xd[k]);
            CHECK(std::fabs(got - ref) <= 1e-5 * mag + 1e-6);
        }
    }
}

TEST_CASE("AVX2 activation quantizers agree with the reference quantizers") {
    if (!cpu_has_avx2()) {
        MESSAGE("skipped: CPU without AVX2/FMA/F16C");
        return;
    }
    const int64_t n = 512;
    auto x = random_floats(n, 5);
    for (int j = 32; j < 64; ++j) x[j] = 0.0f;
    for (tensor_type weight : {tensor_type::q8_0, tensor_type::q4_k}) {
        CAPTURE(to_string(weight));
        std::vector<std::byte> a(row_size(activation_type(weight), n)), b(a.size());
        quantize_activations(kernel_isa::scalar, weight, x.data(), a.data(), n);
        quantize_activations(kernel_isa::avx2, weight, x.data(), b.data(), n);
        if (weight == tensor_type::q8_0) {
            const auto* qa = reinterpret_cast<const block_q8_0*>(a.data());
            const auto* qb = reinterpret_cast<const block_q8_0*>(b.data());
            for (int64_t k = 0; k < n / 32; ++k) {
                CHECK(qa[k].d == qb[k].d);
                for (int j = 0; j < 32; ++j) CHECK(std::abs(qa[k].qs[j] - qb[k].qs[j]) <= 1);  // ties may round apart
            }
        } else {
            const auto* qa = reinterpret_cast<const block_q8_k*>(a.data());
            const auto* qb = reinterpret_cast<const block_q8_k*>(b.data());
            for (int64_t k = 0; k < n / 256; ++k) {
                CHECK(qa[k].d == qb[k].d);
                for (int j = 0; j < 256; ++j) CHECK(std::abs(qa[k].qs[j] - qb[k].qs[j]) <= 1);
                for (int g = 0; g < 16; ++g) {
                    int s = 0;
                    for (int j = 0; j < 16; ++j) s += qb[k].qs[16 * g + j];
                    CHECK(qb[k].bsums[g] == s);
                }
            }
        }
    }
}

TEST_CASE("matmul matches a double-precision reference for every type, batch size and kernel set") {
    std::vector<kernel_isa> isas{kernel_isa::scalar};
    for (kernel_isa isa : simd_isas()) isas.push_back(isa);
    // 45 rows and 37 tokens: not a multiple of the 4-row tile, nor of the
    // 32 rows x 8 tokens of the many-token float path (which 37 and 64 tokens
    // take); the 16-row k-quant groups end in 13 rows, past the first 8
    const int64_t n_rows = 45;
    for (kernel_isa isa : isas) {
        kernel_context ctx(1, isa);
        for (tensor_type type : all_types) {
            // float rows of 100 end in a tail, of 128 fill the 16-wide vectors exactly
            for (int64_t n_cols : {cols_for(type, 100), cols_for(type, 128)}) {
                const auto w = random_weights(type, n_rows, n_cols, 7);
                std::vector<float> wf(static_cast<size_t>(n_rows * n_cols));  // [n_rows, n_cols]
                for (int64_t r = 0; r < n_rows; ++r)
                    dequantize_row(type, w.data() + r * row_size(type, n_cols), wf.data() + r * n_cols, n_cols);
                for (int64_t n_tokens : {1, 3, 8, 17, 37, 64}) {
                    CAPTURE(to_string(isa));
                    CAPTURE(to_string(type));
                    CAPTURE(n_tokens);
                    const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 11);  // [n_tokens, n_cols]
                    std::vector<float> y(static_cast<size_t>(n_tokens * n_rows), -1.0f);      // [n_tokens, n_rows]
                    matmul(ctx, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y.data());
                    const int block = activation_type(type) == tensor_type::q8_k ? 256 : 32;
                    int n_bad = 0;
                    for (int64_t t = 0; t < n_tokens; ++t) {
                        for (int64_t r = 0; r < n_rows; ++r) {
                            double ref = 0.0, tol = 0.0;
                            for (int64_t k = 0; k < n_cols; ++k) {
                                const double wk = wf[r * n_cols + k], xk = x[t * n_cols + k];
                                ref += wk * xk;
                                tol += std::fabs(wk * xk) * 1e-5;
                            }
                            if (!is_float_type(type)) {
                                // Activations are rounded to steps of max|x_block| / 127:
                                // each term errs by at most |w| * step / 2 (+ the fp16 scale).
                                for (int64_t k0 = 0; k0 < n_cols; k0 += block) {
                                    double amax = 0.0, wsum = 0.0;
                                    for (int64_t k = k0; k < k0 + block; ++k) {
                                        amax = std::max(amax, std::fabs(static_cast<double>(x[t * n_cols + k])));
                                        wsum += std::fabs(static_cast<double>(wf[r * n_cols + k]));
                                    }
                                    tol += wsum * (amax / 127.0) * 0.51 + wsum * amax * 1e-3;
                                }
                            }
                            if (std::fabs(y[t * n_rows + r] - ref) > tol) ++n_bad;
                        }
                    }
                    CHECK(n_bad == 0);
                }
            }
        }
    }
}

// Every SIMD kernel set with each row length.
std::vector<std::pair<kernel_isa, int64_t>> isa_and_cols() {
    std::vector<std::pair<kernel_isa, int64_t>> v;
    for (kernel_isa isa : simd_isas())
        for (int64_t n_cols : {13 * qk_32, 14 * qk_32, 16 * qk_32, 45 * qk_32, 47 * qk_32}) v.emplace_back(isa, n_cols);
    return v;
}

TEST_CASE("on AMX, q8_0 and q4_0 prompts of 96 tokens and more and k-quant prompts of 16 and more on bf16 tiles stay within bf16 rounding of the float product") {
    if (!cpu_has_amx()) {
        MESSAGE("skipped: this CPU has no AMX");
        return;
    }
    // Those prompts dequantize the rows to bf16 (kernels_amx.cpp): each
    // product (a weight times d_x q_x) is rounded to 8 significant bits in
    // each factor, so the result is within 2^-8 of the sum of the products'
    // magnitudes of the scalar kernel's, which sums the same q8_0 / q8_K
    // activations exactly; partial row groups and token tiles on every edge.
    const int64_t n_rows = 53;
    kernel_context amx(1, kernel_isa::amx), ref(1, kernel_isa::scalar);
    const std::pair<tensor_type, std::vector<int64_t>> cases[] = {
        {tensor_type::q8_0, {13 * qk_32, 45 * qk_32}}, {tensor_type::q4_0, {13 * qk_32, 45 * qk_32}},
        {tensor_type::q4_k, {2 * qk_k, 7 * qk_k}}, {tensor_type::q6_k, {2 * qk_k, 7 * qk_k}}};
    for (const auto& c : cases) {
        const tensor_type type = c.first;
        const bool k_quant = type == tensor_type::q4_k || type == tensor_type::q6_k;
        for (int64_t n_cols : c.second) {
            const auto w = random_weights(type, n_rows, n_cols, 31);
            std::vector<float> wf(static_cast<size_t>(n_rows * n_cols));
            for (int64_t r = 0; r < n_rows; ++r)
                dequantize_row(type, w.data() + r * row_size(type, n_cols), wf.data() + r * n_cols, n_cols);
            for (int64_t n_tokens : k_quant ? std::vector<int64_t>{16, 49} : std::vector<int64_t>{96, 113, 130}) {
                CAPTURE(to_string(type));
                CAPTURE(n_tokens);
                CAPTURE(n_cols);
                const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 37);
                std::vector<float> y(static_cast<size_t>(n_tokens * n_rows)), y_ref(y.size());
                matmul(amx, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y.data());
                matmul(ref, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y_ref.data());
                int n_bad = 0, n_inexact = 0;
                for (int64_t t = 0; t < n_tokens; ++t) {
                    for (int64_t r = 0; r < n_rows; ++r) {
                        double mag = 0.0;
                        for (int64_t k = 0; k < n_cols; ++k) mag += std::fabs(static_cast<double>(wf[r * n_cols + k]) * x[t * n_cols + k]);
                        const double err = std::fabs(y[t * n_rows + r] - y_ref[t * n_rows + r]);
                        n_bad += err > mag / 256 + 1e-6 ? 1 : 0;
                        n_inexact += err > 1e-5 * mag ? 1 : 0;
                    }
                }
                CHECK(n_bad == 0);
                // The rows did go through bf16 (an integer path would be exact to 1e-5).
                CHECK(n_inexact > 0);
            }
        }
    }
}

TEST_CASE("q8_0 and q4_0 matmul tiles match the scalar matmul on every edge of the tile") {
    // Rows and tokens that leave partial 4 x 2 tiles (and 16 x 16 AMX tiles),
    // numbers of blocks that leave 0 to 3 past the q4_0 decode kernel's
    // groups of 4, and rows longer than the decode kernel's batch of 32
    // blocks.
    const int64_t n_rows = 37;
    for (const auto& params : isa_and_cols()) {
        // copies, not structured bindings: CAPTURE takes them into a lambda
        const auto isa = std::get<0>(params); const auto n_cols = std::get<1>(params);
        kernel_context simd(1, isa), ref(1, kernel_isa::scalar);
        for (tensor_type type : {tensor_type::q8_0, tensor_type::q4_0}) {
            const auto w = random_weights(type, n_rows, n_cols, 21);
            std::vector<float> wf(static_cast<size_t>(n_rows * n_cols));
            for (int64_t r = 0; r < n_rows; ++r)
                dequantize_row(type, w.data() + r * row_size(type, n_cols), wf.data() + r * n_cols, n_cols);
            for (int64_t n_tokens : {1, 3, 17, 35, 64}) {
                CAPTURE(to_string(isa));
                CAPTURE(to_string(type));
                CAPTURE(n_tokens);
                CAPTURE(n_cols);
                const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 23);
                std::vector<float> y(static_cast<size_t>(n_tokens * n_rows)), y_ref(y.size());
                matmul(simd, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y.data());
                matmul(ref, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y_ref.data());
                // Both sides quantize the activations to the same q8_0 blocks
                // (same scale; a quant may differ by one step where x * 127 /
                // max|x| falls on a tie, which random normals never hit) and
                // sum the same integers: only the float order of the block
                // terms differs, 1e-5 of the sum of their magnitudes.
                int n_bad = 0;
                for (int64_t t = 0; t < n_tokens; ++t) {
                    for (int64_t r = 0; r < n_rows; ++r) {
                        double mag = 0.0;
                        for (int64_t k = 0; k < n_cols; ++k) mag += std::fabs(static_cast<double>(wf[r * n_cols + k]) * x[t * n_cols + k]);
                        if (std::fabs(y[t * n_rows + r] - y_ref[t * n_rows + r]) > 1e-5 * mag + 1e-6) ++n_bad;
                    }
                }
                CHECK(n_bad == 0);
            }
        }
    }
}

TEST_CASE("matmul on two threads gives the same numbers as on one") {
    // large enough to split: at least min_parallel_matmul_bytes of work
    const int64_t n_rows = 1201, n_tokens = 9;
    for (tensor_type type : all_types) {
        CAPTURE(to_string(type));
        const int64_t n_cols = cols_for(type, 512);
        const auto w = random_weights(type, n_rows, n_cols, 3);
        const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 4);
        std::vector<float> y1(static_cast<size_t>(n_tokens * n_rows)), y2(y1.size());
        kernel_context one(1), two(2);
        REQUIRE(matmul_threads(two, type, n_rows, n_cols, n_tokens) == 2);
        matmul(one, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y1.data());
        matmul(two, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y2.data());
        CHECK(y1 == y2);  // rows are independent: the split cannot change a sum
    }
}

TEST_CASE("a matmul splits over the threads only from min_parallel_matmul_bytes of weights times tokens on") {
    kernel_context one(1), two(2);
    // the shipped 1M model's feed-forward (f16, 352 x 128, 88 KiB) and a 40M
    // model's attention in q4_0 (512 x 512, 144 KiB) decode on the calling thread
    CHECK(matmul_threads(two, tensor_type::f16, 352, 128, 1) == 1);
    CHECK(matmul_threads(two, tensor_type::q4_0, 512, 512, 1) == 1);
    // 256 KiB of weights, or 128 KiB read for two tokens, split: the 1M
    // model's output projection (f16, 2048 x 128, 512 KiB) and a 220M model's
    // k projection in q4_0 (512 x 1024, 288 KiB)
    CHECK(matmul_threads(two, tensor_type::f16, 1024, 128, 1) == 2);
    CHECK(matmul_threads(two, tensor_type::f16, 512, 128, 1) == 1);
    CHECK(matmul_threads(two, tensor_type::f16, 512, 128, 2) == 2);
    CHECK(matmul_threads(two, tensor_type::f16, 2048, 128, 1) == 2);
    CHECK(matmul_threads(two, tensor_type::q4_0, 512, 1024, 1) == 2);
    CHECK(matmul_threads(one, tensor_type::f32, 4096, 4096, 64) == 1);
    // fewer rows than one unit of the split stay on one thread whatever the size
    CHECK(matmul_threads(two, tensor_type::f32, 16, 1 << 16, 8) == 1);
}

TEST_CASE("matmul_same_input gives each matrix bit for bit what matmul gives it, on one and two threads") {
    // a layer's q, k and v as Q4_K_M files store them (v in q6_K, or a q8_0
    // fallback: activations converted two ways), 32-element blocks of two
    // types that convert them alike, and f16 panels of 32 rows; row counts
    // that leave part of a split unit over
    struct operand_shape {
        tensor_type type;
        int64_t n_rows;
    };
    const std::vector<std::vector<operand_shape>> groups = {
        {{tensor_type::q4_k, 1201}, {tensor_type::q4_k, 301}, {tensor_type::q6_k, 299}},
        {{tensor_type::q4_k, 1201}, {tensor_type::q8_0, 301}, {tensor_type::q6_k, 299}},
        {{tensor_type::q4_0, 1201}, {tensor_type::q8_0, 317}, {tensor_type::q4_0, 250}},
        {{tensor_type::f16, 1216}, {tensor_type::f16, 200}},
    };
    for (kernel_isa isa : available_isas()) {
        CAPTURE(to_string(isa));
        for (const auto& group : groups) {
            CAPTURE(to_string(group.front().type));
            const int64_t n_cols = 512;
            std::vector<std::vector<std::byte>> weights;
            std::vector<weight_panels> panels;
            for (const operand_shape& o : group) {
                weights.push_back(random_weights(o.type, o.n_rows, n_cols, static_cast<uint32_t>(7 + weights.size())));
                panels.push_back(pack_panels(o.type, weights.back().data(), o.n_rows, n_cols));
            }
            for (int64_t n_tokens : {1, 2, 9, 40}) {
                CAPTURE(n_tokens);
                const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 11);
                for (int threads : {1, 2}) {
                    CAPTURE(threads);
                    kernel_context ctx(threads, isa);
                    std::vector<std::vector<float>> alone(group.size()), together(group.size());
                    std::vector<matmul_operand> ops;
                    for (size_t i = 0; i < group.size(); ++i) {
                        alone[i].assign(static_cast<size_t>(n_tokens * group[i].n_rows), 0.0f);
                        together[i].assign(alone[i].size(), -1.0f);
                        matmul(ctx, group[i].type, weights[i].data(), group[i].n_rows, n_cols, x.data(), n_tokens, alone[i].data(),
                               panels[i].data);
                        ops.push_back({group[i].type, weights[i].data(), group[i].n_rows, together[i].data(), panels[i].data});
                    }
                    matmul_same_input(ctx, ops, n_cols, x.data(), n_tokens);
                    for (size_t i = 0; i < group.size(); ++i) {
                        CAPTURE(i);
                        CHECK(together[i] == alone[i]);
                    }
                }
            }
        }
    }
}

TEST_CASE("the default thread count is one per hardware thread (each matmul and attention decides whether to split)") {
    CHECK(default_threads() == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST_CASE("matmul with weights packed as panels matches the double-precision reference on one and two threads") {
    // 230 rows: seven whole groups of 32 and a tail of 6 without a panel. One token on one
    // thread reads four groups at once (AVX2: three, twice), then the rest one at a time.
    const int64_t n_rows = 230, n_cols = 96;
    for (tensor_type type : {tensor_type::f32, tensor_type::f16, tensor_type::bf16}) {
        const auto w = random_weights(type, n_rows, n_cols, 31);
        const weight_panels panels = pack_panels(type, w.data(), n_rows, n_cols);
        if (default_isa() < kernel_isa::avx2) {
            CHECK(panels.data == nullptr);  // no kernels that use them (none on the CPU, or TACHYON_KERNELS=scalar)
            continue;
        }
        REQUIRE(panels.data != nullptr);
        CHECK(panels.size_bytes() >= static_cast<size_t>(7 * 32 * n_cols) * (type == tensor_type::f32 ? 4 : 2));
        std::vector<float> wf(static_cast<size_t>(n_rows * n_cols));
        for (int64_t r = 0; r < n_rows; ++r)
            dequantize_row(type, w.data() + r * row_size(type, n_cols), wf.data() + r * n_cols, n_cols);
        for (kernel_isa isa : available_isas()) {
        if (isa < kernel_isa::avx2) continue;
        kernel_context one(1, isa), two(2, isa);
        // AVX-512: 1-15 read the panels as they are, 16 and more convert them
        // first, 8 tokens at a time with a tail; AVX2: 1-11 read them as they
        // are, 2 tokens a pass, 12 and more (f16 and the others alike) copy
        // 16 rows of them at a time into columns
        for (int64_t n_tokens : {1, 2, 3, 8, 11, 12, 15, 16, 17, 37}) {
            CAPTURE(to_string(type));
            CAPTURE(to_string(isa));
            CAPTURE(n_tokens);
            const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 41);
            std::vector<float> y1(static_cast<size_t>(n_tokens * n_rows), -1.0f), y2(y1.size(), -2.0f);
            matmul(one, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y1.data(), panels.data);
            matmul(two, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y2.data(), panels.data);
            int n_bad = 0;
            for (int64_t t = 0; t < n_tokens; ++t) {
                for (int64_t r = 0; r < n_rows; ++r) {
                    double ref = 0.0, tol = 0.0;
                    for (int64_t k = 0; k < n_cols; ++k) {
                        ref += static_cast<double>(wf[r * n_cols + k]) * x[t * n_cols + k];
                        tol += std::fabs(static_cast<double>(wf[r * n_cols + k]) * x[t * n_cols + k]) * 1e-5;
                    }
                    if (std::fabs(y1[t * n_rows + r] - ref) > tol) ++n_bad;
                }
            }
            CHECK(n_bad == 0);
            CHECK(y1 == y2);  // threads take whole groups of 32 rows
        }
        }
    }
}

TEST_CASE("matmul of k-quant and iq4_xs weights packed in groups of 16 rows matches the weights in place at every level and batch size") {
    // 37 rows: two whole groups and a tail of 5 padded with zero rows; 3 blocks a row.
    const int64_t n_rows = 37, n_cols = 768;
    // with the bytes of one block of 256 columns of 16 rows
    for (const auto& packing : {std::pair{tensor_type::q2_k, size_t{1344}}, std::pair{tensor_type::q3_k, size_t{1856}},
                                std::pair{tensor_type::q4_k, size_t{2368}}, std::pair{tensor_type::q5_k, size_t{2880}},
                                std::pair{tensor_type::q6_k, size_t{3392}}, std::pair{tensor_type::iq4_xs, size_t{2368}}}) {
        const tensor_type type = packing.first;  // a plain variable: doctest's CAPTURE takes it into a lambda
        const size_t group_bytes = packing.second;
        CAPTURE(to_string(type));
        const auto w = random_weights(type, n_rows, n_cols, 47);
        const weight_panels panels = pack_panels(type, w.data(), n_rows, n_cols);
        if (default_isa() < kernel_isa::avx2) {
            CHECK(panels.data == nullptr);  // no kernels that read them (scalar CPU, or TACHYON_KERNELS=scalar)
            continue;
        }
        REQUIRE(panels.data != nullptr);
        CHECK(panels.size_bytes() >= size_t{3} * 3 * group_bytes);  // 3 groups of 16 rows, 3 blocks each
        std::vector<float> wf(static_cast<size_t>(n_rows * n_cols));
        for (int64_t r = 0; r < n_rows; ++r) dequantize_row(type, w.data() + r * row_size(type, n_cols), wf.data() + r * n_cols, n_cols);
        kernel_context scalar(1, kernel_isa::scalar);
        for (kernel_isa isa : available_isas()) {
            if (isa < kernel_isa::avx2) continue;
            kernel_context one(1, isa), two(2, isa);
            // one token (decode), the tails of every pass (AVX2 takes 4 tokens a
            // pass, AVX-512 8), several passes, and AMX's thresholds: AMX-INT8
            // tiles from 8 to 16 tokens (two sub-blocks a product up to 8),
            // AMX-BF16 from 16 (q6_K) or 32
            for (int64_t n_tokens : {1, 2, 3, 4, 5, 7, 8, 9, 10, 13, 15, 16, 17, 33}) {
                CAPTURE(to_string(isa));
                CAPTURE(n_tokens);
                const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 53 + static_cast<uint32_t>(n_tokens));
                std::vector<float> ref(static_cast<size_t>(n_tokens * n_rows)), y1(ref.size(), -1.0f), y2(ref.size(), -2.0f);
                matmul(scalar, type, w.data(), n_rows, n_cols, x.data(), n_tokens, ref.data());
                matmul(one, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y1.data(), panels.data);
                matmul(two, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y2.data(), panels.data);
                int n_bad = 0;
                for (int64_t t = 0; t < n_tokens; ++t) {
                    for (int64_t r = 0; r < n_rows; ++r) {
                        // the same q8_K activations on both sides: only the float sums' order differs
                        double mag = 0.0;
                        for (int64_t k = 0; k < n_cols; ++k) mag += std::fabs(static_cast<double>(wf[r * n_cols + k]) * x[t * n_cols + k]);
                        // AMX multiplies the larger batches on bf16 tiles, within
                        // 2^-8 of the magnitudes (the AMX test above)
                        // (q2_K and q3_K have none: the AVX-512 kernels read their panels there)
                        const bool no_tiles = type == tensor_type::q2_k || type == tensor_type::q3_k;
                        const bool bf16 = isa == kernel_isa::amx && !no_tiles && n_tokens >= (type == tensor_type::q6_k ? 16 : 32);
                        const double bound = bf16 ? mag / 256 : 1e-4 * mag;
                        if (std::fabs(y1[t * n_rows + r] - ref[t * n_rows + r]) > bound + 1e-6) ++n_bad;
                    }
                }
                CHECK(n_bad == 0);
                CHECK(y1 == y2);  // threads take whole groups of 16 rows
            }
        }
    }
}

TEST_CASE("matmul of q4_0, q4_1, iq4_nl, q5_0, q5_1 and q8_0 weights packed in groups of 16 rows matches the weights in place at every level and batch size") {
    // 165 rows: ten whole groups and a tail of 5 padded with zero rows; 5 blocks a row. One
    // token of q8_0 reads 4 runs of groups at once: two passes of 4, then three groups alone, the
    // tail last; of the nibble types that read 2 runs (AVX-512: q4_0, q4_1, iq4_nl, q5_1; AVX2:
    // q4_0, q4_1), five passes of 2, then the tail alone.
    const int64_t n_rows = 165, n_cols = 160;
    // with the bytes of one block of 32 columns of 16 rows, its scales included
    for (const auto& packing : {std::pair{tensor_type::q4_0, size_t{288}}, std::pair{tensor_type::q4_1, size_t{320}},
                                std::pair{tensor_type::q5_1, size_t{384}}, std::pair{tensor_type::iq4_nl, size_t{288}},
                                std::pair{tensor_type::q5_0, size_t{352}}, std::pair{tensor_type::q8_0, size_t{544}}}) {
        const tensor_type type = packing.first;  // a plain variable: doctest's CAPTURE takes it into a lambda
        const size_t block_bytes = packing.second;
        CAPTURE(to_string(type));
        const auto w = random_weights(type, n_rows, n_cols, 59);
        const weight_panels panels = pack_panels(type, w.data(), n_rows, n_cols);
        // packed from AVX2 to AVX-512 (q8_0 at AVX-512 only; AMX keeps its tiles on the weights in place)
        const kernel_isa level = default_isa();
        if (level < kernel_isa::avx2 || level == kernel_isa::amx || (type == tensor_type::q8_0 && level != kernel_isa::avx512)) {
            CHECK(panels.data == nullptr);
            continue;
        }
        REQUIRE(panels.data != nullptr);
        CHECK(panels.size_bytes() == size_t{11} * ((5 * block_bytes + 63) / 64 * 64));  // 11 groups of 5 blocks, each padded to a line
        kernel_context scalar(1, kernel_isa::scalar);
        for (kernel_isa isa : available_isas()) {
            kernel_context one(1, isa), two(2, isa);
            // one token (decode), the tails of a pass of 8 (AVX-512) or 2 (AVX2),
            // several passes, and AVX2's switch to the prompt tiles at 12
            for (int64_t n_tokens : {1, 2, 3, 7, 8, 9, 11, 12, 16, 19}) {
                CAPTURE(to_string(isa));
                CAPTURE(n_tokens);
                const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 61 + static_cast<uint32_t>(n_tokens));
                std::vector<float> ref(static_cast<size_t>(n_tokens * n_rows)), y1(ref.size(), -1.0f), y2(ref.size(), -2.0f);
                // the in-place kernels of the same level: the same q8_0 activations, only the float sums' order differs
                matmul(one, type, w.data(), n_rows, n_cols, x.data(), n_tokens, ref.data());
                matmul(one, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y1.data(), panels.data);
                matmul(two, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y2.data(), panels.data);
                int n_bad = 0;
                for (int64_t t = 0; t < n_tokens; ++t) {
                    for (int64_t r = 0; r < n_rows; ++r) {
                        const float a = ref[t * n_rows + r], b = y1[t * n_rows + r];
                        if (!(std::fabs(a - b) <= 1e-4f * std::max(1.0f, std::fabs(a)))) ++n_bad;  // NaN counts as bad
                    }
                }
                CHECK(n_bad == 0);
                CHECK(y1 == y2);  // threads take whole groups of 16 rows
            }
        }
    }
}

TEST_CASE("only float weights of 32 rows and more, 16-multiple long, the k-quants and iq4_xs, from AVX2 to AVX-512 q4_0, q4_1, iq4_nl, q5_0 and q5_1, and at AVX-512 q8_0 are packed as panels") {
    for (tensor_type k : {tensor_type::q2_k, tensor_type::q3_k}) {
        const auto kq = random_weights(k, 20, 256, 5);
        CHECK((pack_panels(k, kq.data(), 20, 256).data != nullptr) == (default_isa() >= kernel_isa::avx2));
    }
    const auto q = random_weights(tensor_type::q8_0, 64, 64, 5);
    CHECK((pack_panels(tensor_type::q8_0, q.data(), 64, 64).data != nullptr) == (default_isa() == kernel_isa::avx512));
    const auto q4 = random_weights(tensor_type::q4_0, 64, 64, 5);
    CHECK((pack_panels(tensor_type::q4_0, q4.data(), 64, 64).data != nullptr) ==
          (default_isa() >= kernel_isa::avx2 && default_isa() <= kernel_isa::avx512));
    const auto q41 = random_weights(tensor_type::q4_1, 64, 64, 5);
    CHECK((pack_panels(tensor_type::q4_1, q41.data(), 64, 64).data != nullptr) ==
          (default_isa() >= kernel_isa::avx2 && default_isa() <= kernel_isa::avx512));
    const auto few = random_weights(tensor_type::f16, 31, 64, 5);
    CHECK(pack_panels(tensor_type::f16, few.data(), 31, 64).data == nullptr);
    const auto odd = random_weights(tensor_type::f32, 64, 40, 5);
    CHECK(pack_panels(tensor_type::f32, odd.data(), 64, 40).data == nullptr);
}

TEST_CASE("matmul of an empty batch writes nothing") {
    kernel_context ctx;
    const auto w = random_weights(tensor_type::f32, 4, 8, 1);
    float y = 42.0f;
    matmul(ctx, tensor_type::f32, w.data(), 4, 8, nullptr, 0, &y);
    CHECK(y == 42.0f);
}
