#include "runtime/telemetry/sampler.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tachyon::telemetry {

result<sampler> sampler::parse(std::string_view name, std::string_view arg) {
    sampler s;
    if (name.empty()) return s;
    std::string_view root = name;
    s.parent_based_ = false;
    if (root.rfind("parentbased_", 0) == 0) {
        s.parent_based_ = true;
        root.remove_prefix(12);
    }
    if (root == "always_on") s.root_ = kind::always_on;
    else if (root == "always_off") s.root_ = kind::always_off;
    else if (root == "traceidratio") s.root_ = kind::trace_id_ratio;
    else
        return make_error(errc::invalid_argument, "OTEL_TRACES_SAMPLER '" + std::string(name) +
                                                      "': expected always_on, always_off, traceidratio, parentbased_always_on, "
                                                      "parentbased_always_off or parentbased_traceidratio");
    if (s.root_ == kind::trace_id_ratio && !arg.empty()) {
        const std::string text(arg);
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end != text.c_str() + text.size() || !std::isfinite(v) || v < 0 || v > 1)
            return make_error(errc::invalid_argument,
                              "OTEL_TRACES_SAMPLER_ARG '" + text + "': expected a ratio between 0 and 1 for " + std::string(name));
        s.ratio_ = v;
    }
    return s;
}

bool sampler::should_sample(const trace_id& trace, const std::optional<span_context>& parent) const {
    if (parent_based_ && parent) return parent->sampled;
    switch (root_) {
        case kind::always_on: return true;
        case kind::always_off: return false;
        case kind::trace_id_ratio: {
            // The spec's rule: the trace id's last 8 bytes, read as a number,
            // below ratio * 2^64 (so every process decides the same).
            uint64_t v = 0;
            for (size_t i = 8; i < 16; ++i) v = v << 8 | trace[i];
            if (ratio_ >= 1.0) return true;
            return static_cast<double>(v) < ratio_ * 18446744073709551616.0;
        }
    }
    return true;
}

std::string sampler::describe() const {
    std::string root = root_ == kind::always_on ? "always_on" : root_ == kind::always_off ? "always_off" : "traceidratio";
    if (root_ == kind::trace_id_ratio) {
        root += '{';
        root += std::to_string(ratio_);
        root += '}';
    }
    // Appended piece by piece: g++ 12 warns (-Wrestrict) falsely on operator+ temporaries here.
    std::string out = parent_based_ ? "parentbased_" : "";
    out += root;
    return out;
}

}  // namespace tachyon::telemetry
