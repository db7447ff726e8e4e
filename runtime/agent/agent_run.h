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
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include "runtime/agent/agent_def.h"
#include "runtime/agent/agent_prompt.h"
#include "runtime/agent/agent_run_replay.h"
#include "runtime/prediction/call_predictor.h"
#include "runtime/journal/journal.h"
#include "runtime/chat/model_host.h"
#include "runtime/remote/remote_model.h"
#include "runtime/telemetry/tracer.h"
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
    bool call_drafts = true;     // the predicted calls' text is drafted and verified in one forward (call_drafts.h)
    bool constrain = true;       // tool calls and the final answer follow their schemas
    bool grounding = true;       // identifier arguments come from values seen in the run
};

// Wraps one tool of a run (a decorator: it returns a tool with the same name
// and schema). Called once per tool, in setup, on the agent's tools and its
// verify check tools alike.
using tool_wrapper = std::function<std::shared_ptr<tools::tool>(std::shared_ptr<tools::tool>)>;

struct run_tool_call;
// Asked, on the run's strand, when a call of a tool that requires approval
// has no decision yet: return "approve" or "reject" (with an optional
// reason), or nullopt to park the run in awaiting_approval until a person
// decides (POST /v1/runs/{id}/approve, `tachyon run --resume`).
using approval_hook = std::function<std::optional<call_decision>(const run_tool_call& call)>;

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
    // Set: continue the run of this journal (agent_run_replay.h) instead of
    // starting one; journal_dir and run_id are its own.
    std::shared_ptr<run_replay> resume;
    // Decisions on the calls the resumed run is parked on, journaled when it resumes.
    std::vector<call_decision> decisions;
    approval_hook approve;  // null: a call awaiting approval parks the run
    // Set (`bench agents --replay`): the model is an oracle whose every
    // generated token is the one this recording holds for the turn's step
    // (engine request::forced); a step it lacks, or a recorded token the
    // turn's constraint forbids, ends the run with an error naming both.
    std::shared_ptr<const std::map<int, std::vector<int32_t>>> forced_turns;
    // The caller's W3C traceparent (an HTTP request's): the run's spans join
    // that trace. Empty: a trace starts with the run.
    std::string traceparent;
    // Set: the run's events go to the sink this opens (a database,
    // runtime/db/) instead of journal files in journal_dir; `resumed` is the
    // log of a resumed run, null for a new one (whose run_id must be set).
    // Called once, before anything is written.
    std::function<result<std::unique_ptr<journal::event_sink>>(const std::string& run_id, const journal::run_log* resumed)> open_journal;
};

struct run_turn {
    int step = 0;
    int prefill_tokens = 0;
    int reused_tokens = 0;
    int generated_tokens = 0;
    double start_ms = 0, first_token_ms = 0, end_ms = 0;
    std::string text;
    std::vector<int32_t> tokens;  // as generated (end of turn included)
    bool replayed = false;        // taken from the journal of a resumed run, not generated again
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
    bool replayed = false;     // its result came from the journal of a resumed run; it did not run again
    std::string result;  // what the model reads (the error text when !ok)
};

struct run_outcome {
    std::string run_id;
    // succeeded (an answer was accepted), failed, cancelled, budget_exhausted;
    // needs_attention or awaiting_approval: parked on the calls in `pending`
    // until resumed with a decision.
    std::string state = "failed";
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
    std::vector<journal::call_pending_event> pending;  // the calls a parked run waits on
    bool resumed = false;  // the run continued from its journal
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
    std::shared_ptr<mcp_sessions> mcp;              // MCP sessions shared by runs; null: the run starts its own
    // Set: the turns are generated by this OpenAI-compatible server
    // (runtime/remote/) instead of `host`, which may then be null.
    std::shared_ptr<const remote::remote_model> remote;
    // Set: the run's spans (invoke_agent, chat, execute_tool) are made from
    // its events and exported (runtime/telemetry/run_trace.h).
    std::shared_ptr<telemetry::tracer> tracer;
};

// A turn and a tool call as journal events (the run's journal, the HTTP event stream).
journal::model_turn_event journal_event(const run_turn& t);
journal::tool_call_event journal_event(const run_tool_call& c);

// The key a call's tool receives (tools::call_context): "<run id>:<step>:<index>"
// for the model's calls, "<run id>:verify:<attempt>:<tool>" for verify checks.
std::string idempotency_key(const std::string& run_id, const run_tool_call& call);

// Runs the agent to a verified answer or a spent budget (or parks it on a
// call waiting for a person). Never throws; an error becomes outcome.state
// "failed" with outcome.error.
boost::asio::awaitable<run_outcome> run_agent(run_environment env, run_request request);


}  // namespace tachyon
