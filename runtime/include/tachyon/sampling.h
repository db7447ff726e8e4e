// tachyon C++ SDK: how the model picks each token, for agents and for chat.
#pragma once

#include <cstdint>

namespace tachyon::sdk {

// Sampling chain: repetition penalty → top-k → temperature → top-p → min-p.
// The default is greedy (temperature 0): bit-for-bit reproducible, as agents
// are usually run.
struct sampling_options {
    float temperature = 0.0f;     // 0: greedy
    int top_k = 40;               // <= 0: off
    float top_p = 0.95f;          // >= 1: off
    float min_p = 0.05f;          // <= 0: off
    float repeat_penalty = 1.0f;  // 1: off
    int repeat_last_n = 64;       // tokens the penalty looks back over
    uint64_t seed = 0;            // for temperature > 0
};

}  // namespace tachyon::sdk
