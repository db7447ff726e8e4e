#include "inference/engine/sampler.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

using namespace tachyon;

TEST_CASE("greedy picks the argmax, lowest id on ties, and respects the mask") {
    std::vector<float> logits{0.1f, 2.0f, -1.0f, 2.0f};
    sampler s(sampling_params::greedy());
    CHECK(s.sample(logits) == 1);
    std::vector<uint8_t> mask{1, 0, 1, 1};
    CHECK(s.sample(logits, {}, mask) == 3);
    CHECK(argmax(logits) == 1);
}

TEST_CASE("greedy over a vocabulary: the first largest logit wherever it lies, NaNs never chosen") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (size_t n : {32u, 33u, 100u, 32000u, 151936u}) {
        CAPTURE(n);
        std::vector<float> logits(n);
        for (size_t i = 0; i < n; ++i) logits[i] = std::sin(static_cast<float>(i)) * 3.0f;  // below 3.0 everywhere
        for (size_t at : {size_t{0}, n / 2, n - 1}) {
            CAPTURE(at);
            std::vector<float> l = logits;
            l[at] = 7.0f;
            CHECK(argmax(l) == static_cast<int32_t>(at));
            // a tie later on: the lower id
            if (at + 3 < n) {
                l[at + 3] = 7.0f;
                CHECK(argmax(l) == static_cast<int32_t>(at));
            }
            // NaNs before and after do not win
            l[n / 3] = nan;
            l[n - 1 == at ? 0 : n - 1] = nan;
            CHECK(argmax(l) == static_cast<int32_t>(at));
        }
        // every logit -inf or NaN: the first id, as the mask-free scalar scan gives
        std::vector<float> none(n, -inf);
        none[1] = nan;
        CHECK(argmax(none) == 0);
        sampler s(sampling_params::greedy());
        std::vector<float> l = logits;
        l[n - 1] = 9.0f;
        CHECK(s.sample(l) == static_cast<int32_t>(n - 1));
    }
}

TEST_CASE("the same seed gives the same draws, another seed differs") {
    std::vector<float> logits(50);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 7) * 0.3f;
    sampling_params p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 42;
    auto draw = [&](uint64_t seed) {
        p.seed = seed;
        sampler s(p);
        std::vector<int32_t> out;
        for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits));
        return out;
    };
    CHECK(draw(42) == draw(42));
    CHECK(draw(42) != draw(43));
}

TEST_CASE("top-k 1 is greedy, top-k limits the support") {
    std::vector<float> logits{1.0f, 3.0f, 2.0f, 0.5f};
    sampling_params p;
    p.temperature = 5.0f;  // nearly uniform
    p.top_k = 2;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    sampler s(p);
    std::map<int32_t, int> seen;
    for (int i = 0; i < 500; ++i) ++seen[s.sample(logits)];
    CHECK(seen.size() == 2);
    CHECK(seen.count(1) == 1);
    CHECK(seen.count(2) == 1);
    p.top_k = 1;
    sampler g(p);
    for (int i = 0; i < 20; ++i) CHECK(g.sample(logits) == 1);
}

TEST_CASE("top-p keeps the smallest set reaching the mass, min-p drops the unlikely") {
    // Probabilities at temperature 1: roughly 0.64, 0.24, 0.09, 0.03.
    std::vector<float> logits{3.0f, 2.0f, 1.0f, 0.0f};
    sampling_params p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.min_p = 0.0f;
    p.top_p = 0.7f;
    sampler s(p);
    std::map<int32_t, int> seen;
    for (int i = 0; i < 1000; ++i) ++seen[s.sample(logits)];
    CHECK(seen.size() == 2);  // 0.64 < 0.7 <= 0.88
    p.top_p = 1.0f;
    p.min_p = 0.3f;  // keeps p >= 0.19
    sampler m(p);
    seen.clear();
    for (int i = 0; i < 1000; ++i) ++seen[m.sample(logits)];
    CHECK(seen.size() == 2);
}

TEST_CASE("draw frequencies follow the softmax") {
    std::vector<float> logits{0.0f, std::log(3.0f)};  // p = 0.25, 0.75
    sampling_params p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 7;
    sampler s(p);
    int ones = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) ones += s.sample(logits) == 1;
    CHECK(ones / double(n) == doctest::Approx(0.75).epsilon(0.03));
}

TEST_CASE("repetition penalty steers greedy decoding away from recent tokens") {
    std::vector<float> logits{2.0f, 1.9f, 0.0f};
    sampling_params p = sampling_params::greedy();
    p.repeat_penalty = 1.5f;
    sampler s(p);
    std::vector<int32_t> history{0};
    CHECK(s.sample(logits, history) == 1);  // 2.0 / 1.5 < 1.9
    CHECK(s.sample(logits, {}) == 0);
}

TEST_CASE("invalid parameters are rejected with the parameter named") {
    sampling_params p;
    p.top_p = 0.0f;
    auto st = p.validate();
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message.find("top_p") != std::string::npos);
    p = {};
    p.temperature = -1.0f;
    CHECK(p.validate().err().message.find("temperature") != std::string::npos);
    CHECK(sampling_params{}.validate().ok());
}
