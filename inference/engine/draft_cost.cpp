#include "inference/engine/draft_cost.h"

#include <algorithm>

namespace tachyon {
namespace {

// A step's mean follows the last ~8 steps of that length once it has them:
// the cost of a length drifts with the context (attention) and the machine.
constexpr uint32_t step_window = 8;
// Kept-rate counts are halved once a source's first position has been judged
// this often, so the estimates follow a workload whose drafts change.
constexpr double position_window = 256;
// Prior of each position's kept-rate, as kept / judged pseudo-counts: 2 of 3
// kept, optimistic so that an unmeasured position is tried.
constexpr double prior_kept = 2, prior_judged = 3;

}  // namespace

draft_cost_model::draft_cost_model(int max_tokens)
    : step_ms_(static_cast<size_t>(std::max(max_tokens, 1)) + 1, 0.0), n_steps_(step_ms_.size(), 0) {}

void draft_cost_model::record_step(int n_tokens, double ms) {
    if (n_tokens <= 0 || static_cast<size_t>(n_tokens) >= step_ms_.size() || !(ms >= 0)) return;
    const size_t n = static_cast<size_t>(n_tokens);
    const uint32_t k = n_steps_[n] < step_window ? ++n_steps_[n] : step_window;
    step_ms_[n] += (ms - step_ms_[n]) / k;
}

void draft_cost_model::record_draft(draft_source source, int judged, int kept) {
    source_state& s = sources_[static_cast<size_t>(source)];
    judged = std::clamp(judged, 0, max_positions);
    kept = std::clamp(kept, 0, judged);
    for (int i = 0; i < judged; ++i) {
        s.positions[static_cast<size_t>(i)].judged += 1;
        if (i < kept) s.positions[static_cast<size_t>(i)].kept += 1;
    }
    if (s.positions[0].judged >= position_window) {
        for (auto& p : s.positions) {
            p.judged *= 0.5;
            p.kept *= 0.5;
        }
    }
}

double draft_cost_model::step_cost(int n_tokens) const {
    if (n_tokens <= 0) return 0;
    const int last = static_cast<int>(step_ms_.size()) - 1;
    n_tokens = std::min(n_tokens, last);
    if (n_steps_[static_cast<size_t>(n_tokens)] > 0) return step_ms_[static_cast<size_t>(n_tokens)];
    int lo = n_tokens - 1, hi = n_tokens + 1;
    while (lo >= 1 && n_steps_[static_cast<size_t>(lo)] == 0) --lo;
    while (hi <= last && n_steps_[static_cast<size_t>(hi)] == 0) ++hi;
    const bool has_lo = lo >= 1, has_hi = hi <= last;
    if (has_lo && has_hi) {
        const double t = static_cast<double>(n_tokens - lo) / (hi - lo);
        return step_ms_[static_cast<size_t>(lo)] + t * (step_ms_[static_cast<size_t>(hi)] - step_ms_[static_cast<size_t>(lo)]);
    }
    if (has_lo) return step_ms_[static_cast<size_t>(lo)];  // past the longest measured step: as cheap as it
    if (has_hi) return step_ms_[static_cast<size_t>(hi)];
    return 0;
}

double draft_cost_model::keep_rate(draft_source source, int position) const {
    const position_counts& p = sources_[static_cast<size_t>(source)].positions[static_cast<size_t>(std::clamp(position, 0, max_positions - 1))];
    return (p.kept + prior_kept) / (p.judged + prior_judged);
}

double draft_cost_model::expected_kept(draft_source source, int k) const {
    double reach = 1, sum = 0;
    for (int i = 0; i < k; ++i) {
        reach *= keep_rate(source, i);
        sum += reach;
    }
    return sum;
}

int draft_cost_model::choose(draft_source source, int offered, int n_base) {
    if (offered <= 0) return 0;
    n_base = std::max(n_base, 1);
    const int last = static_cast<int>(step_ms_.size()) - 1;
    offered = std::min(offered, std::max(last - n_base, 0));
    if (step_cost(n_base) <= 0) return offered;  // nothing measured yet
    source_state& s = sources_[static_cast<size_t>(source)];
    int best = 0;
    double best_rate = 0, reach = 1, kept = 0;
    for (int k = 0; k <= offered; ++k) {
        if (k > 0) {
            reach *= keep_rate(source, k - 1);
            kept += reach;
        }
        const double rate = (n_base + kept) / step_cost(n_base + k);
        if (rate > best_rate) {
            best_rate = rate;
            best = k;
        }
    }
    // Now and then a longer draft than the estimates pay for, so that the
    // kept-rates past the chosen length are measured again.
    if (++s.n_choices % explore_every == 0 && best < offered) best = std::min(offered, std::max(2 * best, best + 2));
    return best;
}

}  // namespace tachyon
