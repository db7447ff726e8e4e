// Causal attention of one query head over the keys and values of one
// sequence held in paged KV blocks. Head dimensions of common models (8 to
// 128) and the default block size get a version with both fixed at compile
// time: the scores of a block are block_size-wide multiply-adds over the
// transposed K (no horizontal sums), the weighted sum of V rows accumulates
// in registers.
#pragma once

#include <cstdint>
#include <vector>

#include "inference/kernels/kernels.h"
#include "base/line_vector.h"

namespace tachyon {

struct attention_args {
    const float* q;            // [head_dim] query of this head
    const float* const* k;     // [n_blocks] K blocks at this KV head's first dimension: [head_dim, block_size] (transposed)
    const float* const* v;     // [n_blocks] V block bases, offset to this KV head: rows of `stride`
    int block_size;            // positions per block
    int stride;                // values between consecutive V positions (n_kv_head * head_dim)
    int n_pos;                 // attend to positions [0, n_pos)
    float scale;               // score = scale · q·k (1 / sqrt(head_dim) unless the model says otherwise)
    float* scores;             // [n_pos] scratch
    float* out;                // [head_dim]
    // Features the fast kernels lack: a call that sets one runs the
    // reference kernel, which has them (on every kernel set).
    float softcap = 0.0f;      // > 0: score = softcap · tanh(score / softcap) (gemma2)
    int window = 0;            // > 0: a row of n_pos sees only positions [n_pos - window, n_pos) (sliding window)
    // The K and V are read once (a decode step's rows): the row kernels ask
    // for the blocks ahead of the one they read. Where the rows of several
    // calls share the K and V (a prompt's tokens), the requests only cost.
    bool stream = false;
    // An fp16 KV cache (kv_cache_config::f16): its blocks here, as k and v
    // are laid out, and k, v unused; the kernels widen each value as they load it.
    const uint16_t* const* k16 = nullptr;
    const uint16_t* const* v16 = nullptr;
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

// Prompt processing on AMX-BF16 tiles (cpu_has_amx_bf16(), head_dim 32 or
// 64, block size 16). Each f32 value of q, K, V and the softmax weights is
// split into a bf16 high part and a bf16 remainder; the tiles multiply
// hi·hi + hi·lo + lo·hi and accumulate in f32, so a product keeps about 16
// bits of its 24 (the lo·lo term left out is 2^-16 of it). One tile multiply
// does 16 rows x 16 positions x 32 dimensions, which AVX-512 spends 512
// multiply-adds on.
//
// The K and V of one sequence and KV head (f32, or fp16 which f32 holds
// exactly) are converted once into tile order (attention_kv_bf16) and then serve every group of up to 16 query
// rows of the prompt chunk.
bool attention_bf16_supported(int head_dim, int block_size);
struct attention_kv_bf16 {
    int head_dim = 0;
    int n_pos = 0;
    std::vector<float> chunk_norm;  // per 32 positions, the largest |k| (bounds the scores)
    // K: per block of 16 positions and 32 dimensions, a hi and a lo tile of
    // 16 dimension pairs x 16 positions x 2; V: per 32 positions and 16
    // dimensions, a hi and a lo tile of 16 position pairs x 16 dimensions x
    // 2. A pair is dimensions (or positions) i and i + 16 of its 32.
    line_vector<uint16_t> k, v;
};
// Converts positions [0, n_pos) of the blocks in `a` (k, v, stride; block
// size 16); positions past n_pos read as zero. The chunks of 32 positions
// before first_chunk are kept as `out` has them (converted by an earlier
// call from the same positions).
void convert_kv_bf16(const attention_args& a, int head_dim, int n_pos, attention_kv_bf16& out, int first_chunk = 0);
// Up to 16 rows over converted K/V (rows' n_pos <= kv.n_pos).
constexpr int max_attention_rows_bf16 = 16;
void attend_rows_bf16(const attention_kv_bf16& kv, const attention_row* rows, int n_rows, float scale);

}  // namespace tachyon
