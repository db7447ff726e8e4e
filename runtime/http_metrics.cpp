#include "runtime/http_metrics.h"

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
    const engine& e = m.host->eng();
    const int total = (e.options().n_ctx + e.options().block_size - 1) / e.options().block_size;
    const int free_blocks = e.n_free_kv_blocks();
    const std::string l = "{model=\"" + label_value(m.id) + "\"}";
    out += "tachyon_kv_blocks_total" + l + " " + std::to_string(total) + "\n";
    out += "tachyon_kv_blocks_used" + l + " " + std::to_string(total - free_blocks) + "\n";
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
    header(out, "tachyon_prefix_cache_hit_tokens_total", "counter", "Prompt tokens whose KV the engine already held.");
    out += "tachyon_prefix_cache_hit_tokens_total " + std::to_string(cached_tokens_) + "\n";
    header(out, "tachyon_prefix_cache_hit_rate", "gauge", "Share of prompt tokens served from the engine's KV (all time).");
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
    header(out, "tachyon_kv_blocks_total", "gauge", "KV cache blocks of the model's engine.");
    header(out, "tachyon_kv_blocks_used", "gauge", "KV cache blocks in use.");
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
    return out;
}

}  // namespace tachyon::http
