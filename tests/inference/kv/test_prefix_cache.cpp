#include "inference/kv/prefix_cache.h"

#include <doctest/doctest.h>

#include <numeric>

using namespace tachyon;

namespace {

kv_cache_config small(int n_blocks) {
    kv_cache_config c;
    c.n_layer = 1;
    c.n_kv_embd = 2;
    c.block_size = 4;
    c.n_blocks = n_blocks;
    return c;
}

// A sequence holding n positions (the K/V values do not matter here).
seq_id filled(kv_cache& kv, int n) {
    seq_id s = kv.create();
    REQUIRE(kv.reserve(s, n).ok());
    kv.commit(s, n);
    return s;
}

std::vector<int32_t> iota(int n, int32_t from = 0) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), from);
    return v;
}

std::vector<int> table(const kv_cache& kv, seq_id s, int n_blocks) {
    auto t = kv.block_table(s);
    return {t.begin(), t.begin() + n_blocks};
}

}  // namespace

TEST_CASE("match finds the longest cached prefix in whole blocks") {
    kv_cache kv(small(16));
    prefix_cache cache(4);
    auto tokens = iota(10);
    seq_id s = filled(kv, 10);  // blocks 0, 1 full; block 2 partial
    cache.insert(tokens, table(kv, s, 2), kv);
    CHECK(cache.n_blocks() == 2);

    CHECK(cache.match(tokens, 100) == table(kv, s, 2));
    CHECK(cache.match(tokens, 7) == table(kv, s, 1));      // at most 7 tokens: one block
    CHECK(cache.match(iota(3), 100).empty());               // shorter than a block
    auto other = tokens;
    other[5] = 99;                                          // diverges in block 1
    CHECK(cache.match(other, 100) == table(kv, s, 1));
    other[0] = 99;                                          // diverges in block 0
    CHECK(cache.match(other, 100).empty());
    cache.clear(kv);
}

TEST_CASE("the cache holds a reference: blocks outlive the sequence that computed them") {
    kv_cache kv(small(8));
    prefix_cache cache(4);
    auto tokens = iota(8);
    seq_id s = filled(kv, 8);
    auto blocks = table(kv, s, 2);
    cache.insert(tokens, blocks, kv);
    CHECK(kv.ref_count(blocks[0]) == 2);
    kv.drop(s);
    CHECK(kv.n_free_blocks() == 6);
    CHECK(kv.ref_count(blocks[0]) == 1);
    CHECK(cache.n_reclaimable(kv) == 2);

    // A new sequence adopts them and writes only after them.
    seq_id t = kv.create_shared(cache.match(tokens, 100));
    CHECK(kv.n_tokens(t) == 8);
    CHECK(kv.ref_count(blocks[1]) == 2);
    CHECK(cache.n_reclaimable(kv) == 0);
    REQUIRE(kv.reserve(t, 1).ok());
    CHECK(kv.block_table(t)[2] != blocks[0]);
    CHECK(kv.block_table(t)[2] != blocks[1]);
    kv.drop(t);
    cache.clear(kv);
    CHECK(kv.n_free_blocks() == 8);
}

TEST_CASE("inserting a prefix that is already cached keeps the cached blocks") {
    kv_cache kv(small(8));
    prefix_cache cache(4);
    auto tokens = iota(8);
    seq_id a = filled(kv, 8);
    seq_id b = filled(kv, 8);  // the same tokens computed twice
    cache.insert(tokens, table(kv, a, 2), kv);
    cache.insert(tokens, table(kv, b, 2), kv);
    CHECK(cache.n_blocks() == 2);
    CHECK(cache.match(tokens, 8) == table(kv, a, 2));
    CHECK(kv.ref_count(kv.block_table(b)[0]) == 1);
    kv.drop(a);
    kv.drop(b);
    cache.clear(kv);
    CHECK(kv.n_free_blocks() == 8);
}

TEST_CASE("evict frees least recently used leaves that nobody else holds") {
    kv_cache kv(small(16));
    prefix_cache cache(4);
    auto x = iota(12, 0), y = iota(8, 100), z = iota(8, 200);
    seq_id sx = filled(kv, 12), sy = filled(kv, 8), sz = filled(kv, 8);
    cache.insert(x, table(kv, sx, 3), kv);
    cache.insert(y, table(kv, sy, 2), kv);
    cache.insert(z, table(kv, sz, 2), kv);
    kv.drop(sx);
    kv.drop(sy);  // z stays in use by its sequence
    CHECK(cache.n_blocks() == 7);
    CHECK(cache.n_reclaimable(kv) == 5);
    cache.match(x, 100);  // x is now the most recently used

    // y is older: both its blocks go first, leaf then parent.
    const int free_before = kv.n_free_blocks();
    CHECK(cache.evict(2, kv) == 2);
    CHECK(kv.n_free_blocks() == free_before + 2);
    CHECK(cache.match(y, 100).empty());
    CHECK(cache.match(x, 100).size() == 3);

    // Asking for more than is reclaimable frees what it can; z's blocks stay.
    CHECK(cache.evict(10, kv) == 3);
    CHECK(cache.n_blocks() == 2);
    CHECK(cache.match(z, 100).size() == 2);
    kv.drop(sz);
    CHECK(cache.evict(10, kv) == 2);
    CHECK(cache.n_blocks() == 0);
    CHECK(kv.n_free_blocks() == 16);
}
