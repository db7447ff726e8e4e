#include "inference/kernels/batch_attention.h"

#include <doctest/doctest.h>

#include "inference/gguf/fp16.h"

#include <tuple>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace tachyon;

namespace {

// The kernel sets this CPU runs, the scalar reference first.
std::vector<kernel_isa> isas() {
    std::vector<kernel_isa> v{kernel_isa::scalar};
    if (cpu_has_avx2()) v.push_back(kernel_isa::avx2);
    if (cpu_has_avx512()) v.push_back(kernel_isa::avx512);
    if (cpu_has_amx_bf16() && default_isa() >= kernel_isa::amx) v.push_back(kernel_isa::amx);
    return v;
}

// A KV cache of two layers and two sequences, with what was written to it
// kept aside in plain arrays, so that every step's attention output can be
// checked against a double-precision reference that never reads the cache
// (nor any tile copy made from it).
struct harness {
    attention_shape shape;
    kv_cache kv;
    std::vector<seq_id> seqs;                      // the two sequences
    std::vector<std::vector<float>> k_seen, v_seen;  // per sequence: [position, n_head_kv * head_dim], layer 1
    std::vector<std::vector<int>> n_writes = std::vector<std::vector<int>>(2);  // [sequence][position] times written

    int& writes(int s, int p) {
        auto& w = n_writes[static_cast<size_t>(s)];
        if (w.size() <= static_cast<size_t>(p)) w.resize(static_cast<size_t>(p) + 1, 0);
        return w[static_cast<size_t>(p)];
    }

    bool f16;  // the cache holds fp16 K and V (the reference reads them so rounded)

    harness(const attention_shape& s, bool half) : shape(s), kv(config(s, half)), f16(half) {
        for (int i = 0; i < 2; ++i) seqs.push_back(kv.create());
        k_seen.resize(2);
        v_seen.resize(2);
    }
    static kv_cache_config config(const attention_shape& s, bool half) {
        kv_cache_config c;
        c.f16 = half;
        c.n_layer = s.n_layer;
        c.n_kv_embd = s.n_head_kv * s.head_dim;
        c.block_size = 16;
        c.n_blocks = 32;
        return c;
    }
    int n_q() const { return shape.n_head * shape.head_dim; }
    int n_kv() const { return shape.n_head_kv * shape.head_dim; }

    // One call with the tokens (sequence index, position), in this order:
    // each layer gets its own q/k/v, and the output of layer 1 comes back,
    // as does the worst difference from the reference.
    std::pair<std::vector<float>, double> step(kernel_context& ctx, batch_attention& attn, const std::vector<std::pair<int, int>>& tokens) {
        const size_t n = tokens.size();
        std::vector<seq_id> ids;
        std::vector<int32_t> positions;
        std::vector<int> n_new(2, 0);
        for (auto [s, p] : tokens) {
            ids.push_back(seqs[static_cast<size_t>(s)]);
            positions.push_back(p);
            ++n_new[static_cast<size_t>(s)];
        }
        for (int s = 0; s < 2; ++s)
            if (n_new[static_cast<size_t>(s)] > 0) REQUIRE(kv.reserve(seqs[static_cast<size_t>(s)], n_new[static_cast<size_t>(s)]).ok());
        std::vector<float> q(n * n_q()), k(n * n_kv()), v(n * n_kv()), out(n * n_q(), -1.0f);
        for (int layer = 0; layer < shape.n_layer; ++layer) {
            // A token's q/k/v depend on what it is (sequence, position, how
            // often that position was written, layer), not on how the
            // tokens are split into calls.
            for (size_t t = 0; t < n; ++t) {
                const auto [s, p] = tokens[t];
                std::mt19937 rng(static_cast<uint32_t>(((s * 1000 + p) * 10 + writes(s, p)) * 10 + layer));
                std::normal_distribution<float> dist(0.0f, 1.0f);
                for (int i = 0; i < n_q(); ++i) q[t * n_q() + i] = dist(rng);
                for (int i = 0; i < n_kv(); ++i) k[t * n_kv() + i] = dist(rng);
                for (int i = 0; i < n_kv(); ++i) v[t * n_kv() + i] = dist(rng);
            }
            attn.run(ctx, {ids, positions, q.data(), k.data(), v.data(), out.data()}, kv, layer);
        }
        for (auto [s, p] : tokens) ++writes(s, p);
        for (int s = 0; s < 2; ++s)
            if (n_new[static_cast<size_t>(s)] > 0) kv.commit(seqs[static_cast<size_t>(s)], n_new[static_cast<size_t>(s)]);

        // The reference of the last layer: each token over positions 0..its own of its sequence.
        for (size_t t = 0; t < n; ++t) {
            auto& ks = k_seen[static_cast<size_t>(tokens[t].first)];
            auto& vs = v_seen[static_cast<size_t>(tokens[t].first)];
            const size_t p = static_cast<size_t>(tokens[t].second);
            ks.resize(std::max(ks.size(), (p + 1) * n_kv()));
            vs.resize(std::max(vs.size(), (p + 1) * n_kv()));
            std::copy_n(&k[t * n_kv()], n_kv(), &ks[p * n_kv()]);
            std::copy_n(&v[t * n_kv()], n_kv(), &vs[p * n_kv()]);
            if (f16) {
                for (int i = 0; i < n_kv(); ++i) ks[p * n_kv() + i] = fp16_to_fp32(fp32_to_fp16(ks[p * n_kv() + i]));
                for (int i = 0; i < n_kv(); ++i) vs[p * n_kv() + i] = fp16_to_fp32(fp32_to_fp16(vs[p * n_kv() + i]));
            }
        }
        double worst = 0.0;
        const int hd = shape.head_dim, group = shape.n_head / shape.n_head_kv;
        for (size_t t = 0; t < n; ++t) {
            const auto& ks = k_seen[static_cast<size_t>(tokens[t].first)];
            const auto& vs = v_seen[static_cast<size_t>(tokens[t].first)];
            const int n_pos = tokens[t].second + 1;
            for (int h = 0; h < shape.n_head; ++h) {
                const size_t g = static_cast<size_t>(h / group) * hd;
                const float* qh = &q[t * n_q() + static_cast<size_t>(h) * hd];
                std::vector<double> w(static_cast<size_t>(n_pos));
                double top = -INFINITY, sum = 0.0;
                for (int p = 0; p < n_pos; ++p) {
                    double d = 0.0;
                    for (int i = 0; i < hd; ++i) d += static_cast<double>(qh[i]) * ks[static_cast<size_t>(p) * n_kv() + g + i];
                    w[static_cast<size_t>(p)] = d / std::sqrt(static_cast<double>(hd));
                    top = std::max(top, w[static_cast<size_t>(p)]);
                }
                for (double& x : w) sum += (x = std::exp(x - top));
                for (int i = 0; i < hd; ++i) {
                    double o = 0.0;
                    for (int p = 0; p < n_pos; ++p) o += w[static_cast<size_t>(p)] / sum * vs[static_cast<size_t>(p) * n_kv() + g + i];
                    worst = std::max(worst, std::fabs(o - out[t * n_q() + static_cast<size_t>(h) * hd + i]));
                }
            }
        }
        return {out, worst};
    }
};

// Outputs of every step of a run of calls: a prompt of 70 tokens of sequence
// 0 whole or in chunks of 24, then 40 tokens of sequence 1 with a decode
// token of sequence 0 in the same batch, a draft of 4 tokens, a rewind of
// sequence 0 to 66 positions and 8 other tokens over the chunk the draft had
// written (a tile copy of it must not be read again), and two decode steps
// of both sequences.
std::vector<float> steps(const attention_shape& shape, kernel_isa isa, int n_threads, bool chunked, double& worst, bool f16 = false) {
    kernel_context ctx(n_threads, isa);
    batch_attention attn(shape);
    harness hs(shape, f16);
    std::vector<float> all;
    const auto run = [&](const std::vector<std::pair<int, int>>& tokens) {
        auto [out, w] = hs.step(ctx, attn, tokens);
        worst = std::max(worst, w);
        all.insert(all.end(), out.begin(), out.end());
    };
    std::vector<std::pair<int, int>> prompt;
    for (int p = 0; p < 70; ++p) {
        prompt.push_back({0, p});
        if (chunked && (prompt.size() == 24 || p == 69)) {
            run(prompt);
            prompt.clear();
        }
    }
    if (!chunked) run(prompt);
    std::vector<std::pair<int, int>> mixed{{0, 70}};
    for (int p = 0; p < 40; ++p) mixed.push_back({1, p});
    run(mixed);
    run({{0, 71}, {0, 72}, {0, 73}, {0, 74}});
    hs.kv.truncate(hs.seqs[0], 66);
    run({{0, 66}, {0, 67}, {0, 68}, {0, 69}, {0, 70}, {0, 71}, {0, 72}, {0, 73}});
    run({{0, 74}, {1, 40}});
    run({{1, 41}, {0, 75}});
    return all;
}

}  // namespace

TEST_CASE("attention of a batch of several sequences matches double precision on every kernel set, and threads change nothing") {
    // head_dim 32 (the AMX-BF16 tiles' shape) with 2 query heads per KV head,
    // and head_dim 8 with 4 heads of 4 per KV head (the tiles of AVX-512).
    for (const attention_shape shape : {attention_shape{2, 4, 2, 32}, attention_shape{2, 16, 4, 8}}) {
        CAPTURE(shape.head_dim);
        for (kernel_isa isa : isas())
            for (bool f16 : {false, true}) {
                CAPTURE(to_string(isa));
                CAPTURE(f16);
                double worst = 0.0, worst_2 = 0.0;
                // With an fp16 cache the reference reads the values rounded as the cache holds them.
                const std::vector<float> one = steps(shape, isa, 1, false, worst, f16);
                // AMX-BF16 keeps about 2^-17 of each product (attention.h).
                CHECK(worst < (isa == kernel_isa::amx ? 1e-4 : 1e-5));
                // Two threads split the conversion and the tiles between them: the same numbers.
                CHECK(steps(shape, isa, 2, false, worst_2, f16) == one);
            }
    }
}

TEST_CASE("a prompt attended in chunks gives what it gives whole") {
    for (const attention_shape shape : {attention_shape{2, 4, 2, 32}, attention_shape{2, 16, 4, 8}}) {
        CAPTURE(shape.head_dim);
        for (kernel_isa isa : isas()) {
            CAPTURE(to_string(isa));
            double worst_whole = 0.0, worst_chunked = 0.0;
            const std::vector<float> whole = steps(shape, isa, 1, false, worst_whole);
            const std::vector<float> chunked = steps(shape, isa, 2, true, worst_chunked);
            REQUIRE(whole.size() == chunked.size());
            float diff = 0.0f;
            for (size_t i = 0; i < whole.size(); ++i) diff = std::max(diff, std::fabs(whole[i] - chunked[i]));
            CHECK(diff < (isa == kernel_isa::amx ? 1e-4f : 1e-5f));
            CHECK(worst_chunked < (isa == kernel_isa::amx ? 1e-4 : 1e-5));
        }
    }
}

namespace {

// One prompt of n tokens of one sequence through run(): the output of layer 0.
std::vector<float> prompt_output(const attention_shape& shape, kernel_isa isa, int n, int window, std::vector<float>& q, std::vector<float>& k,
                                 std::vector<float>& v) {
    kv_cache kv(harness::config(shape, false));
    const seq_id s = kv.create();
    REQUIRE(kv.reserve(s, n).ok());
    const int n_q = shape.n_head * shape.head_dim, n_kv = shape.n_head_kv * shape.head_dim;
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 2.0f);
    q.resize(static_cast<size_t>(n * n_q));
    k.resize(static_cast<size_t>(n * n_kv));
    v.resize(static_cast<size_t>(n * n_kv));
    for (auto* b : {&q, &k, &v})
        for (float& x : *b) x = dist(rng);
    std::vector<seq_id> ids(static_cast<size_t>(n), s);
    std::vector<int32_t> positions(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) positions[static_cast<size_t>(p)] = p;
    std::vector<float> out(static_cast<size_t>(n * n_q));
    kernel_context ctx(1, isa);
    batch_attention attn(shape);
    attn.run(ctx, {ids, positions, q.data(), k.data(), v.data(), out.data()}, kv, 0, window);
    return out;
}

}  // namespace

TEST_CASE("a sliding window, a softcap and a score scale reach every kernel set, the AMX-BF16 prompt tiles included") {
    // head_dim 64 with 2 query heads per KV head: a prompt the tiles would take.
    attention_shape shape{1, 4, 2, 64};
    shape.scale = 0.05f;
    const int n = 40, hd = 64, group = 2, n_q = 4 * hd, n_kv = 2 * hd;
    for (const auto& params : {std::pair{0.0f, 8}, std::pair{3.0f, 0}, std::pair{3.0f, 20}}) {
        // copies, not structured bindings: CAPTURE takes them into a lambda
        const auto cap = std::get<0>(params); const auto window = std::get<1>(params);
        shape.softcap = cap;
        for (kernel_isa isa : isas()) {
            CAPTURE(to_string(isa));
            CAPTURE(cap);
            CAPTURE(window);
            std::vector<float> q, k, v;
            const std::vector<float> out = prompt_output(shape, isa, n, window, q, k, v);
            double worst = 0.0;
            for (int t = 0; t < n; ++t)
                for (int h = 0; h < 4; ++h) {
                    const int g = h / group, first = window > 0 ? std::max(0, t + 1 - window) : 0;
                    std::vector<double> w;
                    for (int p = first; p <= t; ++p) {
                        double d = 0.0;
                        for (int i = 0; i < hd; ++i) d += static_cast<double>(q[static_cast<size_t>(t * n_q + h * hd + i)]) * k[static_cast<size_t>(p * n_kv + g * hd + i)];
                        d *= shape.scale;
                        if (cap > 0.0f) d = cap * std::tanh(d / cap);
                        w.push_back(d);
                    }
                    const double top = *std::max_element(w.begin(), w.end());
                    double sum = 0.0;
                    for (double& x : w) sum += (x = std::exp(x - top));
                    for (int i = 0; i < hd; ++i) {
                        double o = 0.0;
                        for (int p = first; p <= t; ++p) o += w[static_cast<size_t>(p - first)] / sum * v[static_cast<size_t>(p * n_kv + g * hd + i)];
                        worst = std::max(worst, std::fabs(o - out[static_cast<size_t>(t * n_q + h * hd + i)]));
                    }
                }
            CHECK(worst < 1e-5);
        }
    }
}

TEST_CASE("exact attention takes the f32 kernels where the CPU has AMX-BF16 tiles") {
    if (!(cpu_has_amx_bf16() && default_isa() >= kernel_isa::amx)) {
        MESSAGE("skipped: no AMX-BF16 on this CPU");
        return;
    }
    attention_shape shape{1, 4, 2, 64};
    std::vector<float> q, k, v;
    const std::vector<float> f32 = prompt_output(shape, kernel_isa::avx512, 40, 0, q, k, v);
    CHECK(prompt_output(shape, kernel_isa::amx, 40, 0, q, k, v) != f32);  // the tiles round to about 16 bits
    shape.exact = true;
    CHECK(prompt_output(shape, kernel_isa::amx, 40, 0, q, k, v) == f32);
}
