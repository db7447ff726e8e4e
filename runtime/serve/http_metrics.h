// Counters of the HTTP server, written as Prometheus text (/metrics):
// requests by route and status, prompt and completion tokens, throughput
// over the last 10 s, chat completions in flight and queued, the prefix-cache
// hit rate of chat prompts, tool-call latency histograms, agent runs by
// state, per model the engine's own counters (KV blocks, engine queue,
// prefix-cache lookups and hits), and the spans tracing dropped. Thread-safe; one object per server,
// passed explicitly.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/chat/model_host.h"
#include "runtime/telemetry/tracer.h"

namespace tachyon::http {

// What the registry of runs reports (runs by state).
using run_state_counts = std::map<std::string, int64_t>;

class metrics {
public:
    void count_request(std::string_view route, int status);
    void chat_started();   // in flight and queued (no token yet)
    void chat_first_token();
    void chat_finished(bool had_first_token, int prompt_tokens, int completion_tokens, int cached_tokens);
    void observe_tool(std::string_view tool, double ms);
    // Tracing (runtime/telemetry/): its exporter's counters are shown as
    // tachyon_otel_spans_dropped_total and tachyon_otel_spans_exported_total.
    void set_tracer(std::shared_ptr<telemetry::tracer> t);

    struct model_entry {
        std::string id;
        std::shared_ptr<model_host> host;
    };
    // The text of /metrics; engine gauges are read from the hosts now.
    std::string render(const std::vector<model_entry>& models, const run_state_counts& runs) const;

private:
    struct histogram {
        std::vector<int64_t> counts;  // [n_bounds + 1] per bucket (not cumulative)
        double sum = 0;
        int64_t n = 0;
    };
    // The engine's own gauges for one model, kept in one place so that
    // counters the engine adds (prefix-cache lookups) join here.
    static void render_engine(std::string& out, const model_entry& m);

    mutable std::mutex mutex_;
    std::map<std::pair<std::string, int>, int64_t> requests_;
    int64_t in_flight_ = 0, queued_ = 0;
    int64_t prompt_tokens_ = 0, completion_tokens_ = 0, cached_tokens_ = 0, chats_ = 0;
    mutable std::deque<std::pair<std::chrono::steady_clock::time_point, int>> recent_;  // completion tokens per finished request
    std::map<std::string, histogram, std::less<>> tools_;
    std::shared_ptr<telemetry::tracer> tracer_;
};

}  // namespace tachyon::http
