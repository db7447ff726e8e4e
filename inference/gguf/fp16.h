// Half-precision (IEEE fp16) and bfloat16 conversions to and from fp32.
//
// The scalar functions are exact: fp16 -> fp32 and bf16 -> fp32 are lossless,
// fp32 -> fp16 and fp32 -> bf16 round to nearest, ties to even, and keep
// infinities, NaNs (quieted) and subnormals. The hot loops convert eight at a
// time with F16C in kernels_avx2.cpp; these scalar forms serve the reference
// kernels, the quantizers and the tests.
#pragma once

#include <bit>
#include <cstdint>

namespace tachyon {

inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf or NaN
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);  // 112 = 127 - 15
    } else if (mant == 0) {
        bits = sign;  // signed zero
    } else {
        // Subnormal: value = mant * 2^-24; normalise it.
        int e = -1;
        do {
            ++e;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

inline uint16_t fp32_to_fp16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN, quiet
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504: inf
    if (abs < 0x38800000u) {
        // Result is subnormal (or zero): value / 2^-24, rounded to nearest even.
        if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
        const uint32_t e = abs >> 23;
        const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 113 - e + 13
        uint32_t q = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) ++q;
        return static_cast<uint16_t>(sign | q);
    }
    // Normal: rebias the exponent and round the low 13 bits; a carry out of
    // the mantissa correctly bumps the exponent.
    uint32_t r = abs - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
}

inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN, quiet
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace tachyon
