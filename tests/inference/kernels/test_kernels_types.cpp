#include "inference/kernels/kernels.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "inference/gguf/fp16.h"
#include "inference/gguf/quant.h"
#include "tests/inference/kernels/kernel_test_data.h"

// The weight types beside f32/f16/bf16/q8_0/q4_0/q4_k/q6_k: every kernel set
// against the dequantized weights, and every SIMD kernel set against the
// scalar one, on shapes that leave partial tiles everywhere.

using namespace tachyon;

using kernel_test::put_half;
using kernel_test::random_floats;

namespace {

const tensor_type new_types[] = {tensor_type::q4_1, tensor_type::q5_0, tensor_type::q5_1, tensor_type::iq4_nl,
                                 tensor_type::q2_k, tensor_type::q3_k, tensor_type::q5_k, tensor_type::iq4_xs};

bool has_min(tensor_type t) { return t == tensor_type::q4_1 || t == tensor_type::q5_1; }


float get_half(const std::byte* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_fp32(h);
}

// Rows of random quant bytes (every bit pattern) with fp16 scales of a
// sensible size in each block; q4_1 / q5_1 mins of either sign.
std::vector<std::byte> random_weights(tensor_type type, int64_t n_rows, int64_t n_cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> w(row_size(type, n_cols) * static_cast<size_t>(n_rows));
    for (auto& b : w) b = static_cast<std::byte>(rng() & 0xff);
    std::uniform_real_distribution<float> scale(0.001f, 0.05f), min(-0.3f, 0.1f);
    const auto traits = traits_of(type);
    const int64_t n_blocks = n_rows * (n_cols / traits.block_size);
    for (int64_t i = 0; i < n_blocks; ++i) {
        std::byte* b = w.data() + i * traits.type_size;
        switch (type) {
            case tensor_type::q4_1:
            case tensor_type::q5_1:
                put_half(b, scale(rng));
                put_half(b + 2, min(rng));
                break;
            case tensor_type::q5_k:
                put_half(b, scale(rng));
                put_half(b + 2, scale(rng));
                break;
            case tensor_type::q2_k:
                put_half(b + offsetof(block_q2_k, d), scale(rng));
                put_half(b + offsetof(block_q2_k, dmin), scale(rng));
                break;
            case tensor_type::q3_k: put_half(b + offsetof(block_q3_k, d), scale(rng)); break;
            default: put_half(b, scale(rng)); break;  // d first: q5_0, iq4_nl, iq4_xs
        }
    }
    return w;
}

// |min term| of element k of a row: what the kernels subtract or add in
// float apart from the quants' products (0 where the offset is integer).
double min_term(tensor_type type, const std::byte* row, int64_t k) {
    switch (type) {
        case tensor_type::q4_1:
        case tensor_type::q5_1: return std::fabs(get_half(row + (k / 32) * traits_of(type).type_size + 2));
        case tensor_type::q2_k: {
            const auto* b = reinterpret_cast<const block_q2_k*>(row) + k / 256;
            return std::fabs(fp16_to_fp32(b->dmin)) * (b->scales[(k % 256) / 16] >> 4);
        }
        case tensor_type::q5_k: {
            const auto* b = reinterpret_cast<const block_q5_k*>(row) + k / 256;
            uint8_t sc, m;
            q4_k_scale_min(static_cast<int>((k % 256) / 32), b->scales, sc, m);
            return std::fabs(fp16_to_fp32(b->dmin)) * m;
        }
        default: return 0.0;
    }
}

std::vector<int64_t> cols_of(tensor_type type) {
    // 1, 3, 13 and 33 blocks: 33 runs past the AVX-512 decode kernel's 32 blocks of
    // scale products, and 13 and 33 leave one past its groups of 4 (q4_0, iq4_nl)
    if (traits_of(type).block_size == 32) return {32, 96, 416, 1056};
    return {256, 512, 1280};                                     // 1, 2 and 5 super-blocks
}

// y = matmul of `type` weights on kernel set `isa`, one thread.
std::vector<float> run_matmul(kernel_isa isa, tensor_type type, const std::vector<std::byte>& w, int64_t n_rows, int64_t n_cols,
                              const std::vector<float>& x, int64_t n_tokens, int n_threads = 1) {
    kernel_context ctx(n_threads, isa);
    std::vector<float> y(static_cast<size_t>(n_rows * n_tokens), -1.0f);
    matmul(ctx, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y.data());
    return y;
}

}  // namespace

TEST_CASE("the eight added weight types have kernels and their activation formats") {
    for (tensor_type t : new_types) {
        CAPTURE(to_string(t));
        CHECK(has_kernels(t));
    }
    CHECK(activation_type(tensor_type::q4_1) == tensor_type::q8_1);
    CHECK(activation_type(tensor_type::q5_1) == tensor_type::q8_1);
    CHECK(activation_type(tensor_type::q5_0) == tensor_type::q8_0);
    CHECK(activation_type(tensor_type::iq4_nl) == tensor_type::q8_0);
    CHECK(activation_type(tensor_type::q2_k) == tensor_type::q8_k);
    CHECK(activation_type(tensor_type::q3_k) == tensor_type::q8_k);
    CHECK(activation_type(tensor_type::q5_k) == tensor_type::q8_k);
    CHECK(activation_type(tensor_type::iq4_xs) == tensor_type::q8_k);
    CHECK_FALSE(has_kernels(tensor_type::q8_k));
    CHECK_FALSE(has_kernels(static_cast<tensor_type>(16)));  // iq2_xxs
}

TEST_CASE("vec_dot of every added type equals the reference dot of the same quantized rows on every kernel set") {
    for (tensor_type type : new_types) {
        for (int64_t n : cols_of(type)) {
            const auto w = random_weights(type, 1, n, static_cast<uint32_t>(n) + 1);
            const auto xf = random_floats(static_cast<size_t>(n), 17);
            std::vector<float> wf(static_cast<size_t>(n));
            dequantize_row(type, w.data(), wf.data(), n);
            std::vector<std::byte> xq(row_size(activation_type(type), n));
            quantize_activations(kernel_isa::scalar, type, xf.data(), xq.data(), n);
            // The activations as the kernels see them: q8_0 / q8_1 blocks
            // dequantize to fp16(d) * q; q8_k has a float d.
            std::vector<float> xd(static_cast<size_t>(n));
            const tensor_type act = activation_type(type);
            for (int64_t b = 0; b < n / (act == tensor_type::q8_k ? 256 : 32); ++b) {
                if (act == tensor_type::q8_k) {
                    const auto* q = reinterpret_cast<const block_q8_k*>(xq.data()) + b;
                    for (int j = 0; j < 256; ++j) xd[b * 256 + j] = q->d * q->qs[j];
                } else {
                    const std::byte* q = xq.data() + b * traits_of(act).type_size;
                    const auto* qs = reinterpret_cast<const int8_t*>(q + (act == tensor_type::q8_1 ? 4 : 2));
                    for (int j = 0; j < 32; ++j) xd[b * 32 + j] = get_half(q) * qs[j];
                }
            }
            double ref = 0.0, mag = 0.0;
            for (int64_t k = 0; k < n; ++k) {
                ref += static_cast<double>(wf[k]) * xd[k];
                mag += (std::fabs(wf[k]) + min_term(type, w.data(), k)) * std::fabs(xd[k]);
            }
            // q4_1 / q5_1 take the min term from s = fp16(d * sum q): 2^-11 of |m| * sum |x|.
            double min_tol = 0.0;
            if (has_min(type))
                for (int64_t k = 0; k < n; ++k) min_tol += min_term(type, w.data(), k) * std::fabs(xd[k]) * 1e-3;
            const float scalar = vec_dot(kernel_isa::scalar, type, n, w.data(), xq.data());
            for (kernel_isa isa : available_isas()) {
                CAPTURE(to_string(type));
                CAPTURE(to_string(isa));
                CAPTURE(n);
                const float got = vec_dot(isa, type, n, w.data(), xq.data());
                CHECK(std::fabs(got - ref) <= 1e-5 * mag + min_tol + 1e-6);
                // the same integers, another float order
                CHECK(std::fabs(got - scalar) <= 1e-5 * mag + 1e-6);
            }
        }
    }
}

TEST_CASE("matmul of every added type on every kernel set matches the dequantized weights, and SIMD the scalar kernels") {
    const std::vector<kernel_isa> isas = available_isas();
    for (tensor_type type : new_types) {
        const int block = activation_type(type) == tensor_type::q8_k ? 256 : 32;
        for (int64_t n_cols : cols_of(type)) {
            for (int64_t n_rows : {1, 3, 17, 33, 67}) {
                const auto w = random_weights(type, n_rows, n_cols, static_cast<uint32_t>(n_rows * 1000 + n_cols));
                const size_t rb = row_size(type, n_cols);
                std::vector<float> wf(static_cast<size_t>(n_rows * n_cols));  // [n_rows, n_cols]
                std::vector<double> mins(wf.size());                         // |min term| per weight
                for (int64_t r = 0; r < n_rows; ++r) {
                    dequantize_row(type, w.data() + r * rb, wf.data() + r * n_cols, n_cols);
                    for (int64_t k = 0; k < n_cols; ++k) mins[r * n_cols + k] = min_term(type, w.data() + r * rb, k);
                }
                for (int64_t n_tokens : {1, 2, 3, 5, 16, 33, 70}) {
                    CAPTURE(to_string(type));
                    CAPTURE(n_cols);
                    CAPTURE(n_rows);
                    CAPTURE(n_tokens);
                    const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), static_cast<uint32_t>(n_tokens));
                    // Double-precision reference on the float activations, and
                    // two tolerances per output: the activations' rounding to
                    // steps of max|x_block| / 127 (each term errs by at most
                    // |w| * step / 2, plus the fp16 scale and sum), and the float
                    // order of the block terms (for the SIMD/scalar comparison).
                    std::vector<double> ref(static_cast<size_t>(n_tokens * n_rows)), tol(ref.size()), mag(ref.size());
                    for (int64_t t = 0; t < n_tokens; ++t) {
                        for (int64_t r = 0; r < n_rows; ++r) {
                            double s = 0.0, e = 0.0, m = 0.0;
                            for (int64_t k0 = 0; k0 < n_cols; k0 += block) {
                                double amax = 0.0, wsum = 0.0, min_x = 0.0;
                                for (int64_t k = k0; k < k0 + block; ++k) {
                                    const double wk = wf[r * n_cols + k], xk = x[t * n_cols + k];
                                    s += wk * xk;
                                    m += (std::fabs(wk) + mins[r * n_cols + k]) * std::fabs(xk);
                                    amax = std::max(amax, std::fabs(xk));
                                    wsum += std::fabs(wk);
                                    min_x += mins[r * n_cols + k] * std::fabs(xk);
                                }
                                e += wsum * (amax / 127.0) * 0.51 + wsum * amax * 1e-3 + (has_min(type) ? min_x * 1e-3 : 0.0);
                            }
                            ref[t * n_rows + r] = s;
                            tol[t * n_rows + r] = e + 1e-5 * m;
                            mag[t * n_rows + r] = m;
                        }
                    }
                    const auto y_scalar = run_matmul(kernel_isa::scalar, type, w, n_rows, n_cols, x, n_tokens);
                    for (kernel_isa isa : isas) {
                        CAPTURE(to_string(isa));
                        const auto y = isa == kernel_isa::scalar ? y_scalar : run_matmul(isa, type, w, n_rows, n_cols, x, n_tokens);
                        // Both quantize the activations alike (a quant may
                        // differ by a step on an exact tie, which random
                        // normals never hit) and sum the same integers; AMX
                        // prompts (16 tokens and more for the k-quants, 64 for
                        // the others) multiply bf16 tiles instead, each factor
                        // rounded to 8 significant bits.
                        const double apart = isa == kernel_isa::amx && n_tokens >= 16 ? 1.0 / 256 : 1e-5;
                        int n_far = 0, n_apart = 0;
                        for (size_t i = 0; i < y.size(); ++i) {
                            if (std::fabs(y[i] - ref[i]) > tol[i]) ++n_far;
                            if (std::fabs(y[i] - y_scalar[i]) > apart * mag[i] + 1e-6) ++n_apart;
                        }
                        CHECK(n_far == 0);
                        CHECK(n_apart == 0);
                    }
                }
            }
        }
    }
}

TEST_CASE("matmul of the added types gives the same numbers on two threads as on one") {
    // large enough to split: at least min_parallel_matmul_bytes of work
    const int64_t n_rows = 1201, n_tokens = 9;
    for (tensor_type type : new_types) {
        CAPTURE(to_string(type));
        const int64_t n_cols = 512;
        kernel_context two(2);
        REQUIRE(matmul_threads(two, type, n_rows, n_cols, n_tokens) == 2);
        const auto w = random_weights(type, n_rows, n_cols, 3);
        const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 4);
        const auto y1 = run_matmul(default_isa(), type, w, n_rows, n_cols, x, n_tokens, 1);
        const auto y2 = run_matmul(default_isa(), type, w, n_rows, n_cols, x, n_tokens, 2);
        CHECK(y1 == y2);  // rows are independent: the split cannot change a sum
    }
}

TEST_CASE("the AVX2 q8_1 activation quantizer agrees with the reference one") {
    if (!cpu_has_avx2()) {
        MESSAGE("skipped: CPU without AVX2/FMA/F16C");
        return;
    }
    const int64_t n = 256;
    auto x = random_floats(n, 8);
    for (int j = 64; j < 96; ++j) x[j] = 0.0f;  // an all-zero block: d = s = 0
    std::vector<block_q8_1> a(n / 32), b(n / 32);
    quantize_activations(kernel_isa::scalar, tensor_type::q4_1, x.data(), a.data(), n);
    quantize_activations(kernel_isa::avx2, tensor_type::q4_1, x.data(), b.data(), n);
    for (int64_t k = 0; k < n / 32; ++k) {
        CAPTURE(k);
        CHECK(a[k].d == b[k].d);
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
            CHECK(std::abs(a[k].qs[j] - b[k].qs[j]) <= 1);  // ties may round apart
            sum += b[k].qs[j];
        }
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[k * 32 + j]));
        CHECK(b[k].s == fp32_to_fp16(amax / 127.0f * static_cast<float>(sum)));
    }
}
