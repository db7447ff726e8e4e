// Quantized block formats (the GGUF / ggml layouts) and row conversions.
//
// Weights arrive in GGUF files as rows of blocks; activations are quantized
// per matmul call into the format the weight type's dot product expects
// (q8_0 for q8_0/q4_0/q5_0/iq4_nl weights, q8_1 for q4_1/q5_1, q8_k for the
// k-quants and iq4_xs). Layouts are byte-exact with the files: every struct
// is read in place from the mapping.
#pragma once

#include <cstddef>
#include <cstdint>

#include "inference/gguf/tensor_type.h"

namespace tachyon {

constexpr int qk_32 = 32;   // elements per q8_0 / q4_0 / q4_1 / q5_0 / q5_1 / iq4_nl block
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

// q4_1: as q4_0 with unsigned nibbles and a min: x = d * nibble + m.
struct block_q4_1 {
    uint16_t d;            // fp16 scale
    uint16_t m;            // fp16 min
    uint8_t qs[qk_32 / 2];
};

// q5_0: 5-bit values, the low 4 bits as in q4_0 and bit 4 of element j in
// bit j of qh (a little-endian 32-bit word); x = (q - 16) * d.
struct block_q5_0 {
    uint16_t d;            // fp16 scale
    uint8_t qh[4];         // high bits
    uint8_t qs[qk_32 / 2]; // low nibbles
};

// q5_1: q5_0's 5-bit values, unsigned, with a min: x = d * q + m.
struct block_q5_1 {
    uint16_t d;            // fp16 scale
    uint16_t m;            // fp16 min
    uint8_t qh[4];
    uint8_t qs[qk_32 / 2];
};

// q8_1: activation format of the q4_1 / q5_1 dot products: q8_0 plus
// s = d * sum(qs), which carries the weights' min term.
struct block_q8_1 {
    uint16_t d;            // fp16 scale
    uint16_t s;            // fp16 d * sum(qs)
    int8_t qs[qk_32];
};

// iq4_nl: 4-bit indices into a fixed non-linear table of int8 levels,
// ordered as q4_0's nibbles; x = d * iq4_nl_values[index].
struct block_iq4_nl {
    uint16_t d;            // fp16 scale
    uint8_t qs[qk_32 / 2];
};

// The 16 levels of iq4_nl and iq4_xs.
inline constexpr int8_t iq4_nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// q2_K: 16 sub-blocks of 16, 2-bit values. scales[s] holds sub-block s's
// scale (low nibble) and min (high nibble); x = d * sc * q - dmin * m.
// Element 128h + 32j + l (l < 32) is bits 2j..2j+1 of qs[32h + l].
struct block_q2_k {
    uint8_t scales[qk_k / 16];
    uint8_t qs[qk_k / 4];
    uint16_t d;             // fp16 scale of the scales
    uint16_t dmin;          // fp16 scale of the mins
};

// q3_K: 16 sub-blocks of 16, 3-bit values: the low 2 bits in qs as in q2_K,
// the high bit of element 128h + 32j + l in bit 4h + j of hmask[l]. A clear
// high bit means minus 4: x = d * (sc - 32) * (q2 - (hbit ? 0 : 4)), with
// 6-bit scales sc packed in 12 bytes (q3_k_scales).
struct block_q3_k {
    uint8_t hmask[qk_k / 8];
    uint8_t qs[qk_k / 4];
    uint8_t scales[12];
    uint16_t d;             // fp16 super-block scale
};

// q5_K: q4_K plus a fifth bit: element 64c + l of the low nibbles gets bit
// 2c of qh[l], element 64c + 32 + l of the high ones bit 2c + 1;
// x = d * sc_j * q - dmin * m_j as in q4_K.
struct block_q5_k {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];     // as in q4_K
    uint8_t qh[qk_k / 8];
    uint8_t qs[qk_k / 2];
};

// iq4_xs: 8 sub-blocks of 32 iq4_nl indices (sub-block b in qs[16b..16b+15],
// ordered as iq4_nl's), each with a 6-bit scale ls_b: the low 4 bits in
// nibble b % 2 of scales_l[b / 2], the high 2 in bits 2b..2b+1 of scales_h;
// x = d * (ls_b - 32) * iq4_nl_values[index].
struct block_iq4_xs {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[qk_k / 64];
    uint8_t qs[qk_k / 2];
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
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_1) == 36);
static_assert(sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_q2_k) == 84);
static_assert(sizeof(block_q3_k) == 110);
static_assert(sizeof(block_q5_k) == 176);
static_assert(sizeof(block_iq4_xs) == 136);

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

// The 16 scales of a q3_K block, 6 bits each, minus 32. Scale s has its low
// 4 bits in nibble s / 8 of packed[s % 8] and its high 2 bits in bits
// 2(s / 4)..2(s / 4)+1 of packed[8 + s % 4].
inline void q3_k_scales(const uint8_t* packed, int8_t out[16]) {
    for (int s = 0; s < 16; ++s) {
        const int low = (packed[s % 8] >> (4 * (s / 8))) & 0x0f;
        const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
        out[s] = static_cast<int8_t>((low | (high << 4)) - 32);
    }
}

// 6-bit scale of sub-block b (0..7) of an iq4_xs block, before the - 32.
inline int iq4_xs_scale(const block_iq4_xs& x, int b) {
    return ((x.scales_l[b / 2] >> (4 * (b % 2))) & 0x0f) | (((x.scales_h >> (2 * b)) & 3) << 4);
}

// Bytes of one row of n elements of `type` (n a multiple of the block size).
size_t row_size(tensor_type type, int64_t n);

// True for the types dequantize_row handles: f32, f16, bf16, q8_0, q4_0,
// q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs.
bool can_dequantize(tensor_type type);
// True for the types quantize_row produces: f32, f16, bf16, q8_0, q4_0,
// q8_1, q8_k.
bool can_quantize(tensor_type type);

// dst[0..n) = the values of the row at `src`. n must be a multiple of the
// block size of `type`; the type must satisfy can_dequantize. The values are
// ggml's bit for bit: the same float operations in the same order.
void dequantize_row(tensor_type type, const void* src, float* dst, int64_t n);

// Quantizes n floats into row_size(type, n) bytes at dst, rounding to nearest
// as ggml's reference quantizers do (q8_0: d = max|x| / 127; q4_0: d = the
// signed value of largest magnitude / -8; q8_1: as q8_0, s = d * sum(qs);
// q8_k: d = max|x| / 127).
void quantize_row(tensor_type type, const float* src, void* dst, int64_t n);

void quantize_row_q8_0(const float* src, block_q8_0* dst, int64_t n);
void quantize_row_q8_1(const float* src, block_q8_1* dst, int64_t n);
void quantize_row_q4_0(const float* src, block_q4_0* dst, int64_t n);
void quantize_row_q8_k(const float* src, block_q8_k* dst, int64_t n);

}  // namespace tachyon
