// Network latency for the agent benchmark: a tool decorator that makes every
// call wait, before its work starts, as a remote log store or trace backend
// answers. The wait is an Asio timer on the run's strand (it holds no thread
// of the tool pool), it counts against the call's timeout, and a call cut off
// meanwhile (timeout, cancelled run, discarded prediction) stops waiting and
// never starts its work.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "base/result.h"
#include "runtime/agent/agent_run.h"
#include "tools/core/tool.h"

namespace tachyon {

// Lognormal with the given median and 95th percentile.
struct tool_latency {
    double median_ms = 0;  // 0: none
    double p95_ms = 0;
    uint64_t seed = 0;
};

// "none" (or "0"), or "lognormal:MEDIAN_MS:P95_MS" with P95 >= MEDIAN > 0.
result<tool_latency> parse_tool_latency(const std::string& spec);

// One run's latencies: drawn from its own seed in the order its calls start
// (on the run's strand), so that a run's calls wait the same on every
// rerun. The mutex only guards a source shared by mistake across runs.
class latency_source {
public:
    explicit latency_source(const tool_latency& model) : model_(model), rng_(model.seed) {}
    // The next call's wait in ms; 0 when the model has no latency.
    double next_ms();

private:
    tool_latency model_;
    std::mutex mutex_;
    std::mt19937_64 rng_;
};

// `inner` as it is (name, schema, flags, work), whose calls first wait a
// latency drawn from `source`.
std::shared_ptr<tools::tool> with_latency(std::shared_ptr<tools::tool> inner, std::shared_ptr<latency_source> source);

// For one run_request: wraps every tool of the run around one source seeded
// with `model.seed`. Empty when the model has no latency (the tools are used
// as they are).
tool_wrapper latency_wrapper(const tool_latency& model);

}  // namespace tachyon
