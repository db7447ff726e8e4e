// tachyon C++ SDK: the runtime that runs agents. It owns the event loop
// (where agent loops run), the tool pool (where tool calls run) and one
// inference engine per model file, shared by every run and chat on it.
//
//   tachyon::sdk::runtime rt;
//   auto agent = tachyon::sdk::agent::load("agents/incident-analyst.json").value();
//   tachyon::sdk::run_options options;
//   options.inputs = {{"incident_dir", "/tmp/incident"}};
//   auto result = rt.run(agent, "checkout returns 502s, find the root cause", options);
//   if (result.state == tachyon::sdk::run_state::succeeded) std::cout << result.answer << "\n";
//
// A run always ends with a run_result: a run that cannot start (a missing
// input, a model that does not load) ends in state failed with an error
// that names the cause. Runs never throw.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tachyon/agent.h"
#include "tachyon/chat.h"
#include "tachyon/events.h"
#include "tachyon/result.h"

namespace tachyon::sdk {

struct runtime_options {
    int n_threads = 1;       // inference threads per model (1 is fastest for tiny models)
    int n_ctx = 16384;       // KV positions per model, all runs together
    int n_io_threads = 1;    // event loop threads
    int n_tool_threads = 4;  // tool calls that may run at once
    // OpenTelemetry traces of every run (invoke_agent, chat, execute_tool
    // spans) as OTLP/HTTP JSON to {otlp_endpoint}/v1/traces; empty: as the
    // standard OTEL_EXPORTER_OTLP_* variables say (off when none is set).
    std::string otlp_endpoint;
    bool kv_f32 = false;     // hold the KV cache in f32 (default fp16: half the memory and the bytes attention reads)
};

// How one run goes. The overlap switches are all on by default.
struct run_options {
    std::map<std::string, std::string> inputs;  // values of the agent's {placeholders}
    event_callback on_event;                    // live events (events.h); empty: none
    std::string journal_dir;                    // where <run-id>.jsonl is written; empty: no journal
    std::string run_id;                         // empty: made up
    std::vector<std::shared_ptr<tool>> tools;   // extra C++ tools, found by name before the agent's own
    bool early_dispatch = true;   // start a tool the moment its call is complete in the stream
    bool parallel_tools = true;   // the calls of one turn run concurrently
    bool kv_retain = true;        // keep the KV cache between turns
    bool constrain = true;        // tool calls and the answer follow their schemas
    bool grounding = true;        // identifier arguments come from values seen in the run
    std::string traceparent;      // W3C trace context of the caller: the run's spans join its trace
};

enum class run_state { succeeded, failed, cancelled, budget_exhausted };

// "succeeded", "failed", "cancelled" or "budget_exhausted".
std::string_view to_string(run_state state);

// How a run ended.
struct run_result {
    std::string run_id;
    run_state state = run_state::failed;
    std::string error;          // why, when not succeeded
    // The accepted answer passed the agent's verify checks; false when the
    // agent has none (state succeeded: answered, nothing checked it).
    bool verified = false;
    // The final answer as one JSON value (minified); empty if none. An agent
    // with an output schema answers one object valid for it; one without
    // answers in prose: a JSON string holding the text.
    std::string answer;
    int steps = 0;              // model turns
    int verify_attempts = 0;
    double time_to_answer_ms = 0;
    double model_ms = 0;        // prefill + decode time of all turns
    double tool_ms = 0;         // summed tool call durations
    double overlap_saved_ms = 0;// tool time hidden under decoding
    int prefill_tokens = 0, reused_tokens = 0, generated_tokens = 0;
    int n_tool_calls = 0;       // calls the model wrote (verify calls not counted)
    int n_bad_calls = 0;        // of those: malformed, unknown tool, or arguments failing the schema
    std::vector<turn_info> turns;
    std::vector<tool_call_info> calls;  // every tool call that ran, verify calls included
    std::string journal_path;           // empty without a journal
};

// A run in progress. Copies share the run; the runtime keeps running it
// when every handle is gone.
class run_handle {
public:
    // Blocks until the run ends; returns its result (every call returns the same).
    const run_result& wait() const;
    // True once the run has ended (wait() will not block).
    bool done() const;
    // Asks the run to stop: tool calls are cancelled, the journal is closed, the state becomes cancelled.
    void cancel();
    // The result as a future, for callers that combine several runs.
    std::shared_future<run_result> future() const;

private:
    struct state;
    explicit run_handle(std::shared_ptr<state> s) : state_(std::move(s)) {}
    friend class runtime;
    std::shared_ptr<state> state_;
};

class runtime {
public:
    // Starts the event loop and the tool pool; models open on first use.
    explicit runtime(const runtime_options& options = {});
    // Cancels the runs still going, waits for them, then stops.
    ~runtime();
    runtime(const runtime&) = delete;
    runtime& operator=(const runtime&) = delete;

    // Runs the agent on `task` and blocks until it ends.
    run_result run(const agent& a, const std::string& task, const run_options& options = {});
    // Starts the run and returns at once; `on_done` (optional) is called on the event loop when it ends.
    run_handle start(const agent& a, const std::string& task, const run_options& options = {},
                     std::function<void(const run_result&)> on_done = {});

    // The model at `path` (opened on first use, shared with agent runs on it), for chat().
    result<model> open_model(const std::string& path, const std::string& chat_format = {});

    // Cancels every run still going.
    void cancel_all();

private:
    struct impl;
    friend struct runtime_access;
    std::unique_ptr<impl> impl_;
};

}  // namespace tachyon::sdk
