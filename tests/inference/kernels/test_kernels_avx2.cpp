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

// The AVX2 batch paths of q8_0, iq4_nl, f16, q4_K and q6_K (kernels_prompt.cpp's
// 8-row tiles, kernels_avx2.cpp's columns_tile, kernels_avx2_kquants.cpp's
// 8-row q4_K and q6_K layouts) against the dequantized weights in double precision,
// on shapes that leave a partial row group, partial token tiles and, for
// f16, several column chunks ending in a tail.

using namespace tachyon;

using kernel_test::put_half;
using kernel_test::random_floats;

namespace {

// f16 rows from normal floats; block types from random quant bytes (every
// bit pattern) with fp16 scales of a sensible size (q4_K: d and dmin).
std::vector<std::byte> random_weights(tensor_type type, int64_t n_rows, int64_t n_cols, uint32_t seed) {
    std::vector<std::byte> w(row_size(type, n_cols) * static_cast<size_t>(n_rows));
    if (type == tensor_type::f16) {
        const auto f = random_floats(static_cast<size_t>(n_rows * n_cols), seed);
        for (size_t i = 0; i < f.size(); ++i) put_half(w.data() + 2 * i, f[i]);
        return w;
    }
    std::mt19937 rng(seed);
    for (auto& b : w) b = static_cast<std::byte>(rng() & 0xff);
    std::uniform_real_distribution<float> scale(0.001f, 0.05f);
    const auto traits = traits_of(type);
    const int64_t n_blocks = n_rows * (n_cols / traits.block_size);
    for (int64_t i = 0; i < n_blocks; ++i) {
        std::byte* b = w.data() + i * traits.type_size;
        if (type == tensor_type::q6_k) {
            put_half(b + offsetof(block_q6_k, d), scale(rng));
            continue;
        }
        put_half(b, scale(rng));  // d first: q8_0, iq4_nl, q4_K
        if (type == tensor_type::q4_k) put_half(b + offsetof(block_q4_k, dmin), scale(rng));
    }
    return w;
}

}  // namespace

TEST_CASE("AVX2 batches of q8_0, iq4_nl, f16, q4_K and q6_K weights match the dequantized weights in double precision") {
    if (!cpu_has_avx2()) {
        MESSAGE("skipped: this CPU has no AVX2");
        return;
    }
    kernel_context ctx(1, kernel_isa::avx2);
    // 21 rows: one partial group of 8 and of 16 rows
    const int64_t n_rows = 21;
    struct shape {
        tensor_type type;
        std::vector<int64_t> cols;
    };
    // f16: 604 columns are chunks of 256, 256 and 92 (a tail of 4 past the
    // 8-wide steps); q4_K: 1 and 5 super-blocks; 13 and 33 blocks of 32
    const shape shapes[] = {{tensor_type::q8_0, {416, 1056}},
                            {tensor_type::iq4_nl, {416, 1056}},
                            {tensor_type::f16, {128, 604}},
                            {tensor_type::q4_k, {256, 1280}},
                            {tensor_type::q6_k, {256, 1280}}};
    for (const shape& sh : shapes) {
        for (int64_t n_cols : sh.cols) {
            const tensor_type type = sh.type;
            const auto w = random_weights(type, n_rows, n_cols, 5);
            std::vector<float> wf(static_cast<size_t>(n_rows * n_cols));  // [n_rows, n_cols]
            for (int64_t r = 0; r < n_rows; ++r)
                dequantize_row(type, w.data() + r * row_size(type, n_cols), wf.data() + r * n_cols, n_cols);
            const int block = type == tensor_type::q4_k || type == tensor_type::q6_k ? 256 : 32;
            for (int64_t n_tokens : {3, 4, 5, 7, 11, 12, 13, 19, 37}) {
                CAPTURE(to_string(type));
                CAPTURE(n_cols);
                CAPTURE(n_tokens);
                const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 9);  // [n_tokens, n_cols]
                std::vector<float> y(static_cast<size_t>(n_tokens * n_rows), -1.0f);     // [n_tokens, n_rows]
                matmul(ctx, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y.data());
                int n_bad = 0;
                for (int64_t t = 0; t < n_tokens; ++t) {
                    for (int64_t r = 0; r < n_rows; ++r) {
                        double ref = 0.0, tol = 0.0;
                        for (int64_t k = 0; k < n_cols; ++k) {
                            const double p = static_cast<double>(wf[r * n_cols + k]) * x[t * n_cols + k];
                            ref += p;
                            tol += std::fabs(p) * 1e-5;
                        }
                        if (type != tensor_type::f16) {
                            // activations rounded to steps of max|x_block| / 127
                            for (int64_t k0 = 0; k0 < n_cols; k0 += block) {
                                double amax = 0.0, wsum = 0.0;
                                for (int64_t k = k0; k < k0 + block; ++k) {
                                    amax = std::max(amax, std::fabs(static_cast<double>(x[t * n_cols + k])));
                                    wsum += std::fabs(static_cast<double>(wf[r * n_cols + k]));
                                }
                                tol += wsum * (amax / 127.0) * 0.51 + wsum * amax * 1e-3;
                            }
                        }
                        if (!(std::fabs(y[t * n_rows + r] - ref) <= tol)) ++n_bad;
                    }
                }
                CHECK(n_bad == 0);
            }
        }
    }
}

TEST_CASE("AVX2 batches give every row the same numbers however the rows split over two threads") {
    if (!cpu_has_avx2()) {
        MESSAGE("skipped: this CPU has no AVX2");
        return;
    }
    // enough rows and tokens that the matmul splits; each row sums the same
    // way whichever group of 8 or 16 rows it falls in
    kernel_context one(1, kernel_isa::avx2), two(2, kernel_isa::avx2);
    const int64_t n_rows = 1000, n_tokens = 24;
    for (tensor_type type : {tensor_type::q8_0, tensor_type::iq4_nl, tensor_type::f16, tensor_type::q4_k, tensor_type::q6_k}) {
        CAPTURE(to_string(type));
        const int64_t n_cols = type == tensor_type::q4_k || type == tensor_type::q6_k ? 512 : 544;
        const auto w = random_weights(type, n_rows, n_cols, 3);
        const auto x = random_floats(static_cast<size_t>(n_tokens * n_cols), 4);
        std::vector<float> y1(static_cast<size_t>(n_tokens * n_rows)), y2(y1.size(), -1.0f);
        matmul(one, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y1.data());
        matmul(two, type, w.data(), n_rows, n_cols, x.data(), n_tokens, y2.data());
        CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("one-token q8_0 passes in place below AVX-512 read several stretches and give each row what the row tiles give") {
    if (!cpu_has_avx2()) {
        MESSAGE("skipped: this CPU has no AVX2");
        return;
    }
    // 149 rows: four stretches of 37 rows and one left over for the 4-row
    // tiles; on two threads the halves split into stretches of their own.
    // A token's row sums in the same order whether its pass takes one token
    // (several stretches) or two (the 4 x 2 tiles), so token 0 of a pair
    // must be bit for bit the one-token result.
    const int64_t n_rows = 149, n_cols = 1056;
    const auto w = random_weights(tensor_type::q8_0, n_rows, n_cols, 11);
    const auto x = random_floats(static_cast<size_t>(2 * n_cols), 12);
    std::vector<kernel_isa> isas{kernel_isa::avx2};
    if (cpu_has_avx_vnni()) isas.push_back(kernel_isa::avx_vnni);
    for (kernel_isa isa : isas) {
        CAPTURE(to_string(isa));
        for (int n_threads : {1, 2}) {
            CAPTURE(n_threads);
            kernel_context ctx(n_threads, isa);
            std::vector<float> y1(static_cast<size_t>(n_rows), -1.0f), y2(static_cast<size_t>(2 * n_rows), -1.0f);
            matmul(ctx, tensor_type::q8_0, w.data(), n_rows, n_cols, x.data(), 1, y1.data());
            matmul(ctx, tensor_type::q8_0, w.data(), n_rows, n_cols, x.data(), 2, y2.data());
            CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
        }
    }
}
