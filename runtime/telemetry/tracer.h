// The process's tracing: settings (otel_config.h), the sampler, the clock
// that turns the runtime's steady-clock times into unix nanoseconds, and the
// exporter (otlp_exporter.h) spans go to when they end. One per process
// (`tachyon run`, `tachyon serve`, an SDK runtime), shared by every run and
// chat completion; null where tracing is not configured. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runtime/telemetry/otel_config.h"
#include "runtime/telemetry/otlp_exporter.h"
#include "runtime/telemetry/span.h"

namespace tachyon::telemetry {

// Where a new span sits: its own context and its parent's span id (zero
// for the root of a trace that starts here).
struct span_start {
    span_context context;
    span_id parent{};
};

class tracer {
public:
    // Null (and no error) when `config` has no endpoint. `tuning` sets the
    // exporter's queue, batch and retry settings (its traces_url, headers
    // and timeout come from `config`).
    static result<std::shared_ptr<tracer>> create(const otel_config& config, exporter_options tuning = {});

    // The root span of this process's part of a trace: a child of
    // `traceparent` when it is a valid header (W3C: a bad one is ignored and
    // a new trace starts), sampled as the sampler decides.
    span_start start_root(std::string_view traceparent) const;
    // A child of `parent`, in its trace and with its sampled flag.
    static span_start child_of(const span_context& parent);

    // Hands a finished span to the exporter when its trace is sampled.
    void end(span s);

    // Unix nanoseconds of a steady-clock time, by the offset between the
    // two clocks taken when the tracer was made (spans are ordered and
    // measured by the steady clock; only the origin comes from the wall).
    uint64_t unix_nanos(std::chrono::steady_clock::time_point t) const;

    bool capture_content() const { return config_.capture_content; }
    const otel_config& config() const { return config_; }
    uint64_t n_dropped() const { return exporter_->n_dropped(); }
    uint64_t n_exported() const { return exporter_->n_exported(); }
    // Exports what has ended and waits at most `wait` (tests, shutdown).
    bool flush(std::chrono::milliseconds wait) { return exporter_->flush(wait); }

private:
    tracer(otel_config config, std::unique_ptr<otlp_exporter> exporter);
    otel_config config_;
    std::unique_ptr<otlp_exporter> exporter_;
    int64_t steady_to_unix_ns_ = 0;
};

// The tracer of a process from its environment and --otlp-endpoint: null
// when tracing is not configured. For the CLI and the SDK.
result<std::shared_ptr<tracer>> tracer_from_env(std::string_view endpoint_flag = {});

}  // namespace tachyon::telemetry
