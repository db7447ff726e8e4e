#include "runtime/serve/http_metrics.h"

#include <array>
#include <cstdio>

namespace tachyon::http {
namespace {

constexpr std::array<double, 11> k_tool_bounds_ms = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};
constexpr auto k_window = std::chrono::seconds(10);

std::string label_value(std::string_view v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

std::string number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

}  // namespace

void metrics::count_request(std::string_view route, int status) {
    std::lock_guard lock(mutex_);
    ++requests_[{std::string(route), status}];
}

void metrics::chat_started() {
    std::lock_guard lock(mutex_);
    ++in_flight_;
    ++queued_;
}

void metrics::chat_first_token() {
    std::lock_guard lock(mutex_);
    --queued_;
}

void metrics::chat_finished(bool had_first_token, int prompt_tokens, int completion_tokens, int cached_tokens) {
    std::lock_guard lock(mutex_);
    --in_flight_;
    if (!had_first_token) --queued_;
    ++chats_;
    prompt_tokens_ += prompt_tokens;
    completion_tokens_ += completion_tokens;
    cached_tokens_ += cached_tokens;
    const auto now = std::chrono::steady_clock::now();
    recent_.emplace_back(now, completion_tokens);
    while (!recent_.empty() && now - recent_.front().first > k_window) recent_.pop_front();
}

void metrics::set_tracer(std::shared_ptr<telemetry::tracer> t) {
    std::lock_guard lock(mutex_);
    tracer_ = std::move(t);
}

void metrics::observe_tool(std::string_view tool, double ms) {
    std::lock_guard lock(mutex_);
    auto it = tools_.find(tool);
    if (it == tools_.end()) it = tools_.emplace(std::string(tool), histogram{std::vector<int64_t>(k_tool_bounds_ms.size() + 1, 0)}).first;
    size_t b = 0;
    while (b < k_tool_bounds_ms.size() && ms > k_tool_bounds_ms[b]) ++b;
    ++it->second.counts[b];
    it->second.sum += ms / 1000.0;
    ++it->second.n;
}

void metrics::render_engine(std::string& out, const model_entry& m) {
    const engine_counters c = m.host->eng().counters();
    const std::string l = "{model=\"" + label_value(m.id) + "\"}";
    auto line = [&](const char* name, double v) { out += std::string(name) + l + " " + number(v) + "\n"; };
    line("tachyon_kv_blocks_total", c.n_kv_blocks);
    line("tachyon_kv_blocks_used", c.n_kv_blocks - c.n_kv_blocks_free);
    line("tachyon_kv_blocks_cached", c.n_kv_blocks_cached);
    line("tachyon_engine_queue_depth", c.n_queued);
    line("tachyon_engine_active_requests", c.n_active);
    line("tachyon_engine_requests_total", static_cast<double>(c.n_requests));
    line("tachyon_engine_prompt_tokens_total", static_cast<double>(c.n_appended));
    line("tachyon_engine_prefilled_tokens_total", static_cast<double>(c.n_prefilled));
    line("tachyon_engine_generated_tokens_total", static_cast<double>(c.n_generated));
    line("tachyon_engine_prefix_cache_hit_tokens_total", static_cast<double>(c.n_cached));
    line("tachyon_engine_prefix_cache_lookup_tokens_total", static_cast<double>(c.n_cache_lookup_tokens));
    line("tachyon_engine_prefix_cache_hit_rate", c.n_cache_lookup_tokens > 0 ? static_cast<double>(c.n_cached) / c.n_cache_lookup_tokens : 0.0);
    line("tachyon_engine_evicted_sessions_total", static_cast<double>(c.n_evicted_sessions));
    line("tachyon_engine_busy_seconds_total", c.busy_ms / 1000.0);
}

std::string metrics::render(const std::vector<model_entry>& models, const run_state_counts& runs) const {
    std::lock_guard lock(mutex_);
    std::string out;
    header(out, "tachyon_http_requests_total", "counter", "HTTP requests by route and status.");
    for (const auto& [key, n] : requests_)
        out += "tachyon_http_requests_total{route=\"" + label_value(key.first) + "\",status=\"" + std::to_string(key.second) + "\"} " +
               std::to_string(n) + "\n";
    header(out, "tachyon_chat_completions_total", "counter", "Chat completions finished.");
    out += "tachyon_chat_completions_total " + std::to_string(chats_) + "\n";
    header(out, "tachyon_prompt_tokens_total", "counter", "Prompt tokens of chat completions.");
    out += "tachyon_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
    header(out, "tachyon_completion_tokens_total", "counter", "Generated tokens of chat completions.");
    out += "tachyon_completion_tokens_total " + std::to_string(completion_tokens_) + "\n";
    header(out, "tachyon_prefix_cache_hit_tokens_total", "counter", "Prompt tokens of chat completions served from the prefix cache.");
    out += "tachyon_prefix_cache_hit_tokens_total " + std::to_string(cached_tokens_) + "\n";
    header(out, "tachyon_prefix_cache_hit_rate", "gauge", "Share of chat completion prompt tokens served from the prefix cache (all time).");
    out += "tachyon_prefix_cache_hit_rate " + number(prompt_tokens_ > 0 ? static_cast<double>(cached_tokens_) / prompt_tokens_ : 0.0) + "\n";
    const auto now = std::chrono::steady_clock::now();
    while (!recent_.empty() && now - recent_.front().first > k_window) recent_.pop_front();
    int64_t recent_tokens = 0;
    for (const auto& r : recent_) recent_tokens += r.second;
    header(out, "tachyon_completion_tokens_per_second", "gauge", "Generated tokens per second over the last 10 s.");
    out += "tachyon_completion_tokens_per_second " + number(recent_tokens / static_cast<double>(k_window.count())) + "\n";
    header(out, "tachyon_chat_requests_in_flight", "gauge", "Chat completions being served.");
    out += "tachyon_chat_requests_in_flight " + std::to_string(in_flight_) + "\n";
    header(out, "tachyon_chat_queue_depth", "gauge", "Chat completions waiting for their first token.");
    out += "tachyon_chat_queue_depth " + std::to_string(queued_) + "\n";
    // The engine's own counters, per model (inference/engine/engine.h engine_counters).
    header(out, "tachyon_kv_blocks_total", "gauge", "KV cache blocks of the model's engine.");
    header(out, "tachyon_kv_blocks_used", "gauge", "KV cache blocks held by sessions or the prefix cache.");
    header(out, "tachyon_kv_blocks_cached", "gauge", "KV cache blocks listed by the prefix cache.");
    header(out, "tachyon_engine_queue_depth", "gauge", "Engine requests waiting for their session or a slot.");
    header(out, "tachyon_engine_active_requests", "gauge", "Engine requests being served.");
    header(out, "tachyon_engine_requests_total", "counter", "Engine requests ended (chat completions and agent turns).");
    header(out, "tachyon_engine_prompt_tokens_total", "counter", "Tokens appended to sessions.");
    header(out, "tachyon_engine_prefilled_tokens_total", "counter", "Prompt tokens a forward computed.");
    header(out, "tachyon_engine_generated_tokens_total", "counter", "Tokens sampled.");
    header(out, "tachyon_engine_prefix_cache_hit_tokens_total", "counter", "Prompt tokens found in the prefix cache.");
    header(out, "tachyon_engine_prefix_cache_lookup_tokens_total", "counter", "Prompt tokens of fresh sequences looked up in the prefix cache.");
    header(out, "tachyon_engine_prefix_cache_hit_rate", "gauge", "Prefix-cache hit tokens over looked-up tokens (all time).");
    header(out, "tachyon_engine_evicted_sessions_total", "counter", "Idle sessions whose KV was dropped for memory.");
    header(out, "tachyon_engine_busy_seconds_total", "counter", "Time the engine spent in forward steps.");
    for (const auto& m : models) render_engine(out, m);
    header(out, "tachyon_tool_call_duration_seconds", "histogram", "Tool call latency of agent runs.");
    for (const auto& [tool, h] : tools_) {
        int64_t cum = 0;
        const std::string l = "tool=\"" + label_value(tool) + "\"";
        for (size_t b = 0; b < k_tool_bounds_ms.size(); ++b) {
            cum += h.counts[b];
            out += "tachyon_tool_call_duration_seconds_bucket{" + l + ",le=\"" + number(k_tool_bounds_ms[b] / 1000.0) + "\"} " +
                   std::to_string(cum) + "\n";
        }
        out += "tachyon_tool_call_duration_seconds_bucket{" + l + ",le=\"+Inf\"} " + std::to_string(h.n) + "\n";
        out += "tachyon_tool_call_duration_seconds_sum{" + l + "} " + number(h.sum) + "\n";
        out += "tachyon_tool_call_duration_seconds_count{" + l + "} " + std::to_string(h.n) + "\n";
    }
    header(out, "tachyon_runs", "gauge", "Agent runs by state.");
    for (const auto& [state, n] : runs) out += "tachyon_runs{state=\"" + label_value(state) + "\"} " + std::to_string(n) + "\n";
    // Shown without tracing too (0), so that an alert on it needs no condition.
    header(out, "tachyon_otel_spans_dropped_total", "counter", "Spans tracing could not export (queue full, collector down or refusing).");
    out += "tachyon_otel_spans_dropped_total " + std::to_string(tracer_ ? tracer_->n_dropped() : 0) + "\n";
    header(out, "tachyon_otel_spans_exported_total", "counter", "Spans the OTLP collector accepted.");
    out += "tachyon_otel_spans_exported_total " + std::to_string(tracer_ ? tracer_->n_exported() : 0) + "\n";
    return out;
}

}  // namespace tachyon::http
