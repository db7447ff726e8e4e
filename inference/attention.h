// Causal attention of one query head over the keys and values of one
// sequence held in paged KV blocks. Head dimensions of common models (8 to
// 128) get a version with the dimension fixed at compile time, so the dot
// products and the weighted sum of values are fully vectorised.
#pragma once

#include <cstdint>

#include "inference/kernels.h"

namespace tachyon {

struct attention_args {
    const float* q;            // [head_dim] query of this head
    const float* const* k;     // [n_blocks] K block bases, offset to this KV head: rows of `stride`
    const float* const* v;     // [n_blocks] V block bases, offset to this KV head
    int block_size;            // positions per block
    int stride;                // floats between consecutive positions (n_kv_head * head_dim)
    int n_pos;                 // attend to positions [0, n_pos)
    float scale;               // 1 / sqrt(head_dim)
    float* scores;             // [n_pos] scratch
    float* out;                // [head_dim]
};

void attend(const attention_args& a, int head_dim, kernel_isa isa);

}  // namespace tachyon
