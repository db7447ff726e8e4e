#include "inference/engine/draft_cost.h"

#include <doctest/doctest.h>

using namespace tachyon;

namespace {

// Steps of 1..n tokens costing base + per_token * (n - 1) ms, each measured twice.
void measure_linear(draft_cost_model& m, int n, double base, double per_token) {
    for (int round = 0; round < 2; ++round)
        for (int t = 1; t <= n; ++t) m.record_step(t, base + per_token * (t - 1));
}

// `n` drafts of `len` tokens from `source`, each position kept with the
// given pattern: every draft keeps its first `kept` tokens.
void judge(draft_cost_model& m, draft_source source, int n, int len, int kept) {
    for (int i = 0; i < n; ++i) m.record_draft(source, kept < len ? kept + 1 : len, kept);
}

}  // namespace

TEST_CASE("before any step is measured, the whole draft is verified") {
    draft_cost_model m(256);
    CHECK(m.choose(draft_source::lookup, 8, 1) == 8);
    CHECK(m.choose(draft_source::proposed, 16, 3) == 16);
    CHECK(m.choose(draft_source::lookup, 0, 1) == 0);
    // A draft never overflows the step.
    draft_cost_model small(10);
    CHECK(small.choose(draft_source::lookup, 20, 4) == 6);
}

TEST_CASE("step costs are running means, interpolated between measured lengths and flat past the longest") {
    draft_cost_model m(64);
    CHECK(m.step_cost(4) == 0);
    m.record_step(1, 10);
    m.record_step(1, 12);
    CHECK(m.step_cost(1) == doctest::Approx(11));
    m.record_step(9, 30);
    CHECK(m.step_cost(5) == doctest::Approx(11 + (30 - 11) * 0.5));
    CHECK(m.step_cost(40) == doctest::Approx(30));  // optimistic past the longest measured
    // Before the shortest measured: as costly as it.
    draft_cost_model only_long(64);
    only_long.record_step(9, 30);
    CHECK(only_long.step_cost(1) == doctest::Approx(30));
    // Nonsense is ignored.
    m.record_step(0, 5);
    m.record_step(65, 5);
    m.record_step(3, -1);
    CHECK(m.step_cost(3) == doctest::Approx(11 + (30 - 11) * 0.25));
    // The mean follows the recent steps: after many at 20 ms it is near 20.
    for (int i = 0; i < 100; ++i) m.record_step(1, 20);
    CHECK(m.step_cost(1) == doctest::Approx(20).epsilon(0.01));
}

TEST_CASE("where a step's cost grows with its tokens, a draft that is mostly rejected is cut") {
    // CPU k-quant shape: 9 tokens cost ~4.2 one-token steps.
    draft_cost_model m(256);
    measure_linear(m, 17, 10, 4);
    // Lookup drafts keep their first token a third of the time and no more.
    for (int i = 0; i < 60; ++i) m.record_draft(draft_source::lookup, i % 3 == 0 ? 2 : 1, i % 3 == 0 ? 1 : 0);
    CHECK(m.keep_rate(draft_source::lookup, 0) == doctest::Approx(22.0 / 63.0));
    CHECK(m.choose(draft_source::lookup, 8, 1) == 0);
}

TEST_CASE("a draft whose tokens are all kept is verified whole when the batch is cheap per token") {
    draft_cost_model m(256);
    measure_linear(m, 17, 10, 4);
    judge(m, draft_source::proposed, 200, 16, 16);
    // 17 tokens for 74 ms against 1 for 10: the draft pays.
    CHECK(m.choose(draft_source::proposed, 16, 1) == 16);
    CHECK(m.expected_kept(draft_source::proposed, 16) > 14);
}

TEST_CASE("the draft is cut where the chance of reaching a position no longer pays its cost") {
    // Each of the first four positions kept, then almost never: the choice stops at 4.
    draft_cost_model m(256);
    measure_linear(m, 17, 10, 2);
    judge(m, draft_source::lookup, 100, 8, 4);
    CHECK(m.keep_rate(draft_source::lookup, 3) > 0.95);
    CHECK(m.keep_rate(draft_source::lookup, 4) < 0.05);
    CHECK(m.choose(draft_source::lookup, 8, 1) == 4);
    // The sources are separate: proposed drafts keep the optimistic prior.
    CHECK(m.keep_rate(draft_source::proposed, 4) == doctest::Approx(2.0 / 3.0));
}

TEST_CASE("a flat step cost (the batch nearly free) keeps the whole of even a poor draft") {
    draft_cost_model m(256);
    measure_linear(m, 17, 10, 0);
    for (int i = 0; i < 60; ++i) m.record_draft(draft_source::lookup, 2, 1);
    CHECK(m.choose(draft_source::lookup, 8, 1) == 8);
}

TEST_CASE("in a batch of other requests a draft costs its share of the larger step") {
    // Costs flat up to 4 tokens, then 5 ms a token: with 4 tokens in the
    // batch already every draft token costs its full 5 ms; alone, 3 are free.
    draft_cost_model m(256);
    for (int round = 0; round < 2; ++round)
        for (int t = 1; t <= 20; ++t) m.record_step(t, t <= 4 ? 10 : 10 + 5.0 * (t - 4));
    judge(m, draft_source::lookup, 100, 8, 3);  // 3 kept, the 4th rejected
    CHECK(m.choose(draft_source::lookup, 8, 1) == 3);
    CHECK(m.choose(draft_source::lookup, 8, 4) == 0);
}

TEST_CASE("every explore_every-th choice verifies a longer draft, so rates past the cut are measured again") {
    draft_cost_model m(256);
    measure_linear(m, 17, 10, 4);
    for (int i = 0; i < 60; ++i) m.record_draft(draft_source::lookup, 1, 0);
    int longer = 0;
    for (int i = 0; i < 4 * draft_cost_model::explore_every; ++i) {
        const int k = m.choose(draft_source::lookup, 8, 1);
        CHECK((k == 0 || k == 2));
        longer += k > 0 ? 1 : 0;
    }
    CHECK(longer == 4);
}

TEST_CASE("kept-rates follow a workload that changes") {
    draft_cost_model m(256);
    judge(m, draft_source::lookup, 300, 4, 0);
    CHECK(m.keep_rate(draft_source::lookup, 0) < 0.05);
    judge(m, draft_source::lookup, 600, 4, 4);
    CHECK(m.keep_rate(draft_source::lookup, 0) > 0.6);
    // Counts past the tracked positions are clamped, never out of bounds.
    m.record_draft(draft_source::lookup, 1000, 1000);
    CHECK(m.keep_rate(draft_source::lookup, 1000) > 0);
}
