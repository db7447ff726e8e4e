#include "inference/gguf/fp16.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>

using namespace tachyon;

TEST_CASE("fp16 known values convert both ways") {
    CHECK(fp32_to_fp16(1.0f) == 0x3c00);
    CHECK(fp32_to_fp16(-2.0f) == 0xc000);
    CHECK(fp32_to_fp16(0.0f) == 0x0000);
    CHECK(fp32_to_fp16(-0.0f) == 0x8000);
    CHECK(fp32_to_fp16(65504.0f) == 0x7bff);
    CHECK(fp32_to_fp16(0.1f) == 0x2e66);
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
    CHECK(fp16_to_fp32(0x3c00) == 1.0f);
    CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));
    CHECK(fp16_to_fp32(0x03ff) == std::ldexp(1023.0f, -24));
    CHECK(fp16_to_fp32(0xfbff) == -65504.0f);
    CHECK(std::isinf(fp16_to_fp32(0x7c00)));
    CHECK(std::isnan(fp16_to_fp32(0x7e00)));
}

TEST_CASE("fp32 to fp16 rounds to nearest, ties to even, and saturates to infinity") {
    CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie, even stays
    CHECK(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie, odd rounds up
    CHECK(fp32_to_fp16(1.0f + std::ldexp(1.1f, -11)) == 0x3c01);      // above the tie
    CHECK(fp32_to_fp16(65519.0f) == 0x7bff);
    CHECK(fp32_to_fp16(65520.0f) == 0x7c00);
    CHECK(fp32_to_fp16(std::numeric_limits<float>::infinity()) == 0x7c00);
    CHECK(fp32_to_fp16(-std::numeric_limits<float>::infinity()) == 0xfc00);
    CHECK((fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()) & 0x7fff) > 0x7c00);
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);             // tie between 0 and the smallest subnormal
    CHECK(fp32_to_fp16(std::ldexp(1.5f, -25)) == 0x0001);
    CHECK(fp32_to_fp16(std::ldexp(3.0f, -25)) == 0x0002);             // tie 1.5 ulp -> even
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -30)) == 0x0000);
}

TEST_CASE("every finite fp16 value survives fp16 -> fp32 -> fp16") {
    int n_bad = 0;
    for (uint32_t h = 0; h < 0x10000; ++h) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaN payloads
        if (fp32_to_fp16(fp16_to_fp32(static_cast<uint16_t>(h))) != h) ++n_bad;
    }
    CHECK(n_bad == 0);
}

TEST_CASE("fp32 to fp16 matches rounding the exact value to the nearer neighbour") {
    // Midpoints between consecutive fp16 values and points just off them.
    int n_bad = 0;
    for (uint32_t h = 0; h < 0x7bff; ++h) {
        const float lo = fp16_to_fp32(static_cast<uint16_t>(h));
        const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
        const float mid = lo + (hi - lo) / 2;  // exact in fp32
        const uint16_t even = (h & 1) == 0 ? static_cast<uint16_t>(h) : static_cast<uint16_t>(h + 1);
        if (fp32_to_fp16(mid) != even) ++n_bad;
        if (fp32_to_fp16(std::nextafter(mid, 0.0f)) != h) ++n_bad;
        if (fp32_to_fp16(std::nextafter(mid, 1e9f)) != h + 1) ++n_bad;
    }
    CHECK(n_bad == 0);
}

TEST_CASE("bf16 conversions round to nearest even and keep NaN a NaN") {
    CHECK(fp32_to_bf16(1.0f) == 0x3f80);
    CHECK(bf16_to_fp32(0x3f80) == 1.0f);
    CHECK(bf16_to_fp32(0xc040) == -3.0f);
    const float tie = std::bit_cast<float>(0x3f808000u);  // halfway between 0x3f80 and 0x3f81
    CHECK(fp32_to_bf16(tie) == 0x3f80);
    const float tie_odd = std::bit_cast<float>(0x3f818000u);
    CHECK(fp32_to_bf16(tie_odd) == 0x3f82);
    CHECK(fp32_to_bf16(std::bit_cast<float>(0x3f808001u)) == 0x3f81);
    CHECK(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    CHECK(std::isnan(bf16_to_fp32(fp32_to_bf16(std::bit_cast<float>(0x7f800001u)))));  // low-payload NaN stays NaN
    for (uint32_t h = 0; h < 0x10000; h += 7) {
        if ((h & 0x7f80) == 0x7f80) continue;
        CHECK(fp32_to_bf16(bf16_to_fp32(static_cast<uint16_t>(h))) == h);
    }
}
