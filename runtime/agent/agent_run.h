// One agent run: reason → call tools → observe → verify, on a model host,
// as DESIGN.md's agent loop describes. A run is a C++20 coroutine on its own
// strand; tokens arrive from the engine thread by asio::post, each tool call
// runs on the tool pool with a timeout, and every event goes to the run's
// journal as it happens.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include "runtime/agent/agent_def.h"
#include "runtime/agent/agent_prompt.h"
#include "runtime/agent/call_predictor.h"
#include "runtime/journal/journal.h"
#include "runtime/chat/model_host.h"
#include "tools/core/tool.h"

namespace tachyon {

// The overlap mechanisms this runtime owns (DESIGN.md); all on by default.
// Constraints and grounding decide what the model may emit, not how fast.
struct run_switches {
    bool early_dispatch = true;  // start a tool the moment its call is complete in the stream
    bool parallel_tools = true;  // the calls of one turn run concurrently
    bool kv_retain = true;       // the session's KV stays between turns (else: re-prefill everything)
    bool spec_decode = true;     // prompt-lookup drafts verified in the decode forward (same output)
    bool jump_forward = true;    // text the grammar forces is drafted whole and verified in one forward
    bool speculative_tools = true;  // predicted read-only calls start before the model writes them (call_predictor.h)
    bool constrain = true;       // tool calls and the final answer follow their schemas
    bool grounding = true;       // identifier arguments come from values seen in the run
};

// Wraps one tool of a run (a decorator: it returns a tool with the same name
// and schema). Called once per tool, in setup, on the agent's tools and its
// verify check tools alike.
using tool_wrapper = std::function<std::shared_ptr<tools::tool>(std::shared_ptr<tools::tool>)>;

struct run_request {
    std::shared_ptr<const agent_definition> agent;
    std::string task;
    std::map<std::string, std::string> inputs;  // {placeholders} of the agent
    run_switches switches;
    std::string journal_dir = "runs";           // empty: no journal
    std::string run_id;                         // empty: made up
    // Empty: the tools as they are. `bench agents` wraps them to stand in
    // for remote backends.
    tool_wrapper wrap_tool;
    // Tools defined in code (SDK, tests), found by name before the built-ins
    // (for the agent's tools and its verify checks).
    std::vector<std::shared_ptr<tools::tool>> custom_tools;
};

struct run_turn {
    int step = 0;
    int prefill_tokens = 0;
    int reused_tokens = 0;
    int generated_tokens = 0;
    double start_ms = 0, first_token_ms = 0, end_ms = 0;
    std::string text;
};

struct run_tool_call {
    int step = 0;
    std::string call_id;
    std::string name;
    std::string arguments;
    double start_ms = 0, end_ms = 0;
    bool ok = false;
    bool early = false;
    bool speculative = false;  // served by a call started from a prediction, before the model wrote it
    std::string result;  // what the model reads (the error text when !ok)
};

struct run_outcome {
    std::string run_id;
    std::string state = "failed";  // succeeded (an answer was accepted), failed, cancelled, budget_exhausted
    std::string error;
    // The accepted answer passed the agent's verify checks. False for an
    // answer accepted with no checks to run (an agent without `verify`):
    // state succeeded, but nothing vouched for it.
    bool verified = false;
    // The final answer as one JSON value (minified), empty if none: the
    // object of an agent with an output schema; for an agent without one,
    // which answers in prose, a JSON string holding the text.
    std::string answer;
    int steps = 0;
    int verify_attempts = 0;
    double time_to_answer_ms = 0;
    double total_ms = 0;           // start to end of the run, whatever its outcome
    double model_ms = 0;           // prefill + decode time of all turns
    double tool_ms = 0;            // summed tool call durations
    double tool_wait_ms = 0;       // time the loop waited for tools (calls and verification) after a turn ended
    double overlap_saved_ms = 0;   // tool time hidden under decoding
    int prefill_tokens = 0, reused_tokens = 0, generated_tokens = 0;
    int drafted_tokens = 0, draft_accepted_tokens = 0;  // speculative decoding and jump-forward
    int n_spec_calls = 0;          // speculative tool calls started
    int n_spec_hits = 0;           // of those, the model's own call matched: its result was used
    double spec_saved_ms = 0;      // tool time that had passed when the model's call matched
    int n_tool_calls = 0;   // calls the model wrote (valid or not; verify calls not counted)
    int n_bad_calls = 0;    // of those: malformed JSON, unknown tool, or arguments failing the schema
    std::vector<run_turn> turns;
    std::vector<run_tool_call> calls;
    std::string journal_path;
};

// Live progress for a terminal or an event stream; called on the run's strand.
// Whatever a call reports is in the journal already: each event is written
// (and handed to the OS) before its callback runs.
struct run_observer {
    virtual ~run_observer() = default;
    // Every journal event, as written (its seq and t_ms; numbered the same
    // way when the run keeps no journal).
    virtual void on_event(const journal::event& /*e*/) {}
    virtual void on_turn_start(int /*step*/) {}
    virtual void on_text(std::string_view /*text*/) {}
    virtual void on_turn_end(const run_turn&) {}
    virtual void on_tool_start(const run_tool_call&) {}
    virtual void on_tool_end(const run_tool_call&) {}
    virtual void on_verify(int /*attempt*/, bool /*ok*/, const std::string& /*message*/) {}
};

struct run_environment {
    std::shared_ptr<model_host> host;
    boost::asio::thread_pool* tool_pool = nullptr;  // where tool calls run
    run_observer* observer = nullptr;
    std::shared_ptr<std::atomic<bool>> cancel;      // set to stop the run (Ctrl-C)
    std::shared_ptr<call_predictor> predictor;      // the agent's, shared by its runs; null: no speculative tools
};

// A turn and a tool call as journal events (the run's journal, the HTTP event stream).
journal::model_turn_event journal_event(const run_turn& t);
journal::tool_call_event journal_event(const run_tool_call& c);

// Runs the agent to a verified answer or a spent budget. Never throws; an
// error becomes outcome.state "failed" with outcome.error.
boost::asio::awaitable<run_outcome> run_agent(run_environment env, run_request request);


}  // namespace tachyon
