// The rows-in-lanes layouts of q4_K and q6_K batches: a group of 8 weight
// rows laid out again, block by block, so that one token's 4 activation
// bytes, broadcast, multiply into every row's sum at once. The AVX2 tiles
// (kernels_avx2_kquants.cpp) read them as they are; the AVX-512 tiles
// (kernels_avx512_kquants.cpp) merge two groups into one of 16 rows.
#pragma once

#include <cstdint>

#include "inference/kernels/kernels_internal.h"

namespace tachyon::detail {

struct alignas(32) q4_k_rows {
    uint32_t quants[64][8];  // [8s + k][row]: bytes 4k..4k+3 of sub-block s (0..15 each; q5_K 0..31)
    uint32_t scales[8][8];   // [s][row]: sub-block s's scale in both int16 halves
    uint32_t mins[4][8];     // [p][row]: the mins of sub-blocks 2p (low int16) and 2p + 1 (high)
    float d[8], dmin[8];
};

struct alignas(32) q6_k_rows {
    uint32_t quants[64][8];  // [dword][row]: elements 4k..4k+3 of the block, 0..63 each
    uint32_t scales[16][8];  // [s][row]: sub-block s's scale in both int16 halves
    uint32_t pairs[8][8];    // [p][row]: the scales of sub-blocks 2p (low int16) and 2p + 1 (high)
    float d[8];
};

// Rows r.. r + n - 1 (n <= 8) of a's weights, blocks 0..nb - 1, into
// out[0..nb - 1]; rows past n repeat row r (their sums are never stored).
// Each asks for the next group's rows, into L2. Need AVX2.
__attribute__((target("avx2,fma,f16c"))) void lay_out_q4_k_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q4_k_rows* out);
// q5_K as q4_k_rows, its values 0..31: int16 sums of its products overflow
// where q4_K's do not, so the AVX2 tile sums 4 maddubs at a time, not 8.
__attribute__((target("avx2,fma,f16c"))) void lay_out_q5_k_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q4_k_rows* out);
// iq4_xs as q4_k_rows (levels + 128, scales less 32, 128 * scale as the
// mins, d as dmin), for int32 tiles too.
__attribute__((target("avx2,fma,f16c"))) void lay_out_iq4_xs_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q4_k_rows* out);
__attribute__((target("avx2,fma,f16c"))) void lay_out_q6_k_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q6_k_rows* out);
// The same two layouts from the weights packed at load (a.panels: rows r..
// r + 7 are half (r / 8) % 2 of group r / 16, padded with zero rows; r a
// multiple of 8): each register of them is one load, with no transposition
// (kernels_k_packed.cpp). lay_out_q4_k_rows8, lay_out_q5_k_rows8 and
// lay_out_q6_k_rows8 take them where a.panels is set.
void lay_out_q4_k_rows8_packed(const gemm_args& a, int64_t r, int64_t nb, q4_k_rows* out);
void lay_out_q5_k_rows8_packed(const gemm_args& a, int64_t r, int64_t nb, q4_k_rows* out);
void lay_out_q6_k_rows8_packed(const gemm_args& a, int64_t r, int64_t nb, q6_k_rows* out);

}  // namespace tachyon::detail
