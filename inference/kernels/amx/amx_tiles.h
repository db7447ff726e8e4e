// What the AMX kernels share (kernels_amx.cpp, kernels_amx_quant.cpp,
// amx/attention_amx.cpp): the operand of ldtilecfg, a compiler barrier for memory
// that tiles load, the configuration of eight 16 x 64-byte tiles, and
// buffers on cache lines (base/line_vector.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "base/line_vector.h"

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

// All eight tiles 16 rows x 64 bytes (bf16: 16 x 32 operands, 16 x 16 f32 results).
__attribute__((target("amx-tile"))) inline void configure_tiles_16x64() {
    tile_config c;
    for (int i = 0; i < 8; ++i) c.rows[i] = 16, c.colsb[i] = 64;
    memory_barrier(&c);  // _tile_loadconfig declares a read of 8 bytes only
    _tile_loadconfig(&c);
}

}  // namespace tachyon::detail
