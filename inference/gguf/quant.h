// Quantized block formats (the GGUF / ggml layouts) and row conversions.
//
// Weights arrive in GGUF files as rows of blocks; activations are quantized
// per matmul call into the format the weight type's dot product expects
// (q8_0 for q8_0/q4_0 weights, q8_k for the k-quants). Layouts are byte-exact
// with the files: every struct is read in place from the mapping.
#pragma once

#include <cstddef>
#include <cstdint>

#include "inference/gguf/tensor_type.h"

namespace tachyon {

constexpr int qk_32 = 32;   // elements per q8_0 / q4_0 block
constexpr int qk_k = 256;   // elements per k-quant super-block

// q8_0: x[i] = qs[i] * d.
struct block_q8_0 {
    uint16_t d;       // fp16 scale
    int8_t qs[qk_32];
};

// q4_0: element j in the low nibble of qs[j], element j + 16 in the high
// nibble; x = (nibble - 8) * d.
struct block_q4_0 {
    uint16_t d;            // fp16 scale
    uint8_t qs[qk_32 / 2];
};

// q4_K: 8 sub-blocks of 32. Sub-block j has a 6-bit scale sc_j and min m_j
// packed in `scales`; x = d * sc_j * nibble - dmin * m_j. Elements 64c..64c+31
// are the low nibbles of qs[32c..32c+31], elements 64c+32..64c+63 the high ones.
struct block_q4_k {
    uint16_t d;             // fp16 scale of the scales
    uint16_t dmin;          // fp16 scale of the mins
    uint8_t scales[12];     // 8 scales and 8 mins, 6 bits each
    uint8_t qs[qk_k / 2];   // nibbles
};

// q6_K: 16 sub-blocks of 16, x = d * scales[s] * (q - 32) with q a 6-bit value:
// low 4 bits in ql, high 2 bits in qh (see dequantize_q6_k for the order).
struct block_q6_k {
    uint8_t ql[qk_k / 2];   // low 4 bits
    uint8_t qh[qk_k / 4];   // high 2 bits
    int8_t scales[qk_k / 16];
    uint16_t d;             // fp16 super-block scale
};

// q8_K: activation format of the k-quant dot products. bsums[g] is the sum of
// qs[16g .. 16g+15], which lets the dot product apply mins and offsets per
// sub-block without touching the quants again.
struct block_q8_k {
    float d;
    int8_t qs[qk_k];
    int16_t bsums[qk_k / 16];
};

static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_k) == 144);
static_assert(sizeof(block_q6_k) == 210);
static_assert(sizeof(block_q8_k) == 292);

// Scale and min of sub-block j (0..7) of a q4_K block, 6 bits each.
inline void q4_k_scale_min(int j, const uint8_t* scales, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = scales[j] & 63;
        m = scales[j + 4] & 63;
    } else {
        sc = static_cast<uint8_t>((scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

// Bytes of one row of n elements of `type` (n a multiple of the block size).
size_t row_size(tensor_type type, int64_t n);

// True for the types dequantize_row handles: f32, f16, bf16, q8_0, q4_0, q4_k, q6_k.
bool can_dequantize(tensor_type type);
// True for the types quantize_row produces: f32, f16, bf16, q8_0, q4_0, q8_k.
bool can_quantize(tensor_type type);

// dst[0..n) = the values of the row at `src`. n must be a multiple of the
// block size of `type`; the type must satisfy can_dequantize.
void dequantize_row(tensor_type type, const void* src, float* dst, int64_t n);

// Quantizes n floats into row_size(type, n) bytes at dst, rounding to nearest
// as ggml's reference quantizers do (q8_0: d = max|x| / 127; q4_0: d = the
// signed value of largest magnitude / -8; q8_k: d = max|x| / 127).
void quantize_row(tensor_type type, const float* src, void* dst, int64_t n);

void quantize_row_q8_0(const float* src, block_q8_0* dst, int64_t n);
void quantize_row_q4_0(const float* src, block_q4_0* dst, int64_t n);
void quantize_row_q8_k(const float* src, block_q8_k* dst, int64_t n);

}  // namespace tachyon
