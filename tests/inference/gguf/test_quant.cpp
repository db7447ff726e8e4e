#include "inference/gguf/quant.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "inference/gguf/fp16.h"
#include "inference/gguf/gguf.h"

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

TEST_CASE("GGUF numbers, block sizes and bytes per block of the 32- and 256-element types") {
    struct expected {
        tensor_type type;
        uint32_t number, block_size, type_size;
    };
    for (const expected& e : {expected{tensor_type::q4_1, 3, 32, 20}, expected{tensor_type::q5_0, 6, 32, 22},
                              expected{tensor_type::q5_1, 7, 32, 24}, expected{tensor_type::q8_1, 9, 32, 36},
                              expected{tensor_type::q2_k, 10, 256, 84}, expected{tensor_type::q3_k, 11, 256, 110},
                              expected{tensor_type::q5_k, 13, 256, 176}, expected{tensor_type::iq4_nl, 20, 32, 18},
                              expected{tensor_type::iq4_xs, 23, 256, 136}}) {
        CAPTURE(to_string(e.type));
        CHECK(static_cast<uint32_t>(e.type) == e.number);
        CHECK(traits_of(e.type).block_size == e.block_size);
        CHECK(traits_of(e.type).type_size == e.type_size);
    }
    CHECK(to_string(tensor_type::iq4_nl) == "iq4_nl");
    CHECK(to_string(tensor_type::iq4_xs) == "iq4_xs");
    CHECK(row_size(tensor_type::q5_k, 512) == 352);
}

TEST_CASE("row_size and the supported type lists") {
    CHECK(row_size(tensor_type::q8_0, 64) == 68);
    CHECK(row_size(tensor_type::q4_k, 512) == 288);
    CHECK(row_size(tensor_type::f16, 3) == 6);
    CHECK(can_dequantize(tensor_type::q6_k));
    for (tensor_type t : {tensor_type::q4_1, tensor_type::q5_0, tensor_type::q5_1, tensor_type::iq4_nl, tensor_type::q2_k,
                          tensor_type::q3_k, tensor_type::q5_k, tensor_type::iq4_xs}) {
        CAPTURE(to_string(t));
        CHECK(can_dequantize(t));
        CHECK(traits_of(t).supported);
    }
    CHECK_FALSE(can_dequantize(tensor_type::q8_k));  // an activation format only
    CHECK_FALSE(traits_of(static_cast<tensor_type>(16)).supported);  // iq2_xxs
    CHECK(can_quantize(tensor_type::q8_1));
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

namespace {

// The arithmetic ggml's dequantizers do, one rounding per operation. (The
// products of fp16 scales and the formats' small integers are exact, so
// the results are expected bit for bit.)
float mul(float a, float b) {
    volatile float p = a * b;
    return p;
}
float mul_add(float a, float b, float c) { return mul(a, b) + c; }
float mul_sub(float a, float b, float c) { return mul(a, b) - c; }

// Scales that are not powers of two, so that products round.
const float d_value = fp16_to_fp32(fp32_to_fp16(0.01234f));
const float m_value = fp16_to_fp32(fp32_to_fp16(-0.3071f));

// Element values for hand-built blocks: random, so that no two places a
// wrong layout could confuse (the two nibbles of a byte, two bit positions)
// hold the same values.
int random_value(int e, int n_values) {
    static const std::vector<uint32_t> values = [] {
        std::mt19937 rng(12345);
        std::vector<uint32_t> v(256);
        for (auto& x : v) x = rng();
        return v;
    }();
    return static_cast<int>(values[static_cast<size_t>(e)] % static_cast<uint32_t>(n_values));
}

// The iq4_nl / iq4_xs levels as the GGUF specification lists them.
constexpr int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Element j (0..31) of a 32-element block ordered as q4_0: j < 16 in the low
// nibble of qs[j], j >= 16 in the high nibble of qs[j - 16].
void set_nibble(uint8_t* qs, int j, int v) {
    uint8_t& byte = qs[j % 16];
    byte = j < 16 ? static_cast<uint8_t>((byte & 0xf0) | v) : static_cast<uint8_t>((byte & 0x0f) | (v << 4));
}

// Bit j of the little-endian 32-bit qh of q5_0 / q5_1.
void set_q5_high(uint8_t qh[4], int j, int bit) {
    if (bit != 0) qh[j / 8] |= static_cast<uint8_t>(1 << (j % 8));
}

// The 2 low bits of element e of a q2_K / q3_K block: element 128h + 32g + l
// sits in bits 2g..2g+1 of qs[32h + l].
void set_low2(uint8_t* qs, int e, int v) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    qs[32 * h + l] = static_cast<uint8_t>((qs[32 * h + l] & ~(3 << (2 * g))) | (v << (2 * g)));
}

}  // namespace

TEST_CASE("q4_1 block decodes nibble * d + m, low nibbles to elements 0..15") {
    block_q4_1 b[2];
    std::memset(b, 0, sizeof b);
    auto value_of = [](int e) { return random_value(e, 16); };
    for (int k = 0; k < 2; ++k) {
        b[k].d = fp32_to_fp16(k == 0 ? d_value : -2 * d_value);
        b[k].m = fp32_to_fp16(k == 0 ? m_value : 0.125f);
        for (int j = 0; j < 32; ++j) set_nibble(b[k].qs, j, value_of(32 * k + j));
    }
    float y[64];
    dequantize_row(tensor_type::q4_1, b, y, 64);
    for (int e = 0; e < 64; ++e) {
        CAPTURE(e);
        const block_q4_1& blk = b[e / 32];
        CHECK(y[e] == mul_add(static_cast<float>(value_of(e)), fp16_to_fp32(blk.d), fp16_to_fp32(blk.m)));
    }
    CHECK(y[1] == mul_add(static_cast<float>(b[0].qs[1] & 15), d_value, m_value));
    CHECK(y[17] == mul_add(static_cast<float>(b[0].qs[1] >> 4), d_value, m_value));
}

TEST_CASE("q5_0 and q5_1 blocks decode 5-bit values with the fifth bit of element j in bit j of qh") {
    auto value_of = [](int e) { return random_value(e, 32); };
    block_q5_0 a;
    block_q5_1 b;
    std::memset(&a, 0, sizeof a);
    std::memset(&b, 0, sizeof b);
    a.d = b.d = fp32_to_fp16(d_value);
    b.m = fp32_to_fp16(m_value);
    for (int j = 0; j < 32; ++j) {
        set_nibble(a.qs, j, value_of(j) & 15);
        set_nibble(b.qs, j, value_of(j) & 15);
        set_q5_high(a.qh, j, value_of(j) >> 4);
        set_q5_high(b.qh, j, value_of(j) >> 4);
    }
    float ya[32], yb[32];
    dequantize_row(tensor_type::q5_0, &a, ya, 32);
    dequantize_row(tensor_type::q5_1, &b, yb, 32);
    for (int j = 0; j < 32; ++j) {
        CAPTURE(j);
        CHECK(ya[j] == mul(static_cast<float>(value_of(j) - 16), d_value));
        CHECK(yb[j] == mul_add(static_cast<float>(value_of(j)), d_value, m_value));
    }
    CHECK(ya[30] == mul(static_cast<float>((a.qs[14] >> 4) + ((a.qh[3] >> 6) & 1) * 16 - 16), d_value));
}

TEST_CASE("iq4_nl block decodes d * level[index] in q4_0's nibble order") {
    block_iq4_nl b;
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(d_value);
    auto index_of = [](int j) { return random_value(j, 16); };
    for (int j = 0; j < 32; ++j) set_nibble(b.qs, j, index_of(j));
    float y[32];
    dequantize_row(tensor_type::iq4_nl, &b, y, 32);
    for (int j = 0; j < 32; ++j) {
        CAPTURE(j);
        CHECK(y[j] == mul(d_value, static_cast<float>(levels[index_of(j)])));
    }
    for (int i = 0; i < 16; ++i) CHECK(iq4_nl_values[i] == levels[i]);
}

TEST_CASE("q2_K block decodes d * scale * q - dmin * min per sub-block of 16") {
    block_q2_k b;
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(d_value);
    b.dmin = fp32_to_fp16(0.0517f);
    const float dmin = fp16_to_fp32(b.dmin);
    auto scale_of = [](int s) { return (s * 5 + 2) % 16; };
    auto min_of = [](int s) { return (s * 3 + 7) % 16; };
    auto value_of = [](int e) { return random_value(e, 4); };
    for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>(scale_of(s) | (min_of(s) << 4));
    for (int e = 0; e < 256; ++e) set_low2(b.qs, e, value_of(e));
    float y[256];
    dequantize_row(tensor_type::q2_k, &b, y, 256);
    for (int e = 0; e < 256; ++e) {
        CAPTURE(e);
        const int s = e / 16;
        const float dl = mul(d_value, static_cast<float>(scale_of(s)));
        const float ml = mul(dmin, static_cast<float>(min_of(s)));
        CHECK(y[e] == mul_sub(dl, static_cast<float>(value_of(e)), ml));
    }
}

TEST_CASE("q3_K block decodes d * (scale - 32) * (q - 4 unless the hmask bit is set)") {
    block_q3_k b;
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(d_value);
    auto scale_of = [](int s) { return (s * 23 + 9) % 64; };  // 6 bits
    auto value_of = [](int e) { return random_value(e, 8); };  // 3 bits: hmask bit on top of 2
    // Scale s: low 4 bits in nibble s / 8 of scales[s % 8], high 2 bits in
    // bits 2(s / 4).. of scales[8 + s % 4].
    for (int s = 0; s < 16; ++s) {
        b.scales[s % 8] |= static_cast<uint8_t>((scale_of(s) & 15) << (4 * (s / 8)));
        b.scales[8 + s % 4] |= static_cast<uint8_t>((scale_of(s) >> 4) << (2 * (s / 4)));
    }
    for (int e = 0; e < 256; ++e) {
        set_low2(b.qs, e, value_of(e) & 3);
        if (value_of(e) & 4) b.hmask[e % 32] |= static_cast<uint8_t>(1 << (4 * (e / 128) + (e % 128) / 32));
    }
    int8_t unpacked[16];
    q3_k_scales(b.scales, unpacked);
    for (int s = 0; s < 16; ++s) CHECK(unpacked[s] == scale_of(s) - 32);
    float y[256];
    dequantize_row(tensor_type::q3_k, &b, y, 256);
    for (int e = 0; e < 256; ++e) {
        CAPTURE(e);
        const float dl = mul(d_value, static_cast<float>(scale_of(e / 16) - 32));
        const int q = (value_of(e) & 3) - ((value_of(e) & 4) != 0 ? 0 : 4);
        CHECK(y[e] == mul(dl, static_cast<float>(q)));
    }
}

TEST_CASE("q5_K block decodes q4_K's scales and mins over 5-bit values") {
    const int sc[8] = {1, 2, 63, 17, 40, 5, 33, 62};
    const int m[8] = {0, 63, 7, 31, 48, 16, 1, 60};
    block_q5_k b;
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(d_value);
    b.dmin = fp32_to_fp16(0.0517f);
    const float dmin = fp16_to_fp32(b.dmin);
    pack_q4_k_scales(sc, m, b.scales);
    // Element 64c + l: low nibble of qs[32c + l] and bit 2c of qh[l];
    // element 64c + 32 + l: high nibble and bit 2c + 1.
    auto value_of = [](int e) { return random_value(e, 32); };
    for (int e = 0; e < 256; ++e) {
        const int c = e / 64, l = e % 32, high = (e % 64) / 32;
        b.qs[32 * c + l] |= static_cast<uint8_t>((value_of(e) & 15) << (4 * high));
        if (value_of(e) & 16) b.qh[l] |= static_cast<uint8_t>(1 << (2 * c + high));
    }
    float y[256];
    dequantize_row(tensor_type::q5_k, &b, y, 256);
    for (int e = 0; e < 256; ++e) {
        CAPTURE(e);
        const int j = e / 32;
        const float dl = mul(d_value, static_cast<float>(sc[j]));
        const float ml = mul(dmin, static_cast<float>(m[j]));
        CHECK(y[e] == mul_sub(dl, static_cast<float>(value_of(e)), ml));
    }
}

TEST_CASE("iq4_xs block decodes d * (scale - 32) * level[index] with 6-bit scales split over scales_l and scales_h") {
    block_iq4_xs b;
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(d_value);
    auto scale_of = [](int s) { return (s * 29 + 3) % 64; };
    for (int s = 0; s < 8; ++s) {
        b.scales_l[s / 2] |= static_cast<uint8_t>((scale_of(s) & 15) << (4 * (s % 2)));
        b.scales_h = static_cast<uint16_t>(b.scales_h | ((scale_of(s) >> 4) << (2 * s)));
    }
    auto index_of = [](int e) { return random_value(e, 16); };
    for (int e = 0; e < 256; ++e) set_nibble(b.qs + 16 * (e / 32), e % 32, index_of(e));
    for (int s = 0; s < 8; ++s) CHECK(iq4_xs_scale(b, s) == scale_of(s));
    float y[256];
    dequantize_row(tensor_type::iq4_xs, &b, y, 256);
    for (int e = 0; e < 256; ++e) {
        CAPTURE(e);
        const float dl = mul(d_value, static_cast<float>(scale_of(e / 32) - 32));
        CHECK(y[e] == mul(dl, static_cast<float>(levels[index_of(e)])));
    }
}

TEST_CASE("q8_1 quantization: q8_0's quants and scale, s = d * sum(qs)") {
    const int64_t n = 32 * 4;
    auto x = random_floats(n, 6, 2.0f);
    for (int j = 32; j < 64; ++j) x[j] = 0.0f;
    std::vector<block_q8_1> q(n / 32);
    std::vector<block_q8_0> r(n / 32);
    quantize_row(tensor_type::q8_1, x.data(), q.data(), n);
    quantize_row(tensor_type::q8_0, x.data(), r.data(), n);
    for (int64_t b = 0; b < n / 32; ++b) {
        CAPTURE(b);
        CHECK(q[b].d == r[b].d);
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
            CHECK(q[b].qs[j] == r[b].qs[j]);
            sum += q[b].qs[j];
        }
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
        CHECK(q[b].s == fp32_to_fp16(amax / 127.0f * static_cast<float>(sum)));
    }
    CHECK(q[1].s == fp32_to_fp16(0.0f));
}

TEST_CASE("llama.cpp-quantized files of every type dequantize to weights of the stated mean and spread") {
    // Random-weight files whose matrices were drawn as N(0, 0.04), N(0, 0.08)
    // for attn_q / attn_k and N(0, 0.05) for token_embd / output, then
    // quantized by llama.cpp: a wrong bit position, field order or scale
    // packing gives wildly wrong statistics; a right layout gives the drawn
    // standard deviation up to the quantization noise. (The order of the
    // elements within a block, which statistics cannot see, is pinned by
    // the hand-built blocks above.)
    const std::string dir = std::string(TACHYON_CONFORMANCE_DIR) + "/arch";
    if (!std::filesystem::exists(dir)) {
        MESSAGE("skipped: no conformance files at " << dir);
        return;
    }
    int n_checked[64] = {};
    for (const char* name : {"llama3.Q4_1.gguf", "llama3.Q5_0.gguf", "llama3.Q5_1.gguf", "llama3.Q5_K_M.gguf",
                             "llama3.Q3_K_M.gguf", "llama3.Q2_K.gguf", "llama3.IQ4_NL.gguf", "llama3.IQ4_XS.gguf",
                             "qwen2_896.Q4_K_M.gguf"}) {
        const std::string path = dir + "/" + name;
        if (!std::filesystem::exists(path)) {
            MESSAGE("skipped: " << path << " is missing");
            continue;
        }
        auto file = gguf_file::open(path);
        REQUIRE_MESSAGE(file.ok(), file.err().message);
        for (const gguf_tensor_info& t : (*file)->tensors()) {
            if (t.shape.size() != 2 || t.type == tensor_type::f32) continue;
            CAPTURE(path);
            CAPTURE(t.name);
            CAPTURE(to_string(t.type));
            REQUIRE(can_dequantize(t.type));
            const int64_t n_cols = t.shape[0], n_rows = t.shape[1];
            REQUIRE(t.n_bytes == row_size(t.type, n_cols) * static_cast<size_t>(n_rows));
            std::vector<float> row(static_cast<size_t>(n_cols));
            double sum = 0.0, sum2 = 0.0;
            for (int64_t r = 0; r < n_rows; ++r) {
                dequantize_row(t.type, t.data + r * row_size(t.type, n_cols), row.data(), n_cols);
                for (float v : row) {
                    sum += v;
                    sum2 += static_cast<double>(v) * v;
                }
            }
            const double n = static_cast<double>(n_rows * n_cols);
            const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
            const bool qk = t.name.find("attn_q.") != std::string::npos || t.name.find("attn_k.") != std::string::npos;
            const bool embd = t.name.rfind("token_embd", 0) == 0 || t.name.rfind("output", 0) == 0;
            const double expected_sd = qk ? 0.08 : embd ? 0.05 : 0.04;
            // Measured: |mean| <= 0.011 sd (the sampling noise of 32k
            // draws), sd within 1 % (q2_k: 3 %) of the drawn value.
            CHECK(std::fabs(mean) < 0.03 * expected_sd);
            CHECK(std::fabs(sd / expected_sd - 1.0) < 0.05);
            ++n_checked[static_cast<uint32_t>(t.type)];
        }
    }
    for (tensor_type t : {tensor_type::q4_1, tensor_type::q5_0, tensor_type::q5_1, tensor_type::iq4_nl, tensor_type::q2_k,
                          tensor_type::q3_k, tensor_type::q5_k, tensor_type::iq4_xs}) {
        CAPTURE(to_string(t));
        CHECK(n_checked[static_cast<uint32_t>(t)] > 0);
    }
}
