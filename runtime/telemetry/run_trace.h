// The spans of one agent run, built from the run's journal events as the
// agent loop records them (journal.h), after the OpenTelemetry GenAI
// semantic conventions:
//   invoke_agent {agent}      the run (root of this process's part)
//   ├─ chat {model}           one per model turn
//   └─ execute_tool {tool}    one per tool call (verify checks too)
// Span times are the journal's (milliseconds since the run's start on the
// steady clock), placed on the wall clock by the tracer. A chat span ends
// when the next turn starts or the run ends, when the calls its turn wrote
// are known (its finish reason). Used on the run's strand only.
//
// Attributes: gen_ai.operation.name, gen_ai.provider.name ("tachyon" for the
// built-in engine), gen_ai.agent.name, gen_ai.conversation.id (the run id),
// gen_ai.request.model / temperature / top_p / max_tokens / seed,
// gen_ai.usage.input_tokens / output_tokens / cache_read.input_tokens,
// gen_ai.response.finish_reasons, gen_ai.response.time_to_first_chunk,
// gen_ai.tool.name / call.id / type, gen_ai.tool.call.arguments / result
// (content capture only), error.type; and tachyon.run.id, tachyon.run.state,
// tachyon.run.verified, tachyon.step, tachyon.prefix_cache.reused_tokens,
// tachyon.tool.dispatched_while_decoding, tachyon.tool.speculative_hit.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "runtime/journal/journal.h"
#include "runtime/telemetry/tracer.h"

namespace tachyon::telemetry {

struct run_trace_info {
    std::string agent;       // the agent's name
    std::string run_id;      // gen_ai.conversation.id, tachyon.run.id
    std::string model;       // gen_ai.request.model
    std::string provider = "tachyon";  // gen_ai.provider.name
    bool remote = false;     // chat spans are CLIENT calls to another server
    std::string server_address, server_port;  // the remote server
    double temperature = 0, top_p = 1;
    int64_t max_tokens = 0;  // the run's token budget
    uint64_t seed = 0;       // 0: none
    std::string traceparent;  // the caller's, if any (serve)
    std::chrono::steady_clock::time_point t0;  // the run's clock origin (journal t_ms 0)
};

class run_trace {
public:
    run_trace(std::shared_ptr<tracer> t, run_trace_info info);
    // A run that ended without run_end (an internal error) ends its spans as errors.
    ~run_trace();
    run_trace(const run_trace&) = delete;
    run_trace& operator=(const run_trace&) = delete;

    void on_event(const journal::event& e);

    // The traceparent of the innermost open span: the turn being generated
    // (a remote model's request), else the run.
    std::string traceparent() const;
    // The traceparent of the call `call_id` (its execute_tool span, made
    // now if its start was not recorded): what an MCP request carries.
    std::string tool_traceparent(const std::string& call_id);
    const span_context& run_context() const { return run_.context; }

private:
    uint64_t at(double t_ms) const;
    void open_turn(int64_t step, double t_ms);
    void close_turn(const std::string& finish_reason_override = {});
    void end_run(const std::string& state, const std::string& error, double t_ms);

    std::shared_ptr<tracer> tracer_;
    run_trace_info info_;
    span run_;
    bool run_open_ = false;
    std::optional<span> turn_;           // the chat span of the turn in progress, or ended but not closed
    bool turn_generated_ = false;        // its model_turn was seen
    int64_t turn_step_ = 0;
    std::set<int64_t> steps_with_calls_; // steps whose turn wrote a tool call
    std::map<std::string, span_start> tool_starts_;  // call id → its span, from tool_start
    int64_t n_turns_ = 0, n_calls_ = 0, input_tokens_ = 0, output_tokens_ = 0, cached_tokens_ = 0;
};

// A chat completion served over HTTP (`tachyon serve`), as one chat span.
struct chat_span_info {
    std::string model;
    std::string provider = "tachyon";
    bool remote = false;
    std::string response_id;
    double temperature = 1, top_p = 1;
    std::optional<int64_t> max_tokens;
    std::optional<uint64_t> seed;
    int64_t input_tokens = 0, output_tokens = 0, cached_tokens = 0;
    std::string finish_reason;  // empty: failed
    std::string error;
    std::chrono::steady_clock::time_point start, end;
    std::optional<std::chrono::steady_clock::time_point> first_token;
};
span chat_completion_span(const tracer& t, const span_start& where, const chat_span_info& info);

}  // namespace tachyon::telemetry
