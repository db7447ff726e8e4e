#include "inference/kv/kv_cache.h"

#include "inference/gguf/fp16.h"

#include <doctest/doctest.h>

#include <vector>

using namespace tachyon;

namespace {
kv_cache_config small(int n_blocks, bool f16 = false) {
    kv_cache_config c;
    c.f16 = f16;
    c.n_layer = 2;
    c.n_kv_embd = 4;
    c.block_size = 4;
    c.n_blocks = n_blocks;
    return c;
}

// Writes value `v` into every element of K and V at (seq, pos) on every layer.
void write(kv_cache& kv, seq_id s, int pos, float v) {
    for (int l = 0; l < kv.config().n_layer; ++l) {
        std::vector<float> k(static_cast<size_t>(kv.config().n_kv_embd), v);
        kv.write_k(l, s, pos, k.data());
        std::vector<float> vr(static_cast<size_t>(kv.config().n_kv_embd), -v);
        kv.write_v(l, s, pos, vr.data());
    }
}

void append(kv_cache& kv, seq_id s, int n, float base) {
    REQUIRE(kv.reserve(s, n).ok());
    int start = kv.n_tokens(s);
    for (int i = 0; i < n; ++i) write(kv, s, start + i, base + static_cast<float>(start + i));
    kv.commit(s, n);
}
}  // namespace

TEST_CASE("blocks are allocated per block_size positions and freed on drop") {
    kv_cache kv(small(8));
    seq_id a = kv.create();
    append(kv, a, 6, 0.0f);
    CHECK(kv.n_tokens(a) == 6);
    CHECK(kv.block_table(a).size() == 2);
    CHECK(kv.n_used_blocks() == 2);
    append(kv, a, 2, 0.0f);
    CHECK(kv.block_table(a).size() == 2);  // 8 positions still fit in two blocks
    kv.drop(a);
    CHECK(kv.n_used_blocks() == 0);
}

TEST_CASE("fork shares blocks, writing into a shared tail copies it first") {
  for (bool f16 : {false, true}) {
    CAPTURE(f16);
    kv_cache kv(small(8, f16));
    seq_id a = kv.create();
    append(kv, a, 6, 0.0f);  // block 0 full, block 1 holds 2 positions
    auto b = kv.fork(a);
    REQUIRE(b.ok());
    CHECK(kv.n_used_blocks() == 2);
    CHECK(kv.ref_count(kv.block_table(a)[0]) == 2);

    append(kv, *b, 1, 100.0f);  // b writes position 6: its tail block is copied
    CHECK(kv.n_used_blocks() == 3);
    CHECK(kv.block_table(*b)[0] == kv.block_table(a)[0]);  // full block still shared
    CHECK(kv.block_table(*b)[1] != kv.block_table(a)[1]);
    // b sees a's positions 4 and 5 in its copy, and its own position 6.
    CHECK(kv.k_at(0, *b, 5, 0) == 5.0f);
    CHECK(kv.k_at(1, *b, 6, 0) == 106.0f);
    CHECK(kv.v_at(1, *b, 6, 0) == -106.0f);
    // a is unchanged by b's write.
    append(kv, a, 1, 200.0f);
    CHECK(kv.k_at(0, a, 6, 0) == 206.0f);
    CHECK(kv.k_at(0, *b, 6, 0) == 106.0f);

    kv.drop(a);
    CHECK(kv.ref_count(kv.block_table(*b)[0]) == 1);
    kv.drop(*b);
    CHECK(kv.n_used_blocks() == 0);
  }
}

TEST_CASE("truncate releases whole blocks past the new end") {
    kv_cache kv(small(8));
    seq_id a = kv.create();
    append(kv, a, 12, 0.0f);
    CHECK(kv.n_used_blocks() == 3);
    kv.truncate(a, 5);
    CHECK(kv.n_tokens(a) == 5);
    CHECK(kv.n_used_blocks() == 2);
    append(kv, a, 3, 50.0f);  // overwrites from position 5
    CHECK(kv.k_at(0, a, 4, 0) == 4.0f);
    CHECK(kv.k_at(0, a, 5, 0) == 55.0f);
}

TEST_CASE("reserve fails cleanly when blocks run out and changes nothing") {
    kv_cache kv(small(3));
    seq_id a = kv.create();
    append(kv, a, 8, 0.0f);
    seq_id b = kv.create();
    auto st = kv.reserve(b, 8);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().code == errc::resource_exhausted);
    CHECK(st.err().message.find("2 blocks needed") != std::string::npos);
    CHECK(kv.block_table(b).empty());
    CHECK(kv.n_free_blocks() == 1);
    CHECK(kv.reserve(b, 4).ok());
}

TEST_CASE("an external holder keeps a block alive after its sequence is dropped") {
    kv_cache kv(small(4));
    seq_id a = kv.create();
    append(kv, a, 4, 0.0f);
    int block = kv.block_table(a)[0];
    kv.retain_block(block);
    kv.drop(a);
    CHECK(kv.n_used_blocks() == 1);
    kv.release_block(block);
    CHECK(kv.n_used_blocks() == 0);
}

TEST_CASE("fork of an unknown sequence is an error") {
    kv_cache kv(small(2));
    auto r = kv.fork(99);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::not_found);
}

TEST_CASE("K and V are held as fp16: rounded to nearest, saturated past 65504, every element where it belongs") {
    kv_cache_config c;
    c.n_layer = 1;
    c.n_kv_embd = 12;  // a vector of 8 and a tail of 4
    c.block_size = 4;
    c.n_blocks = 2;
    c.f16 = true;
    kv_cache kv(c);
    const seq_id s = kv.create();
    REQUIRE(kv.reserve(s, 6).ok());
    for (int pos = 0; pos < 6; ++pos) {
        std::vector<float> k(12), v(12);
        for (int i = 0; i < 12; ++i) {
            k[static_cast<size_t>(i)] = static_cast<float>(100 * pos + i) + 0.25f;
            v[static_cast<size_t>(i)] = -static_cast<float>(100 * pos + i) - 0.5f;
        }
        if (pos == 5) {
            k[0] = 1e6f, k[11] = -1e6f, v[3] = 7e4f, v[10] = -65520.0f;
            k[5] = 0.1f, v[9] = 0.1f;
        }
        kv.write_k(0, s, pos, k.data());
        kv.write_v(0, s, pos, v.data());
    }
    kv.commit(s, 6);
    for (int pos = 0; pos < 5; ++pos)
        for (int i = 0; i < 12; ++i) {
            CAPTURE(pos);
            CAPTURE(i);
            CHECK(kv.k_at(0, s, pos, i) == static_cast<float>(100 * pos + i) + 0.25f);
            CHECK(kv.v_at(0, s, pos, i) == -static_cast<float>(100 * pos + i) - 0.5f);
        }
    CHECK(kv.k_at(0, s, 5, 0) == 65504.0f);
    CHECK(kv.k_at(0, s, 5, 11) == -65504.0f);
    CHECK(kv.v_at(0, s, 5, 3) == 65504.0f);
    CHECK(kv.v_at(0, s, 5, 10) == -65504.0f);
    // 0.1 has no exact fp16: the nearest is 0.0999755859375 (1638 / 16384)
    CHECK(kv.k_at(0, s, 5, 5) == 0.0999755859375f);
    CHECK(kv.v_at(0, s, 5, 9) == 0.0999755859375f);
    CHECK(kv.k_at(0, s, 5, 4) == 504.25f);  // 504.25 needs 11 bits: exact
    const uint16_t* kb = kv.k_block16(0, kv.block_table(s)[1]);
    CHECK(fp16_to_fp32(kb[6 * 4 + 1]) == 506.25f);  // K transposed: dimension 6, position 5 (slot 1 of block 1)
}
