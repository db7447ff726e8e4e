// Causal attention of one query head over the keys and values of one
// sequence held in paged KV blocks. Head dimensions of common models (8 to
// 128) and the default block size get a version with both fixed at compile
// time: the scores of a block are block_size-wide multiply-adds over the
// transposed K (no horizontal sums), the weighted sum of V rows accumulates
// in registers.
#pragma once

#include <cstdint>

#include "inference/kernels.h"

namespace tachyon {

struct attention_args {
    const float* q;            // [head_dim] query of this head
    const float* const* k;     // [n_blocks] K blocks at this KV head's first dimension: [head_dim, block_size] (transposed)
    const float* const* v;     // [n_blocks] V block bases, offset to this KV head: rows of `stride`
    int block_size;            // positions per block
    int stride;                // floats between consecutive V positions (n_kv_head * head_dim)
    int n_pos;                 // attend to positions [0, n_pos)
    float scale;               // 1 / sqrt(head_dim)
    float* scores;             // [n_pos] scratch
    float* out;                // [head_dim]
};

void attend(const attention_args& a, int head_dim, kernel_isa isa);

// Several query rows over the same K/V blocks (the query heads of one KV
// head, for one or more consecutive tokens of one sequence): each K and V
// row loaded is used by every row, which divides the loads that bound
// attention by the number of rows (AVX-512: up to 8 rows in registers;
// AVX2: 4 at a time). Rows differ in q, n_pos, scores and out only.
constexpr int max_attention_rows = 8;
struct attention_row {
    const float* q;   // [head_dim]
    int n_pos;        // attend to positions [0, n_pos)
    float* scores;    // [max n_pos of the rows] scratch
    float* out;       // [head_dim]
};
void attend_rows(const attention_args& shared, const attention_row* rows, int n_rows, int head_dim, kernel_isa isa);

}  // namespace tachyon
