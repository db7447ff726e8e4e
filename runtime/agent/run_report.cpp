#include "runtime/agent/run_report.h"

#include <simdjson.h>

#include <cstdio>
#include <sstream>

#include "runtime/common/json_util.h"

namespace tachyon {

namespace {

// A prose answer (a JSON string) as its text; an object as its JSON.
std::string answer_text(const std::string& answer) {
    if (answer.empty() || answer.front() != '"') return answer;
    simdjson::dom::parser parser;
    std::string_view text;
    if (parser.parse(simdjson::padded_string(answer)).get_string().get(text) != simdjson::SUCCESS) return answer;
    return std::string(text);
}

}  // namespace

std::string outcome_json(const run_outcome& out) {
    std::ostringstream os;
    char buf[64];
    auto num = [&](double v) {
        std::snprintf(buf, sizeof buf, "%.1f", v);
        return std::string(buf);
    };
    os << "{\"run_id\": " << json::quote(out.run_id) << ", \"state\": " << json::quote(out.state)
       << ", \"verified\": " << (out.verified ? "true" : "false") << ", \"answer\": " << (out.answer.empty() ? "null" : out.answer)
       << ", \"error\": " << (out.error.empty() ? "null" : json::quote(out.error)) << ", \"steps\": " << out.steps
       << ", \"verify_attempts\": " << out.verify_attempts << ", \"timings_ms\": {\"time_to_answer\": " << num(out.time_to_answer_ms)
       << ", \"model\": " << num(out.model_ms) << ", \"tools\": " << num(out.tool_ms) << ", \"tool_wait\": " << num(out.tool_wait_ms)
       << ", \"overlap_saved\": " << num(out.overlap_saved_ms) << "}, \"tokens\": {\"prefilled\": " << out.prefill_tokens
       << ", \"reused\": " << out.reused_tokens << ", \"generated\": " << out.generated_tokens << "}, \"tool_calls\": " << out.calls.size()
       << ", \"resumed\": " << (out.resumed ? "true" : "false") << ", \"pending\": " << pending_json(out.pending)
       << ", \"journal\": " << json::quote(out.journal_path) << "}";
    return os.str();
}

std::string pending_json(const std::vector<journal::call_pending_event>& pending) {
    std::string out = "[";
    for (const auto& p : pending) {
        auto args = json::minify(p.arguments_json, "arguments");
        out += (out.size() > 1 ? "," : "") + std::string("{\"call_id\":") + json::quote(p.call_id) + ",\"name\":" + json::quote(p.name) +
               ",\"arguments\":" + (args ? *args : json::quote(p.arguments_json)) + ",\"reason\":" + json::quote(p.reason) +
               ",\"message\":" + json::quote(p.message) + "}";
    }
    return out + "]";
}

std::string outcome_summary(const run_outcome& out) {
    std::ostringstream os;
    char line[512];
    // "verified" only when a check ran and passed; an agent without checks
    // gets its answer accepted as it is, and says so.
    if (out.verified) {
        os << "verified answer: " << answer_text(out.answer) << "\n";
    } else if (out.state == "succeeded") {
        os << "answered (no checks): " << answer_text(out.answer) << "\n";
    } else if (!out.pending.empty()) {
        // Parked: what the person is asked, and how to answer.
        os << "waiting (" << out.state << "): " << out.error << "\n";
        bool approval = false;
        for (const auto& p : out.pending) {
            os << "  " << p.call_id << ": " << p.name << " " << p.arguments_json << " (" << p.reason << ")\n";
            approval = approval || p.reason == "approval";
        }
        os << "continue with: tachyon run --resume " << out.run_id
           << (approval ? " --approve-all (or --reject-all)" : " --decide retry (or skip)") << "\n";
    } else {
        os << "no answer (" << out.state << "): " << out.error << "\n";
        if (!out.answer.empty()) os << "last answer: " << answer_text(out.answer) << "\n";
    }
    std::snprintf(line, sizeof line,
                  "time to answer %.2f s | model %.2f s | tools %.2f s (waited %.2f s, %.2f s hidden under decoding) | "
                  "%d steps, %zu tool calls | tokens: %d prefilled, %d reused, %d generated\n",
                  out.time_to_answer_ms / 1000.0, out.model_ms / 1000.0, out.tool_ms / 1000.0, out.tool_wait_ms / 1000.0,
                  out.overlap_saved_ms / 1000.0, out.steps, out.calls.size(), out.prefill_tokens, out.reused_tokens,
                  out.generated_tokens);
    os << line;
    os << "run " << out.run_id;
    if (!out.journal_path.empty()) os << " (journal " << out.journal_path << ")";
    os << "\n";
    return os.str();
}

}  // namespace tachyon
