// Paged KV cache. Keys and values of every sequence live in fixed-size blocks
// of `block_size` positions; a sequence owns a block table (its positions in
// order). Blocks are reference counted, so sequences share a prefix by
// pointing at the same blocks (fork), and a shared block is copied only when
// a sequence writes into it (copy-on-write of the partially filled tail).
//
// Layout: V rows are position-major ([block_size, n_kv_embd] per block), K
// is dimension-major ([n_kv_embd, block_size] per block, K transposed), so
// attention computes the scores of a whole block as block_size-wide
// multiply-adds over the head's dimensions, with no horizontal sums.
//
// K and V are held as IEEE fp16 (kv_cache_config::f16, the engine's
// default, as llama.cpp's cache) or as f32 (the reference computation).
// fp16 is half the memory, and half the bytes a decode step reads per
// position, which at long contexts or many sequences is as much as the
// weights. Values beyond fp16's range (65504) are stored saturated, not as
// infinities.
//
// Not thread-safe: the engine thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/line_vector.h"

namespace tachyon {

using seq_id = int32_t;

struct kv_cache_config {
    int n_layer = 0;
    int n_kv_embd = 0;     // n_kv_head * head_dim
    int block_size = 16;   // positions per block
    int n_blocks = 0;      // capacity, all sequences together
    bool f16 = false;      // K and V as fp16 (else f32)
};

class kv_cache {
public:
    explicit kv_cache(const kv_cache_config& config);

    const kv_cache_config& config() const { return config_; }

    seq_id create();
    // A new sequence whose first positions are these full blocks, which other
    // holders (a prefix cache, other sequences) share: n_tokens = blocks.size() * block_size.
    seq_id create_shared(std::span<const int> blocks);
    // A new sequence sharing every block of `src` (no copy until one writes).
    result<seq_id> fork(seq_id src);
    // Makes room for n_new more positions after the current end; copies a
    // shared tail block first. Fails (resource_exhausted) without changing
    // anything when the free blocks do not suffice.
    status reserve(seq_id seq, int n_new);
    // Extends the sequence by n_new positions whose K/V were written.
    void commit(seq_id seq, int n_new);
    // Keeps the first n positions; releases blocks no longer needed.
    void truncate(seq_id seq, int n);
    void drop(seq_id seq);
    bool contains(seq_id seq) const { return seqs_.count(seq) != 0; }

    int n_tokens(seq_id seq) const;
    int n_sequences() const { return static_cast<int>(seqs_.size()); }
    int n_free_blocks() const { return static_cast<int>(free_.size()); }
    int n_used_blocks() const { return config_.n_blocks - n_free_blocks(); }
    int ref_count(int block) const { return refs_[static_cast<size_t>(block)]; }
    std::span<const int> block_table(seq_id seq) const;

    // Stores K (and V) [n_kv_embd] f32 of position `pos` of `seq` in
    // `layer`, as the cache holds them. `pos` must be below n_tokens +
    // reserved capacity; the block must be exclusively owned when writing
    // (reserve() guarantees it for new ones). A position's V is written with its K.
    void write_k(int layer, seq_id seq, int pos, const float* k);
    void write_v(int layer, seq_id seq, int pos, const float* v);
    // Element i of K or V at a position, as stored (tests and debugging; attention reads blocks).
    float k_at(int layer, seq_id seq, int pos, int i) const;
    float v_at(int layer, seq_id seq, int pos, int i) const;
    // A whole block: K as [n_kv_embd, block_size], V as [block_size, n_kv_embd],
    // f32 or fp16 as config().f16 says (the other one is empty).
    const float* k_block(int layer, int block) const { return k_.data() + block_offset(layer, block); }
    const float* v_block(int layer, int block) const { return v_.data() + block_offset(layer, block); }
    const uint16_t* k_block16(int layer, int block) const { return k16_.data() + block_offset(layer, block); }
    const uint16_t* v_block16(int layer, int block) const { return v16_.data() + block_offset(layer, block); }

    // How many times positions of `block` in `layer` were written (write_k;
    // a position's V is written with its K) or copied into. Whatever is
    // computed from a block's contents (attention's tile copies) is current
    // while this stays the same.
    uint32_t generation(int layer, int block) const { return gen_[static_cast<size_t>(layer) * config_.n_blocks + block]; }

    // For prefix sharing across sequences (prefix cache): an external holder
    // keeps blocks alive.
    void retain_block(int block);
    void release_block(int block);

private:
    struct sequence {
        std::vector<int> blocks;  // block table, in position order
        int n_tokens = 0;
    };

    size_t block_offset(int layer, int block) const {
        return (static_cast<size_t>(layer) * config_.n_blocks + block) * config_.block_size * config_.n_kv_embd;
    }
    sequence& get(seq_id seq);
    const sequence& get(seq_id seq) const;
    int take_block();
    void copy_block(int dst, int src, int n_positions);

    kv_cache_config config_;
    int block_of(int layer, seq_id seq, int pos, const char* what) const;  // the block holding pos, checked

    // f32 (k_, v_) or fp16 (k16_, v16_), the other pair empty
    line_vector<float> k_;        // [n_layer, n_blocks, n_kv_embd, block_size] (transposed per block)
    line_vector<float> v_;        // [n_layer, n_blocks, block_size, n_kv_embd]
    line_vector<uint16_t> k16_;   // the same as fp16
    line_vector<uint16_t> v16_;
    std::vector<int> refs_;  // [n_blocks] owners of each block (sequences + external holders)
    std::vector<uint32_t> gen_;  // [n_layer, n_blocks] writes into each block
    std::vector<int> free_;  // free block ids, taken from the back
    std::unordered_map<seq_id, sequence> seqs_;
    seq_id next_id_ = 0;
};

}  // namespace tachyon
