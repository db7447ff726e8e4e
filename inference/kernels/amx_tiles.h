// What the AMX kernels share (kernels_amx.cpp, attention.cpp): the operand
// of ldtilecfg, and a compiler barrier for memory that tiles load.
#pragma once

#include <cstdint>

namespace tachyon::detail {

// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) tile_config {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

// GCC's tileloadd does not tell the compiler it reads memory: what a tile
// loads must be stored before this.
inline void memory_barrier(const void* p) { __asm__ volatile("" : : "r"(p) : "memory"); }

}  // namespace tachyon::detail
