// Random inputs the kernel tests share: activations drawn from a standard
// normal, and fp16 scales written into a block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "inference/gguf/fp16.h"

namespace tachyon::kernel_test {

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// v as fp16 at p (a block's d, dmin or m).
inline void put_half(std::byte* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

}  // namespace tachyon::kernel_test
