#include "inference/kernels/attention.h"

#include <doctest/doctest.h>

#include "inference/gguf/fp16.h"

#include <tuple>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace tachyon;

namespace {

// The kernel sets this CPU runs, the reference first.
std::vector<kernel_isa> isas() {
    std::vector<kernel_isa> v{kernel_isa::scalar};
    if (cpu_has_avx2()) v.push_back(kernel_isa::avx2);
    if (cpu_has_avx512()) v.push_back(kernel_isa::avx512);
    return v;
}

// One KV head of one sequence in paged blocks, laid out as the KV cache
// holds it: K transposed per block ([head_dim][block_size]), V rows `stride`
// values apart (a second KV head interleaved, which attention must skip).
// The values are fp16 numbers, held both as f32 (k, v) and as fp16 (k16,
// v16), so the two caches hold exactly the same K and V.
struct paged_kv {
    int head_dim, block_size, stride;
    std::vector<std::vector<float>> k_store, v_store;
    std::vector<std::vector<uint16_t>> k16_store, v16_store;
    std::vector<const float*> k, v;
    std::vector<const uint16_t*> k16, v16;

    paged_kv(int hd, int bs, int n_pos, std::mt19937& rng) : head_dim(hd), block_size(bs), stride(2 * hd) {
        std::normal_distribution<float> dist(0.0f, 1.0f);
        const int n_blocks = (n_pos + bs - 1) / bs;
        for (int b = 0; b < n_blocks; ++b) {
            k_store.emplace_back(static_cast<size_t>(hd * bs));
            v_store.emplace_back(static_cast<size_t>(stride * bs));
            for (auto& x : k_store.back()) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
            for (auto& x : v_store.back()) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
        }
        for (const auto& b : k_store) k16_store.emplace_back(b.size());
        for (const auto& b : v_store) v16_store.emplace_back(b.size());
        for (size_t b = 0; b < k_store.size(); ++b) {
            for (size_t i = 0; i < k_store[b].size(); ++i) k16_store[b][i] = fp32_to_fp16(k_store[b][i]);
            for (size_t i = 0; i < v_store[b].size(); ++i) v16_store[b][i] = fp32_to_fp16(v_store[b][i]);
        }
        for (auto& b : k_store) k.push_back(b.data());
        for (auto& b : v_store) v.push_back(b.data());
        for (auto& b : k16_store) k16.push_back(b.data());
        for (auto& b : v16_store) v16.push_back(b.data());
    }

    // `a` reading the fp16 copy instead.
    attention_args half(attention_args a) const {
        a.k = a.v = nullptr;
        a.k16 = k16.data();
        a.v16 = v16.data();
        return a;
    }
};

}  // namespace

TEST_CASE("attention of several query rows matches the scalar reference for every kernel set, head size and row count") {
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (int hd : {8, 16, 32, 64, 128}) {
        const int max_pos = 83;  // five blocks of 16, the last partial
        paged_kv kv(hd, 16, max_pos, rng);
        for (int n_rows = 1; n_rows <= max_attention_rows; ++n_rows) {
            // rows of consecutive tokens see one more position each; some rows end mid-block
            std::vector<std::vector<float>> q(static_cast<size_t>(n_rows), std::vector<float>(static_cast<size_t>(hd)));
            for (auto& row : q)
                for (auto& x : row) x = dist(rng);
            std::vector<int> n_pos(static_cast<size_t>(n_rows));
            for (int r = 0; r < n_rows; ++r) n_pos[static_cast<size_t>(r)] = max_pos - (n_rows - 1 - r) * 7;
            std::vector<std::vector<float>> reference;
            for (kernel_isa isa : isas()) {
                CAPTURE(hd);
                CAPTURE(n_rows);
                CAPTURE(std::string(to_string(isa)));
                std::vector<std::vector<float>> scores(static_cast<size_t>(n_rows), std::vector<float>(max_pos + 16, -1.0f));
                std::vector<std::vector<float>> out(static_cast<size_t>(n_rows), std::vector<float>(static_cast<size_t>(hd), 0.0f));
                std::vector<attention_row> rows;
                for (int r = 0; r < n_rows; ++r) {
                    const auto i = static_cast<size_t>(r);
                    rows.push_back({q[i].data(), n_pos[i], scores[i].data(), out[i].data()});
                }
                attention_args shared{nullptr, kv.k.data(), kv.v.data(), 16, kv.stride, 0,
                                      1.0f / std::sqrt(static_cast<float>(hd)), nullptr, nullptr};
                attend_rows(shared, rows.data(), n_rows, hd, isa);
                // Asking for the blocks ahead (a decode step's rows) reads only
                // the sequence's own blocks and changes no result.
                {
                    std::vector<std::vector<float>> streamed(out.size(), std::vector<float>(static_cast<size_t>(hd), 0.0f));
                    std::vector<attention_row> rows_streamed = rows;
                    for (size_t r = 0; r < rows.size(); ++r) rows_streamed[r].out = streamed[r].data();
                    shared.stream = true;
                    attend_rows(shared, rows_streamed.data(), n_rows, hd, isa);
                    shared.stream = false;
                    CHECK(streamed == out);
                }
                // From an fp16 cache holding the same values: the vector
                // kernels give the same bits (each value widened exactly as
                // it is loaded); the scalar reference, which the compiler
                // vectorizes its own way for each element type, within rounding.
                for (bool stream : {false, true}) {
                    std::vector<std::vector<float>> from16(out.size(), std::vector<float>(static_cast<size_t>(hd), 0.0f));
                    std::vector<attention_row> rows16 = rows;
                    for (size_t r = 0; r < rows.size(); ++r) rows16[r].out = from16[r].data();
                    attention_args a16 = kv.half(shared);
                    a16.stream = stream;
                    attend_rows(a16, rows16.data(), n_rows, hd, isa);
                    CAPTURE(stream);
                    if (isa != kernel_isa::scalar) {
                        CHECK(from16 == out);
                        continue;
                    }
                    for (size_t r = 0; r < out.size(); ++r)
                        for (size_t d = 0; d < out[r].size(); ++d) CHECK(from16[r][d] == doctest::Approx(out[r][d]).epsilon(1e-5).scale(1.0));
                }
                if (isa == kernel_isa::scalar) {
                    reference = out;
                    // the reference itself: a row's output is the softmax-weighted mean of its V rows
                    const auto& o = out.back();
                    float norm = 0.0f;
                    for (float x : o) norm += x * x;
                    CHECK(std::isfinite(norm));
                    CHECK(norm > 0.0f);
                    continue;
                }
                for (int r = 0; r < n_rows; ++r)
                    for (int d = 0; d < hd; ++d)
                        CHECK(out[static_cast<size_t>(r)][static_cast<size_t>(d)] ==
                              doctest::Approx(reference[static_cast<size_t>(r)][static_cast<size_t>(d)]).epsilon(1e-4));
            }
        }
    }
}

TEST_CASE("one query row attends to exactly the positions it is given") {
    // With all scores equal the output is the plain mean of the V rows seen.
    std::mt19937 rng(3);
    const int hd = 32;
    paged_kv kv(hd, 16, 40, rng);
    std::vector<float> q(hd, 0.0f), scores(64), out(hd);
    for (kernel_isa isa : isas()) {
        CAPTURE(std::string(to_string(isa)));
        for (int n : {1, 16, 17, 40}) {
            const attention_row row{q.data(), n, scores.data(), out.data()};
            const attention_args shared{nullptr, kv.k.data(), kv.v.data(), 16, kv.stride, 0, 1.0f, nullptr, nullptr};
            attend_rows(shared, &row, 1, hd, isa);
            for (int d = 0; d < hd; d += 7) {
                float mean = 0.0f;
                for (int p = 0; p < n; ++p) mean += kv.v[static_cast<size_t>(p / 16)][static_cast<size_t>((p % 16) * kv.stride + d)];
                CHECK(out[static_cast<size_t>(d)] == doctest::Approx(mean / static_cast<float>(n)).epsilon(1e-5));
            }
        }
    }
}

TEST_CASE("attention on AMX-BF16 tiles (prompt rows) matches double precision, with small and large scores") {
    if (!attention_bf16_supported(32, 16)) {
        MESSAGE("skipped: this CPU has no AMX-BF16");
        return;
    }
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (int hd : {32, 64, 128}) {
        // 83: a partial last block of 16 and 32-position chunk, whose unused
        // positions hold values that must not count; 5: less than a block.
        for (int max_pos : {83, 5})
        // q_scale 3: sharp weights, scores bounded enough to need no maximum;
        // 30: scores past that bound, which take a maximum pass first.
        for (float q_scale : {3.0f, 30.0f}) {
            paged_kv kv(hd, 16, max_pos, rng);
            const attention_args shared{nullptr, kv.k.data(), kv.v.data(), 16, kv.stride, 0,
                                        1.0f / std::sqrt(static_cast<float>(hd)), nullptr, nullptr};
            attention_kv_bf16 conv, conv16;
            convert_kv_bf16(shared, hd, max_pos, conv);
            convert_kv_bf16(kv.half(shared), hd, max_pos, conv16);
            CHECK(conv16.k == conv.k);  // fp16 K and V convert to the same tiles
            CHECK(conv16.v == conv.v);
            CHECK(conv16.chunk_norm == conv.chunk_norm);
            for (int n_rows : {1, 7, 16}) {
                CAPTURE(hd);
                CAPTURE(max_pos);
                CAPTURE(n_rows);
                CAPTURE(q_scale);
                std::vector<std::vector<float>> q(static_cast<size_t>(n_rows), std::vector<float>(static_cast<size_t>(hd)));
                for (auto& row : q)
                    for (auto& x : row) x = q_scale * dist(rng);
                std::vector<std::vector<float>> out(static_cast<size_t>(n_rows), std::vector<float>(static_cast<size_t>(hd), 0.0f));
                std::vector<std::vector<float>> out32 = out;
                std::vector<std::vector<float>> scores(static_cast<size_t>(n_rows), std::vector<float>(max_pos + 16));
                std::vector<attention_row> rows, rows32;
                for (int r = 0; r < n_rows; ++r) {
                    const auto i = static_cast<size_t>(r);
                    // rows see different lengths, not in order: a middle row sees the
                    // fewest, less than the first 32 positions the others all see
                    const int n = r == n_rows / 2 && r > 0 ? std::min(max_pos, 20) : std::max(1, max_pos - (n_rows - 1 - r) * 5);
                    rows.push_back({q[i].data(), n, nullptr, out[i].data()});
                    rows32.push_back({q[i].data(), n, scores[i].data(), out32[i].data()});
                }
                attend_rows_bf16(conv, rows.data(), n_rows, shared.scale);
                for (int r0 = 0; r0 < n_rows; r0 += max_attention_rows)
                    attend_rows(shared, rows32.data() + r0, std::min(max_attention_rows, n_rows - r0), hd, default_isa());
                double worst = 0.0, worst32 = 0.0, s_max = 0.0;
                for (int r = 0; r < n_rows; ++r) {
                    const auto i = static_cast<size_t>(r);
                    const int n = rows[i].n_pos;
                    std::vector<double> p(static_cast<size_t>(n));
                    double mx = -1e300, sum = 0.0;
                    for (int j = 0; j < n; ++j) {
                        double s = 0.0;
                        for (int d = 0; d < hd; ++d) s += static_cast<double>(q[i][static_cast<size_t>(d)]) * kv.k[static_cast<size_t>(j / 16)][static_cast<size_t>(d * 16 + j % 16)];
                        p[static_cast<size_t>(j)] = s * shared.scale;
                        s_max = std::max(s_max, std::fabs(s * shared.scale));
                        mx = std::max(mx, p[static_cast<size_t>(j)]);
                    }
                    for (auto& x : p) sum += (x = std::exp(x - mx));
                    for (int d = 0; d < hd; ++d) {
                        double ref = 0.0;
                        for (int j = 0; j < n; ++j) ref += p[static_cast<size_t>(j)] / sum * kv.v[static_cast<size_t>(j / 16)][static_cast<size_t>((j % 16) * kv.stride + d)];
                        worst = std::max(worst, std::fabs(out[i][static_cast<size_t>(d)] - ref));
                        worst32 = std::max(worst32, std::fabs(out32[i][static_cast<size_t>(d)] - ref));
                    }
                }
                // A score errs by a fraction of its size, and the weights
                // with it: about 2^-17 for bf16x3 products, 2^-24 for f32.
                // Measured worst: 3.9e-6 and 1.4e-7 times 1 + the largest |score|.
                CAPTURE(s_max);
                CHECK(worst < 1e-5 * (1.0 + s_max));
                CHECK(worst32 < 5e-7 * (1.0 + s_max));
            }
        }
    }
}

TEST_CASE("softcap, score scale and sliding window match a naive attention on every kernel set") {
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 3.0f);  // large scores, so the cap bites
    const int max_pos = 70;
    for (int hd : {32, 64, 128}) {
        paged_kv kv(hd, 16, max_pos, rng);
        for (const auto& params : {std::tuple{50.0f, 0, 0.125f}, std::tuple{0.0f, 8, 0.125f}, std::tuple{5.0f, 20, 0.02f}}) {
            // copies, not structured bindings: CAPTURE takes them into a lambda
            const auto cap = std::get<0>(params); const auto window = std::get<1>(params); const auto scale = std::get<2>(params);
            const int n_rows = 5;
            std::vector<std::vector<float>> q(n_rows, std::vector<float>(static_cast<size_t>(hd)));
            for (auto& row : q)
                for (auto& x : row) x = dist(rng);
            std::vector<int> n_pos(n_rows);
            for (int r = 0; r < n_rows; ++r) n_pos[static_cast<size_t>(r)] = max_pos - 3 * r;
            // Naive: scores of the positions in the window, capped, softmax, weighted V rows, in double.
            std::vector<std::vector<double>> want(n_rows, std::vector<double>(static_cast<size_t>(hd), 0.0));
            for (int r = 0; r < n_rows; ++r) {
                const int first = window > 0 ? std::max(0, n_pos[static_cast<size_t>(r)] - window) : 0;
                std::vector<double> s;
                for (int j = first; j < n_pos[static_cast<size_t>(r)]; ++j) {
                    double dot = 0.0;
                    for (int d = 0; d < hd; ++d) dot += q[static_cast<size_t>(r)][static_cast<size_t>(d)] * kv.k[static_cast<size_t>(j / 16)][d * 16 + j % 16];
                    dot *= scale;
                    if (cap > 0.0f) dot = cap * std::tanh(dot / cap);
                    s.push_back(dot);
                }
                const double mx = *std::max_element(s.begin(), s.end());
                double sum = 0.0;
                for (double& x : s) sum += (x = std::exp(x - mx));
                for (int j = first; j < n_pos[static_cast<size_t>(r)]; ++j)
                    for (int d = 0; d < hd; ++d)
                        want[static_cast<size_t>(r)][static_cast<size_t>(d)] +=
                            s[static_cast<size_t>(j - first)] / sum * kv.v[static_cast<size_t>(j / 16)][static_cast<size_t>((j % 16) * kv.stride + d)];
            }
            for (kernel_isa isa : isas()) {
                CAPTURE(hd);
                CAPTURE(cap);
                CAPTURE(window);
                CAPTURE(std::string(to_string(isa)));
                std::vector<std::vector<float>> scores(n_rows, std::vector<float>(max_pos + 16)), out(n_rows, std::vector<float>(static_cast<size_t>(hd)));
                std::vector<attention_row> rows;
                for (int r = 0; r < n_rows; ++r)
                    rows.push_back({q[static_cast<size_t>(r)].data(), n_pos[static_cast<size_t>(r)], scores[static_cast<size_t>(r)].data(), out[static_cast<size_t>(r)].data()});
                attention_args shared{nullptr, kv.k.data(), kv.v.data(), 16, kv.stride, 0, scale, nullptr, nullptr, cap, window};
                attend_rows(shared, rows.data(), n_rows, hd, isa);
                {  // the same from an fp16 cache, within the rounding of the (scalar) feature kernel
                    std::vector<std::vector<float>> out16(n_rows, std::vector<float>(static_cast<size_t>(hd)));
                    std::vector<attention_row> rows16 = rows;
                    for (int r = 0; r < n_rows; ++r) rows16[static_cast<size_t>(r)].out = out16[static_cast<size_t>(r)].data();
                    attend_rows(kv.half(shared), rows16.data(), n_rows, hd, isa);
                    for (size_t r = 0; r < out.size(); ++r)
                        for (size_t d = 0; d < out[r].size(); ++d) CHECK(out16[r][d] == doctest::Approx(out[r][d]).epsilon(1e-5).scale(1.0));
                }
                for (int r = 0; r < n_rows; ++r)
                    for (int d = 0; d < hd; ++d)
                        CHECK(out[static_cast<size_t>(r)][static_cast<size_t>(d)] ==
                              doctest::Approx(want[static_cast<size_t>(r)][static_cast<size_t>(d)]).epsilon(1e-4).scale(1.0));
                // One row through attend() too.
                attention_args one = shared;
                one.q = rows[0].q;
                one.n_pos = rows[0].n_pos;
                one.scores = scores[0].data();
                std::vector<float> o(static_cast<size_t>(hd));
                one.out = o.data();
                attend(one, hd, isa);
                for (int d = 0; d < hd; ++d) CHECK(o[static_cast<size_t>(d)] == doctest::Approx(want[0][static_cast<size_t>(d)]).epsilon(1e-4).scale(1.0));
            }
        }
    }
}
