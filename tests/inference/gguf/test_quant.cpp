#include "inference/gguf/quant.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "inference/gguf/fp16.h"

using namespace tachyon;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Packs 8 six-bit scales and mins the way q4_K stores them: the first four
// of each in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); the last
// four split into a low nibble in bytes 8..11 and 2 high bits on top of
// bytes 0..7.
void pack_q4_k_scales(const int sc[8], const int m[8], uint8_t out[12]) {
    std::memset(out, 0, 12);
    for (int j = 0; j < 4; ++j) {
        out[j] = static_cast<uint8_t>(sc[j]);
        out[j + 4] = static_cast<uint8_t>(m[j]);
    }
    for (int j = 4; j < 8; ++j) {
        out[j + 4] = static_cast<uint8_t>((sc[j] & 0x0f) | ((m[j] & 0x0f) << 4));
        out[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
        out[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);
    }
}

// Stores 6-bit value u (0..63) of element e of a q6_K block.
void set_q6_k(block_q6_k& b, int e, int u) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    uint8_t& ql = b.ql[64 * h + 32 * (g % 2) + l];
    if (g < 2) {
        ql = static_cast<uint8_t>((ql & 0xf0) | (u & 0x0f));
    } else {
        ql = static_cast<uint8_t>((ql & 0x0f) | ((u & 0x0f) << 4));
    }
    uint8_t& qh = b.qh[32 * h + l];
    qh = static_cast<uint8_t>((qh & ~(3 << (2 * g))) | ((u >> 4) << (2 * g)));
}

}  // namespace

TEST_CASE("row_size and the supported type lists") {
    CHECK(row_size(tensor_type::q8_0, 64) == 68);
    CHECK(row_size(tensor_type::q4_k, 512) == 288);
    CHECK(row_size(tensor_type::f16, 3) == 6);
    CHECK(can_dequantize(tensor_type::q6_k));
    CHECK_FALSE(can_dequantize(tensor_type::q5_k));
    CHECK(can_quantize(tensor_type::q8_k));
    CHECK_FALSE(can_quantize(tensor_type::q4_k));
}

TEST_CASE("q8_0 block decodes to qs * d") {
    block_q8_0 b[2];
    b[0].d = fp32_to_fp16(0.5f);
    b[1].d = fp32_to_fp16(-0.25f);
    for (int j = 0; j < 32; ++j) {
        b[0].qs[j] = static_cast<int8_t>(j - 3);
        b[1].qs[j] = static_cast<int8_t>(j == 0 ? -128 : 127 - j);
    }
    float y[64];
    dequantize_row(tensor_type::q8_0, b, y, 64);
    CHECK(y[0] == -1.5f);
    CHECK(y[3] == 0.0f);
    CHECK(y[31] == 14.0f);
    CHECK(y[32] == 32.0f);     // -128 * -0.25
    CHECK(y[33] == -31.5f);    // 126 * -0.25
}

TEST_CASE("q4_0 block decodes low nibbles to elements 0..15 and high nibbles to 16..31") {
    block_q4_0 b;
    b.d = fp32_to_fp16(0.25f);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    float y[32];
    dequantize_row(tensor_type::q4_0, &b, y, 32);
    for (int j = 0; j < 16; ++j) {
        CHECK(y[j] == doctest::Approx((j - 8) * 0.25f));
        CHECK(y[j + 16] == doctest::Approx((7 - j) * 0.25f));
    }
    CHECK(y[0] == -2.0f);
    CHECK(y[16] == 1.75f);
}

TEST_CASE("q4_K block decodes with its packed 6-bit scales and mins") {
    const int sc[8] = {1, 2, 63, 17, 40, 5, 33, 62};
    const int m[8] = {0, 63, 7, 31, 48, 16, 1, 60};
    block_q4_k b;
    b.d = fp32_to_fp16(0.5f);
    b.dmin = fp32_to_fp16(0.125f);
    pack_q4_k_scales(sc, m, b.scales);
    // Element 64c + l is the low nibble of qs[32c + l], element 64c + 32 + l the high one.
    auto nibble_of = [](int e) { return (e * 7 + 3) % 16; };
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l)
            b.qs[32 * c + l] = static_cast<uint8_t>(nibble_of(64 * c + l) | (nibble_of(64 * c + 32 + l) << 4));
    // The unpacking itself, sub-block by sub-block.
    for (int j = 0; j < 8; ++j) {
        uint8_t s, mm;
        q4_k_scale_min(j, b.scales, s, mm);
        CHECK(s == sc[j]);
        CHECK(mm == m[j]);
    }
    float y[256];
    dequantize_row(tensor_type::q4_k, &b, y, 256);
    for (int e = 0; e < 256; ++e) {
        const int j = e / 32;
        const float expected = 0.5f * static_cast<float>(sc[j] * nibble_of(e)) - 0.125f * static_cast<float>(m[j]);
        CHECK(y[e] == doctest::Approx(expected).epsilon(1e-6));
    }
}

TEST_CASE("q6_K block decodes 6-bit values minus 32 with one int8 scale per 16 elements") {
    block_q6_k b;
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(0.5f);
    for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s % 2 == 0 ? s + 1 : -3 * s);
    auto value_of = [](int e) { return (e * 37 + 11) % 64; };
    for (int e = 0; e < 256; ++e) set_q6_k(b, e, value_of(e));
    float y[256];
    dequantize_row(tensor_type::q6_k, &b, y, 256);
    for (int e = 0; e < 256; ++e) {
        const float expected = 0.5f * static_cast<float>(b.scales[e / 16] * (value_of(e) - 32));
        CHECK(y[e] == doctest::Approx(expected).epsilon(1e-6));
    }
    CHECK(y[0] == 0.5f * 1 * (11 - 32));
}

TEST_CASE("f16 and bf16 rows dequantize exactly") {
    const auto x = random_floats(37, 1);
    std::vector<uint16_t> h(x.size());
    std::vector<float> y(x.size());
    quantize_row(tensor_type::f16, x.data(), h.data(), 37);
    dequantize_row(tensor_type::f16, h.data(), y.data(), 37);
    for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == fp16_to_fp32(fp32_to_fp16(x[i])));
    quantize_row(tensor_type::bf16, x.data(), h.data(), 37);
    dequantize_row(tensor_type::bf16, h.data(), y.data(), 37);
    for (size_t i = 0; i < x.size(); ++i) CHECK(y[i] == bf16_to_fp32(fp32_to_bf16(x[i])));
}

TEST_CASE("q8_0 quantization: d = max|x| / 127, error at most about half a step") {
    const int64_t n = 32 * 7;
    auto x = random_floats(n, 2, 3.0f);
    x[5] = 0.0f;
    for (int j = 64; j < 96; ++j) x[j] = 0.0f;  // an all-zero block
    std::vector<block_q8_0> q(n / 32);
    quantize_row(tensor_type::q8_0, x.data(), q.data(), n);
    std::vector<float> y(n);
    dequantize_row(tensor_type::q8_0, q.data(), y.data(), n);
    for (int64_t b = 0; b < n / 32; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
        CHECK(fp16_to_fp32(q[b].d) == fp16_to_fp32(fp32_to_fp16(amax / 127.0f)));
        const float step = amax / 127.0f;
        for (int j = 0; j < 32; ++j) CHECK(std::fabs(y[b * 32 + j] - x[b * 32 + j]) <= 0.57f * step + 1e-12f);
    }
    CHECK(y[5] == 0.0f);
    CHECK(y[70] == 0.0f);
}

TEST_CASE("q4_0 quantization maps the largest magnitude to -8 and errs by at most one step") {
    const int64_t n = 32 * 5;
    auto x = random_floats(n, 3);
    x[7] = -4.0f;  // block 0: negative extreme
    x[40] = 5.0f;  // block 1: positive extreme
    std::vector<block_q4_0> q(n / 32);
    quantize_row(tensor_type::q4_0, x.data(), q.data(), n);
    std::vector<float> y(n);
    dequantize_row(tensor_type::q4_0, q.data(), y.data(), n);
    CHECK(fp16_to_fp32(q[0].d) == 0.5f);
    CHECK(fp16_to_fp32(q[1].d) == -0.625f);
    CHECK(y[7] == -4.0f);
    CHECK(y[40] == 5.0f);
    for (int64_t b = 0; b < n / 32; ++b) {
        const float d = std::fabs(fp16_to_fp32(q[b].d));
        for (int j = 0; j < 32; ++j) CHECK(std::fabs(y[b * 32 + j] - x[b * 32 + j]) <= 1.01f * d);
    }
}

TEST_CASE("q8_K quantization keeps bsums equal to the sums of 16 quants") {
    const int64_t n = 512;
    const auto x = random_floats(n, 4, 10.0f);
    std::vector<block_q8_k> q(2);
    quantize_row(tensor_type::q8_k, x.data(), q.data(), n);
    for (int b = 0; b < 2; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[b * 256 + j]));
        CHECK(q[b].d == doctest::Approx(amax / 127.0f));
        for (int g = 0; g < 16; ++g) {
            int s = 0;
            for (int j = 0; j < 16; ++j) s += q[b].qs[16 * g + j];
            CHECK(q[b].bsums[g] == s);
        }
        for (int j = 0; j < 256; ++j) CHECK(std::fabs(q[b].d * q[b].qs[j] - x[b * 256 + j]) <= 0.5f * q[b].d * 1.0001f);
    }
}
