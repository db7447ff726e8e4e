// Prefix cache: a tree over token ids whose every edge is one full KV block
// of `block_size` tokens, mapping a prompt prefix to the blocks that already
// hold its keys and values (the idea of SGLang's RadixAttention and vLLM's
// automatic prefix caching, at block granularity). A new sequence whose
// tokens start with a cached path adopts those blocks (reference counted in
// the kv_cache) and computes only the rest: the system prompt and tool list
// of an agent are computed once for every run and every HTTP client.
//
// The cache holds one reference on each block it lists. Blocks nobody else
// holds are reclaimable: evict() frees the least recently used leaves first
// (a leaf, because a child's keys depend on its parent's tokens).
//
// Correctness rests on two facts: the keys and values at position p depend
// only on tokens [0, p], and a full block is never written again (the
// kv_cache copies a shared block before a sequence writes into it).
//
// Not thread-safe: the engine thread owns it, like the kv_cache.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "inference/kv/kv_cache.h"

namespace tachyon {

class prefix_cache {
public:
    explicit prefix_cache(int block_size);
    prefix_cache(const prefix_cache&) = delete;
    prefix_cache& operator=(const prefix_cache&) = delete;
    ~prefix_cache();  // the owner calls clear(kv) first while the kv_cache lives

    int block_size() const { return block_size_; }

    // The blocks of the longest cached prefix of `tokens`, whole blocks only,
    // at most `max_tokens` tokens. Marks the path as recently used.
    std::vector<int> match(std::span<const int32_t> tokens, int max_tokens);

    // Records the first blocks.size() full blocks of a sequence: block i holds
    // the keys and values of tokens [i * block_size, (i + 1) * block_size).
    // A prefix already cached keeps its blocks (the sequence's copies stay the
    // sequence's). Requires tokens.size() >= blocks.size() * block_size.
    void insert(std::span<const int32_t> tokens, std::span<const int> blocks, kv_cache& kv);

    // Frees up to n_blocks blocks that only the cache holds, least recently
    // used leaves first. Returns how many were freed.
    int evict(int n_blocks, kv_cache& kv);

    // Drops every entry (blocks still used by sequences stay theirs).
    void clear(kv_cache& kv);

    int n_blocks() const { return n_nodes_; }  // blocks the cache lists
    // Of those, blocks no sequence uses (what evict() could free now).
    int n_reclaimable(const kv_cache& kv) const;

private:
    // Orders blocks of tokens; looks up by span without building a vector.
    struct key_less {
        using is_transparent = void;
        bool operator()(std::span<const int32_t> a, std::span<const int32_t> b) const {
            return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
        }
    };
    struct node {
        std::vector<int32_t> key;  // [block_size] the tokens of this block
        int block = -1;            // kv_cache block holding their keys and values
        node* parent = nullptr;
        uint64_t last_use = 0;
        std::map<std::vector<int32_t>, std::unique_ptr<node>, key_less> children;
    };

    int block_size_;
    node root_;
    uint64_t clock_ = 0;
    int n_nodes_ = 0;
};

}  // namespace tachyon
