// Causal attention of one forward call's batch (many tokens of many
// sequences) over the paged KV cache, for one layer: stores the batch's K
// and V, plans the work in tiles of query rows that share a sequence and a
// KV head, and fans the tiles out over the context's threads. Runs of
// tokens of one sequence (prompt chunks, drafts to verify) take the AMX-BF16
// tiles where the CPU has them, over a copy of the sequence's K/V in tile
// order that is kept across calls; the rest take attend_rows().
//
// An architecture calls run() once per layer; the kernels it uses are in
// attention.h.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "inference/kernels/attention.h"
#include "inference/kernels/kernels.h"
#include "inference/kv/kv_cache.h"

namespace tachyon {

// Grouped-query heads: n_head query heads, n_head / n_head_kv of them per KV head.
struct attention_shape {
    int n_layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    float scale = 0.0f;    // score = scale · q·k; 0: 1 / sqrt(head_dim)
    float softcap = 0.0f;  // > 0: score = softcap · tanh(score / softcap) (gemma2)
    bool exact = false;    // f32 kernels only: no AMX-BF16 tiles (the reference computation)
};

// The tokens of one forward call as attention sees them, row t for token t.
struct attention_batch {
    std::span<const seq_id> seqs;        // [n] sequence of each token
    std::span<const int32_t> positions;  // [n] position of each token in its sequence
    const float* q;                      // [n, n_head * head_dim]     queries, RoPE applied
    const float* k;                      // [n, n_head_kv * head_dim]  keys, RoPE applied
    const float* v;                      // [n, n_head_kv * head_dim]
    float* out;                          // [n, n_head * head_dim]     attention output (before the output projection)
};

class batch_attention {
public:
    explicit batch_attention(const attention_shape& shape);
    batch_attention(const batch_attention&) = delete;
    batch_attention& operator=(const batch_attention&) = delete;

    // Writes each token's K and V at its position of its sequence in `layer`
    // of `kv` (the caller reserved the room, and every earlier position of
    // the sequence is in `kv` or earlier in the batch), then attends each
    // token's query heads over positions 0..its position of its sequence.
    // Two calls may run at once on different sequences (the engine's
    // prefill/decode split). window > 0: a token at position p sees only
    // positions p - window + 1 .. p (sliding-window layers).
    void run(kernel_context& ctx, const attention_batch& batch, kv_cache& kv, int layer, int window = 0);

    const attention_shape& shape() const { return shape_; }

private:
    // Runs of at least this many tokens of one sequence (prompt chunks,
    // drafts to verify) take the AMX-BF16 attention. A single token (two
    // query rows of the shipped model) fills too little of a 16-row tile:
    // decode measured 5 % slower on tiles than with AVX-512.
    static constexpr int min_tokens_bf16 = 2;

    // The K/V of sequences in AMX-BF16 tile order, per layer and KV head,
    // kept across calls: a call converts only the chunks of 32 positions
    // written since (kv_cache::generation), not the whole context.
    struct tile_copy {
        attention_kv_bf16 kv;
        std::vector<std::array<uint32_t, 5>> keys;  // per chunk: its two blocks, their generations, positions seen
    };
    struct sequence_tiles {
        std::vector<tile_copy> heads;  // [n_layer, n_head_kv]
    };

    attention_shape shape_;
    std::mutex tiles_mutex_;
    std::unordered_map<seq_id, std::unique_ptr<sequence_tiles>> tiles_;
};

}  // namespace tachyon
