// How many tokens of a draft pay to verify, from what this engine measured.
//
// A draft token is verified in the same forward as the step's real token,
// but it is not free: on a CPU a forward of 9 tokens through a k-quant
// matmul costs about four one-token forwards (the weights are read once,
// but the unpacking and the dot products grow with the tokens). A draft of
// 8 whose tokens are each kept with probability 0.6 yields on average 1.5
// extra tokens for those 4 steps of time, a loss; its first 2 tokens may
// still pay. Where a batch is nearly free (AMX, a GPU-like roofline) the
// whole draft pays. So the engine measures both sides as it runs:
//   - the wall time of its decode steps by the number of tokens in them
//     (step_ms[n], a running mean; prefill steps are not counted);
//   - per draft source, how often position i of a draft was kept once
//     positions 0..i-1 were (a decayed count, so it follows the workload);
// and verifies the prefix length k that maximises the step's expected yield
// per unit of time, (n_base + E[kept of k]) / step_ms[n_base + k].
// The engine uses it with engine_options::draft_tuning.
//
// A length not yet measured costs what the measured lengths around it give
// by linear interpolation, or, past the longest one measured, as much as it:
// optimistic, so a longer draft is tried, measured, and given up only once
// it is seen not to pay. Every `explore_every`-th choice verifies a longer
// prefix than the estimates pay for (twice the choice, at least 2 more), so
// the kept-rates past the chosen length are measured again as the workload
// changes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tachyon {

enum class draft_source : uint8_t {
    proposed,  // request::propose: the caller's guess (forced text, predicted calls)
    lookup,    // prompt lookup (draft.h)
};

class draft_cost_model {
public:
    static constexpr int max_positions = 64;  // draft positions tracked; later ones share the last estimate
    static constexpr int explore_every = 16;

    // `max_tokens`: the most tokens a step can hold (engine_options::max_batch_tokens).
    explicit draft_cost_model(int max_tokens);

    // Tokens of an offered draft of `offered` tokens to verify in a step that
    // holds `n_base` tokens without it (each yielding one). 0..offered.
    int choose(draft_source source, int offered, int n_base);

    // A decode step of `n_tokens` tokens took `ms` (wall time, forward and sampling).
    void record_step(int n_tokens, double ms);
    // A draft of `judged` positions was checked and the first `kept` kept
    // (kept <= judged; a draft cut short by the end of the request counts
    // only the positions that were judged).
    void record_draft(draft_source source, int judged, int kept);

    // The estimates the choice uses (for tests and diagnostics).
    double step_cost(int n_tokens) const;          // ms; 0 while no step was measured
    double keep_rate(draft_source source, int position) const;  // P(kept | the positions before kept)
    double expected_kept(draft_source source, int k) const;     // E[tokens kept of a k-token draft]

private:
    struct position_counts {
        double judged = 0;
        double kept = 0;
    };
    struct source_state {
        std::array<position_counts, max_positions> positions{};
        uint64_t n_choices = 0;
    };

    std::vector<double> step_ms_;   // [max_tokens + 1]: running mean; 0 = not measured
    std::vector<uint32_t> n_steps_;  // [max_tokens + 1]: steps in that mean (its weight caps at 1/8)
    std::array<source_state, 2> sources_{};
};

}  // namespace tachyon
