// Token sampling as a chain of stages over the candidate list: repetition
// penalty → top-k → temperature → top-p → min-p → draw. Temperature 0 is
// greedy (argmax, lowest id on ties) and bit-for-bit reproducible; any other
// setting is reproducible for a given seed.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace tachyon {

struct sampling_params {
    float temperature = 0.8f;    // 0: greedy
    int top_k = 40;              // <= 0: off
    float top_p = 0.95f;         // >= 1: off
    float min_p = 0.05f;         // <= 0: off; keeps p >= min_p * p_max
    float repeat_penalty = 1.0f; // 1: off; > 1 discourages tokens seen in the last repeat_last_n
    int repeat_last_n = 64;
    uint64_t seed = 0;

    static sampling_params greedy() {
        sampling_params p;
        p.temperature = 0.0f;
        return p;
    }
    // Checks ranges; the error names the parameter and its valid range.
    status validate() const;
};

class sampler {
public:
    explicit sampler(const sampling_params& params);

    const sampling_params& params() const { return params_; }

    // Picks a token from logits [n_vocab]. `history` is the sequence so far
    // (for the repetition penalty). `allowed`, when not empty, is a mask
    // [n_vocab] of tokens a constraint permits (at least one must be set).
    int32_t sample(std::span<const float> logits, std::span<const int32_t> history = {},
                   std::span<const uint8_t> allowed = {});

private:
    struct candidate {
        int32_t id;
        float logit;
    };
    sampling_params params_;
    std::mt19937_64 rng_;
    std::vector<candidate> cands_;  // reused between calls: no allocation per token
};

// Index of the largest value (lowest index on ties), restricted to `allowed`
// when it is not empty; -1 when nothing is allowed.
int32_t argmax(std::span<const float> logits, std::span<const uint8_t> allowed = {});

}  // namespace tachyon
