#include "inference/kv/prefix_cache.h"

#include <queue>

#include "base/assert.h"

namespace tachyon {

prefix_cache::prefix_cache(int block_size) : block_size_(block_size) {
    TACHYON_ASSERT(block_size > 0, "prefix_cache: block_size must be positive");
}

prefix_cache::~prefix_cache() {
    TACHYON_ASSERT(n_nodes_ == 0, "prefix_cache destroyed while holding blocks: call clear(kv) first");
}

std::vector<int> prefix_cache::match(std::span<const int32_t> tokens, int max_tokens) {
    std::vector<int> blocks;
    const size_t bs = static_cast<size_t>(block_size_);
    const size_t limit = std::min(tokens.size(), static_cast<size_t>(std::max(max_tokens, 0)));
    const uint64_t now = ++clock_;
    node* at = &root_;
    for (size_t pos = 0; pos + bs <= limit; pos += bs) {
        auto it = at->children.find(tokens.subspan(pos, bs));
        if (it == at->children.end()) break;
        at = it->second.get();
        at->last_use = now;
        blocks.push_back(at->block);
    }
    return blocks;
}

void prefix_cache::insert(std::span<const int32_t> tokens, std::span<const int> blocks, kv_cache& kv) {
    const size_t bs = static_cast<size_t>(block_size_);
    TACHYON_ASSERT(tokens.size() >= blocks.size() * bs, "prefix_cache::insert: fewer tokens than the blocks hold");
    const uint64_t now = ++clock_;
    node* at = &root_;
    for (size_t i = 0; i < blocks.size(); ++i) {
        auto key = tokens.subspan(i * bs, bs);
        auto it = at->children.find(key);
        if (it == at->children.end()) {
            auto child = std::make_unique<node>();
            child->key.assign(key.begin(), key.end());
            child->block = blocks[i];
            child->parent = at;
            kv.retain_block(child->block);
            ++n_nodes_;
            it = at->children.emplace(child->key, std::move(child)).first;
        }
        at = it->second.get();
        at->last_use = now;
    }
}

int prefix_cache::evict(int n_blocks, kv_cache& kv) {
    if (n_blocks <= 0 || n_nodes_ == 0) return 0;
    // Candidates: leaves that only the cache holds, oldest first. Removing a
    // leaf can make its parent one.
    auto older = [](const node* a, const node* b) { return a->last_use > b->last_use; };
    std::priority_queue<node*, std::vector<node*>, decltype(older)> leaves(older);
    auto evictable = [&kv](const node* n) { return n->children.empty() && kv.ref_count(n->block) == 1; };
    std::vector<node*> stack{&root_};
    while (!stack.empty()) {
        node* n = stack.back();
        stack.pop_back();
        for (auto& [key, child] : n->children) {
            if (evictable(child.get())) leaves.push(child.get());
            stack.push_back(child.get());
        }
    }
    int freed = 0;
    while (freed < n_blocks && !leaves.empty()) {
        node* n = leaves.top();
        leaves.pop();
        node* parent = n->parent;
        kv.release_block(n->block);
        --n_nodes_;
        ++freed;
        parent->children.erase(n->key);  // destroys n
        if (parent != &root_ && evictable(parent)) leaves.push(parent);
    }
    return freed;
}

void prefix_cache::clear(kv_cache& kv) {
    std::vector<node*> stack{&root_};
    while (!stack.empty()) {
        node* n = stack.back();
        stack.pop_back();
        for (auto& [key, child] : n->children) {
            kv.release_block(child->block);
            stack.push_back(child.get());
        }
    }
    root_.children.clear();
    n_nodes_ = 0;
}

int prefix_cache::n_reclaimable(const kv_cache& kv) const {
    // A block can be freed when no sequence holds it nor any block below it
    // (eviction goes leaves first). Returns whether the subtree is free.
    int n = 0;
    auto walk = [&](auto& self, const node& at) -> bool {
        bool all = true;
        for (const auto& [key, child] : at.children) all = self(self, *child) && all;
        if (&at == &root_) return all;
        all = all && kv.ref_count(at.block) == 1;
        n += all ? 1 : 0;
        return all;
    };
    walk(walk, root_);
    return n;
}

}  // namespace tachyon
