#include "inference/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tachyon {

status sampling_params::validate() const {
    auto bad = [](const std::string& what) { return make_error(errc::invalid_argument, "sampling: " + what); };
    if (!(temperature >= 0.0f) || !std::isfinite(temperature)) return bad("temperature must be >= 0, got " + std::to_string(temperature));
    if (!(top_p > 0.0f && top_p <= 1.0f)) return bad("top_p must be in (0, 1], got " + std::to_string(top_p));
    if (!(min_p >= 0.0f && min_p < 1.0f)) return bad("min_p must be in [0, 1), got " + std::to_string(min_p));
    if (!(repeat_penalty > 0.0f) || !std::isfinite(repeat_penalty)) return bad("repeat_penalty must be > 0, got " + std::to_string(repeat_penalty));
    if (repeat_last_n < 0) return bad("repeat_last_n must be >= 0, got " + std::to_string(repeat_last_n));
    return {};
}

int32_t argmax(std::span<const float> logits, std::span<const uint8_t> allowed) {
#if defined(__AVX2__)
    // Unconstrained: the largest value eight lanes at a time (NaNs never
    // win: max keeps its second operand when the first is NaN), then the
    // first position that holds it. A batch samples a row per sequence of
    // 32-150 thousand logits each step.
    if (allowed.empty() && logits.size() >= 32) {
        const float* x = logits.data();
        const size_t n = logits.size();
        __m256 m[4];
        for (auto& v : m) v = _mm256_set1_ps(-INFINITY);
        size_t i = 0;
        for (; i + 32 <= n; i += 32)
            for (int k = 0; k < 4; ++k) m[k] = _mm256_max_ps(_mm256_loadu_ps(x + i + 8 * k), m[k]);
        const __m256 m2 = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, m2);
        float top = lanes[0];
        for (int k = 1; k < 8; ++k) top = std::max(top, lanes[k]);
        for (; i < n; ++i)
            if (x[i] > top) top = x[i];
        if (top > -INFINITY) {
            const __m256 t = _mm256_set1_ps(top);
            size_t j = 0;
            for (; j + 8 <= n; j += 8) {
                const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + j), t, _CMP_EQ_OQ));
                if (hit != 0) return static_cast<int32_t>(j + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(hit))));
            }
            for (; j < n; ++j)
                if (x[j] == top) return static_cast<int32_t>(j);
        }
    }
#endif
    int32_t best = -1;
    float best_v = -INFINITY;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (!allowed.empty() && !allowed[i]) continue;
        // a NaN first taken gives way to any number after it
        if (best < 0 || logits[i] > best_v || (std::isnan(best_v) && !std::isnan(logits[i]))) {
            best = static_cast<int32_t>(i);
            best_v = logits[i];
        }
    }
    return best;
}

sampler::sampler(const sampling_params& params) : params_(params), rng_(params.seed) {}

int32_t sampler::sample(std::span<const float> logits, std::span<const int32_t> history, std::span<const uint8_t> allowed) {
    TACHYON_ASSERT(!logits.empty(), "sampler: empty logits");
    TACHYON_ASSERT(allowed.empty() || allowed.size() == logits.size(), "sampler: mask size differs from the vocabulary");

    const bool penalize = params_.repeat_penalty != 1.0f && params_.repeat_last_n > 0 && !history.empty();
    if (params_.temperature <= 0.0f && !penalize) {
        int32_t id = argmax(logits, allowed);
        TACHYON_ASSERT(id >= 0, "sampler: the constraint allows no token");
        return id;
    }

    cands_.clear();
    for (size_t i = 0; i < logits.size(); ++i) {
        if (!allowed.empty() && !allowed[i]) continue;
        cands_.push_back({static_cast<int32_t>(i), logits[i]});
    }
    TACHYON_ASSERT(!cands_.empty(), "sampler: the constraint allows no token");

    // Repetition penalty (as CTRL defines it): divide positive logits, multiply negative ones.
    if (penalize) {
        size_t n = std::min(history.size(), static_cast<size_t>(params_.repeat_last_n));
        std::unordered_set<int32_t> seen(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
        for (auto& c : cands_) {
            if (seen.count(c.id)) c.logit = c.logit > 0 ? c.logit / params_.repeat_penalty : c.logit * params_.repeat_penalty;
        }
    }
    auto by_logit = [](const candidate& a, const candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
    if (params_.temperature <= 0.0f) return std::min_element(cands_.begin(), cands_.end(), by_logit)->id;

    // Top-k: keep the k best (partial sort; the rest of the chain wants them ordered).
    size_t k = cands_.size();
    if (params_.top_k > 0) k = std::min(k, static_cast<size_t>(params_.top_k));
    std::partial_sort(cands_.begin(), cands_.begin() + static_cast<std::ptrdiff_t>(k), cands_.end(), by_logit);
    cands_.resize(k);

    // Temperature, then softmax in place (logit field now holds probabilities).
    const float max_logit = cands_.front().logit;
    double sum = 0.0;
    for (auto& c : cands_) {
        c.logit = std::exp((c.logit - max_logit) / params_.temperature);
        sum += c.logit;
    }
    for (auto& c : cands_) c.logit = static_cast<float>(c.logit / sum);

    // Top-p: the smallest prefix whose mass reaches p.
    if (params_.top_p < 1.0f) {
        double mass = 0.0;
        size_t keep = cands_.size();
        for (size_t i = 0; i < cands_.size(); ++i) {
            mass += cands_[i].logit;
            if (mass >= params_.top_p) {
                keep = i + 1;
                break;
            }
        }
        cands_.resize(keep);
    }
    // Min-p: drop tokens below min_p times the best probability.
    if (params_.min_p > 0.0f) {
        const float floor = params_.min_p * cands_.front().logit;
        size_t keep = 1;
        while (keep < cands_.size() && cands_[keep].logit >= floor) ++keep;
        cands_.resize(keep);
    }

    double total = 0.0;
    for (const auto& c : cands_) total += c.logit;
    // 53 random bits → a double in [0, 1): the same on every platform, unlike std distributions.
    double u = static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0) * total;
    for (const auto& c : cands_) {
        u -= c.logit;
        if (u < 0.0) return c.id;
    }
    return cands_.back().id;
}

}  // namespace tachyon
