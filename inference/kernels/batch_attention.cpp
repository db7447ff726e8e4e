#include "inference/kernels/batch_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/assert.h"

namespace tachyon {

namespace {

// A layer's attention tiles are split over the threads only when each part
// gets at least this many multiply-adds (a few microseconds), as a matmul
// only from min_parallel_matmul_bytes: below it waking the other thread
// costs more than it saves. Before, 16 Ki multiply-adds a part were enough,
// and the shipped 1M model (head size 32, 2 KV heads) split every layer's
// two tiles at 64 positions: its decode on two threads was 15 % slower
// than on one. Measured with `tachyon bench decode -m incident-analyst.gguf
// -p 64 -n 128 -d D`, tg128 on 2 threads against 1 (Zen 5, 2 cores): at
// D = 0 even, 256 1.04x, 512 1.07x, 1024 1.10x, 2048 1.14x; pp64 1.2-1.65x.
// 64 and 256 Ki measured the same within noise.
constexpr int64_t min_parallel_attention_macs = int64_t{1} << 17;

// What a chunk of 32 positions of a sequence's tile copy was made from:
// its two blocks (-1 past the sequence), their write generations, and how
// many of its positions were seen.
std::array<uint32_t, 5> chunk_key(const kv_cache& kv, int layer, std::span<const int> blocks, int chunk, int n_pos) {
    std::array<uint32_t, 5> key{};
    for (int h = 0; h < 2; ++h) {
        const size_t b = static_cast<size_t>(2 * chunk + h);
        const bool in = b < blocks.size() && 32 * chunk + 16 * h < n_pos;
        key[static_cast<size_t>(2 * h)] = in ? static_cast<uint32_t>(blocks[b]) : ~0u;
        key[static_cast<size_t>(2 * h + 1)] = in ? kv.generation(layer, blocks[b]) : 0u;
    }
    key[4] = static_cast<uint32_t>(std::min(32, n_pos - 32 * chunk));
    return key;
}

// base(block) + off for every block of a sequence, into `out`.
template <class T, class Base>
const T* const* block_bases(std::span<const int> blocks, size_t off, std::vector<const T*>& out, const Base& base) {
    out.resize(blocks.size());
    for (size_t b = 0; b < blocks.size(); ++b) out[b] = base(blocks[b]) + off;
    return out.data();
}

// Points `a` at the K and V blocks of KV head g of a sequence (`blocks`,
// layer il), in the vectors of the cache's element type.
void bind_blocks(const kv_cache& kv, int il, std::span<const int> blocks, int g, int hd, attention_args& a, std::vector<const float*>& k,
                 std::vector<const float*>& v, std::vector<const uint16_t*>& k16, std::vector<const uint16_t*>& v16) {
    const size_t k_off = static_cast<size_t>(g) * hd * kv.config().block_size, v_off = static_cast<size_t>(g) * hd;
    if (kv.config().f16) {
        a.k16 = block_bases(blocks, k_off, k16, [&](int b) { return kv.k_block16(il, b); });
        a.v16 = block_bases(blocks, v_off, v16, [&](int b) { return kv.v_block16(il, b); });
    } else {
        a.k = block_bases(blocks, k_off, k, [&](int b) { return kv.k_block(il, b); });
        a.v = block_bases(blocks, v_off, v, [&](int b) { return kv.v_block(il, b); });
    }
}

}  // namespace

batch_attention::batch_attention(const attention_shape& shape) : shape_(shape) {
    TACHYON_ASSERT(shape.n_layer > 0 && shape.n_head_kv > 0 && shape.head_dim > 0 && shape.n_head % shape.n_head_kv == 0,
                   "batch_attention: n_head must be a multiple of n_head_kv");
}

void batch_attention::run(kernel_context& ctx, const attention_batch& batch, kv_cache& kv, int il, int window) {
    const attention_shape& sh = shape_;
    const size_t n = batch.seqs.size();
    TACHYON_ASSERT(batch.positions.size() == n, "batch_attention: one position per token");
    TACHYON_ASSERT(il >= 0 && il < sh.n_layer, "batch_attention: layer out of range");
    const int hd = sh.head_dim, n_q = sh.n_head * sh.head_dim, n_kv = sh.n_head_kv * sh.head_dim;
    TACHYON_ASSERT(kv.config().n_kv_embd == n_kv, "batch_attention: the KV cache rows are not n_head_kv * head_dim");

    // The batch's own K/V first: every token attends to the positions before it in the batch too.
    for (size_t t = 0; t < n; ++t) {
        const int pos = batch.positions[t];
        const seq_id s = batch.seqs[t];
        kv.write_k(il, s, pos, batch.k + t * n_kv);
        kv.write_v(il, s, pos, batch.v + t * n_kv);
    }

    const int group = sh.n_head / sh.n_head_kv;
    const int bs = kv.config().block_size;
    const float scale = sh.scale > 0.0f ? sh.scale : 1.0f / std::sqrt(static_cast<float>(hd));
    const kernel_isa isa = ctx.isa();
    // Runs of at least min_tokens_bf16 tokens go to AMX-BF16 tiles of 16
    // rows, where the CPU has them; the tiles have no softcap nor window,
    // and keep about 16 bits of a product, which the exact computation does not allow.
    const bool plain = sh.softcap <= 0.0f && window <= 0 && !sh.exact;
    const bool bf16 = plain && isa >= kernel_isa::amx && group <= max_attention_rows_bf16 && attention_bf16_supported(hd, bs);
    // Tiles: query rows (head, token) that share a KV head and a sequence:
    // the heads of one group, for consecutive tokens.
    struct tile {
        size_t t0;       // first batch token
        int n_tokens;    // consecutive tokens of one sequence
        int g;           // KV head
        int h0, n_heads; // query heads h0 .. h0 + n_heads - 1 of group g
        int run;         // prompt run whose converted K/V the tile reads (AMX-BF16), or -1
        bool single;     // the only token of its run: nothing else reads its K and V
    };
    struct prompt_run {
        seq_id seq;
        int n_pos;  // positions the run's last token sees
    };
    // Reused by every call on this thread: no allocation per layer once grown.
    thread_local std::vector<tile> tiles;
    thread_local std::vector<prompt_run> runs;
    tiles.clear();
    runs.clear();
    const int heads_per_tile = std::min(group, max_attention_rows);
    const int tokens_per_tile = std::max(1, max_attention_rows / heads_per_tile);
    const int tokens_per_tile_bf16 = max_attention_rows_bf16 / group;
    int max_pos = 0;
    for (size_t t = 0; t < n;) {
        size_t run = 1;  // tokens of the same sequence at consecutive positions
        while (t + run < n && batch.seqs[t + run] == batch.seqs[t] && batch.positions[t + run] == batch.positions[t + run - 1] + 1)
            ++run;
        for (size_t k = t; k < t + run; ++k) max_pos = std::max(max_pos, batch.positions[k]);
        if (bf16 && run >= static_cast<size_t>(min_tokens_bf16)) {
            const int r = static_cast<int>(runs.size());
            runs.push_back({batch.seqs[t], batch.positions[t + run - 1] + 1});
            for (size_t t0 = t; t0 < t + run; t0 += static_cast<size_t>(tokens_per_tile_bf16))
                for (int g = 0; g < sh.n_head_kv; ++g)
                    tiles.push_back({t0, static_cast<int>(std::min(t + run - t0, static_cast<size_t>(tokens_per_tile_bf16))), g, g * group, group, r, false});
        } else {
            for (size_t t0 = t; t0 < t + run; t0 += static_cast<size_t>(tokens_per_tile))
                for (int g = 0; g < sh.n_head_kv; ++g)
                    for (int h0 = g * group; h0 < (g + 1) * group; h0 += heads_per_tile)
                        tiles.push_back({t0, static_cast<int>(std::min(t + run - t0, static_cast<size_t>(tokens_per_tile))), g, h0,
                                         std::min(heads_per_tile, (g + 1) * group - h0), -1, run == 1});
        }
        t += run;
    }
    // The K and V of every prompt run's sequence in tile order, brought up
    // to date once for all of the run's tiles.
    thread_local std::vector<sequence_tiles*> run_tiles;
    run_tiles.clear();
    if (!runs.empty()) {
        std::lock_guard lock(tiles_mutex_);
        // Copies of sequences that are gone, dropped at every call with
        // prompt runs: with sliding-window layers first (gemma) layer 0 has none.
        std::erase_if(tiles_, [&](const auto& e) { return !kv.contains(e.first); });
        for (const prompt_run& pr : runs) {
            auto& t = tiles_[pr.seq];
            if (!t) {
                t = std::make_unique<sequence_tiles>();
                t->heads.resize(static_cast<size_t>(sh.n_layer) * sh.n_head_kv);
            }
            run_tiles.push_back(t.get());
        }
    }
    // The worker threads see these through references: a thread_local named
    // inside the lambdas would be each worker's own, empty one.
    const std::vector<prompt_run>& run_list = runs;
    const std::vector<sequence_tiles*>& run_copies = run_tiles;
    if (!runs.empty()) {
        const int64_t n_conv = static_cast<int64_t>(runs.size()) * sh.n_head_kv;
        ctx.parallel_for(n_conv, 1, [&](int64_t begin, int64_t end) {
            thread_local std::vector<const float*> k_blocks, v_blocks;
            thread_local std::vector<const uint16_t*> k16_blocks, v16_blocks;
            for (int64_t i = begin; i < end; ++i) {
                const size_t r = static_cast<size_t>(i / sh.n_head_kv);
                const prompt_run& pr = run_list[r];
                // A sequence with several runs in the batch is converted once, for its last.
                bool later = false;
                for (size_t q = r + 1; q < run_list.size(); ++q) later = later || run_list[q].seq == pr.seq;
                if (later) continue;
                const int g = static_cast<int>(i % sh.n_head_kv);
                tile_copy& tc = run_copies[r]->heads[static_cast<size_t>(il * sh.n_head_kv + g)];
                std::span<const int> blocks = kv.block_table(pr.seq);
                const int n_chunks = (pr.n_pos + 31) / 32;
                int first = 0;
                std::vector<std::array<uint32_t, 5>>& keys = tc.keys;
                keys.resize(std::min(keys.size(), static_cast<size_t>(n_chunks)));
                for (; first < static_cast<int>(keys.size()); ++first) {
                    const std::array<uint32_t, 5> key = chunk_key(kv, il, blocks, first, pr.n_pos);
                    if (key != keys[static_cast<size_t>(first)]) break;
                }
                keys.resize(static_cast<size_t>(n_chunks));
                for (int ch = first; ch < n_chunks; ++ch) keys[static_cast<size_t>(ch)] = chunk_key(kv, il, blocks, ch, pr.n_pos);
                attention_args a{nullptr, nullptr, nullptr, bs, n_kv, 0, scale, nullptr, nullptr};
                bind_blocks(kv, il, blocks, g, hd, a, k_blocks, v_blocks, k16_blocks, v16_blocks);
                convert_kv_bf16(a, hd, pr.n_pos, tc.kv, first);
            }
        });
    }
    // Split only when the work pays for the fan-out: each part at least
    // min_parallel_attention_macs multiply-adds (q.k and p.v of its tiles'
    // rows over the positions they see).
    int64_t macs = 0;
    for (const tile& tl : tiles)
        macs += static_cast<int64_t>(batch.positions[tl.t0 + static_cast<size_t>(tl.n_tokens) - 1] + 1) * tl.n_tokens * tl.n_heads;
    macs *= 2 * static_cast<int64_t>(hd);
    const int64_t n_tiles = static_cast<int64_t>(tiles.size());
    const int64_t grain =
        macs < 2 * min_parallel_attention_macs ? n_tiles : std::max<int64_t>(1, n_tiles * min_parallel_attention_macs / macs);
    const std::vector<tile>& work = tiles;
    ctx.parallel_for(static_cast<int64_t>(work.size()), grain, [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> scores;          // [max_attention_rows, max_pos + 1]
        thread_local std::vector<const float*> k_blocks, v_blocks;  // [n_blocks of the sequence], f32 cache
        thread_local std::vector<const uint16_t*> k16_blocks, v16_blocks;  // or fp16
        const size_t stride = static_cast<size_t>(max_pos + 1);
        if (scores.size() < stride * max_attention_rows) scores.resize(stride * max_attention_rows);
        seq_id bound = -1;
        int bound_g = -1;
        attention_args shared{nullptr, nullptr, nullptr, bs, n_kv, 0, scale, nullptr, nullptr, sh.softcap, window};
        for (int64_t w = begin; w < end; ++w) {
            const tile& tl = work[static_cast<size_t>(w)];
            attention_row rows[max_attention_rows_bf16];
            int n_rows = 0;
            for (int i = 0; i < tl.n_tokens; ++i) {
                const size_t t = tl.t0 + static_cast<size_t>(i);
                for (int h = tl.h0; h < tl.h0 + tl.n_heads; ++h, ++n_rows) {
                    const size_t off = t * n_q + static_cast<size_t>(h) * hd;
                    rows[n_rows] = {batch.q + off, batch.positions[t] + 1, scores.data() + static_cast<size_t>(n_rows % max_attention_rows) * stride,
                                    batch.out + off};
                }
            }
            if (tl.run >= 0) {
                attend_rows_bf16(run_copies[static_cast<size_t>(tl.run)]->heads[static_cast<size_t>(il * sh.n_head_kv + tl.g)].kv, rows, n_rows, scale);
                continue;
            }
            // Consecutive tiles mostly share the sequence and KV head: bind block bases once.
            if (batch.seqs[tl.t0] != bound || tl.g != bound_g) {
                bound = batch.seqs[tl.t0];
                bound_g = tl.g;
                bind_blocks(kv, il, kv.block_table(bound), tl.g, hd, shared, k_blocks, v_blocks, k16_blocks, v16_blocks);
            }
            // A lone token of its sequence (a decode step) reads its K and V
            // once; a prompt's tiles read the same ones token after token.
            // Zen 5, 0.5B shape, 2 threads, 2048 positions in (`bench decode
            // -d 2048`): decode 92 -> 106-109 tokens/s; asked for in a
            // prompt's tiles too, its prefill went 505-514 -> 432-455.
            shared.stream = tl.single;
            attend_rows(shared, rows, n_rows, hd, isa);
        }
    });
}

}  // namespace tachyon
