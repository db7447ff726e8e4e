// Which traces are recorded, as OTEL_TRACES_SAMPLER names them:
// always_on, always_off, traceidratio (OTEL_TRACES_SAMPLER_ARG: the ratio
// in [0, 1]), and parentbased_always_on / parentbased_always_off /
// parentbased_traceidratio, which follow the sampled flag of an incoming
// traceparent and use the named sampler for a trace that starts here
// (the default: parentbased_always_on, as the OpenTelemetry SDKs have it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runtime/telemetry/trace_context.h"

namespace tachyon::telemetry {

class sampler {
public:
    enum class kind { always_on, always_off, trace_id_ratio };

    sampler() = default;
    // `name` empty: the default. `arg` empty: ratio 1.0. Errors name the
    // variable and list what was expected.
    static result<sampler> parse(std::string_view name, std::string_view arg);

    // Whether a trace with id `trace` is recorded; `parent` is the incoming
    // context, if any.
    bool should_sample(const trace_id& trace, const std::optional<span_context>& parent) const;
    // "parentbased_traceidratio{0.25}", for logs.
    std::string describe() const;

private:
    kind root_ = kind::always_on;
    bool parent_based_ = true;
    double ratio_ = 1.0;
};

}  // namespace tachyon::telemetry
