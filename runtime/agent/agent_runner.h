// One agent run's runner, private to runtime/: its state lives on the run's
// strand. agent_run.cpp holds the loop (run()), the run's setup, budgets,
// journal and end; agent_turn.cpp one turn (prompt, streaming generation
// under constraints, tool wait, results); agent_verify.cpp the final answer
// and its checks; agent_calls.cpp the tool calls (dispatch, timeouts,
// cancellation, speculative calls).
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/agent/agent_run.h"
#include "runtime/common/async_flag.h"
#include "runtime/prediction/call_predictor.h"
#include "runtime/constrain/constraint.h"
#include "runtime/journal/journal.h"
#include "runtime/constrain/json_schema.h"
#include "runtime/formats/tool_call_parser.h"
#include "runtime/remote/chat_client.h"
#include "runtime/telemetry/run_trace.h"

namespace tachyon::agent_detail {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

// Identifier-like words of a text (service names, trace ids, line ids,
// timestamps): the values grounded arguments may take.
inline void collect_identifiers(std::string_view text, std::set<std::string>& out) {
    for (auto& id : identifiers_in(text)) out.insert(std::move(id));
}

// One tool call in flight.
// The id of the index-th call the model wrote in a step's turn.
inline std::string call_id_of(int step, int index) { return "call_" + std::to_string(step) + "_" + std::to_string(index); }

// The tool_call_id of a result, as the chat templates read it: the id the
// model wrote for its call when that is 9 letters and digits (Mistral's
// templates raise on any other), else one made from the step and index
// ("call00102"). Formats without ids ignore it.
inline std::string result_call_id(const std::string& model_id, int step, int index) {
    const bool usable = model_id.size() == 9 && std::all_of(model_id.begin(), model_id.end(), [](char c) {
                            return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
                        });
    if (usable) return model_id;
    auto digits = [](int v, int n) {
        std::string s = std::to_string(v);
        return s.size() >= static_cast<size_t>(n) ? s.substr(s.size() - static_cast<size_t>(n)) : std::string(static_cast<size_t>(n) - s.size(), '0') + s;
    };
    return "call" + digits(step, 3) + digits(index, 2);
}

struct call_slot {
    run_tool_call rec;
    std::shared_ptr<tools::tool> tool;
    std::atomic<bool> cancel{false};
    bool finished = false;
    bool speculative = false;  // started from a prediction; not the model's until its call matches
    bool parked = false;       // waits for a person (call_pending journaled); never ran in this process
    asio::steady_timer timeout;
    asio::cancellation_signal cut_off;  // emitted when the call finishes: a tool still waiting to begin its work stops waiting
    async_flag done;
    std::string error;

    call_slot(const asio::any_io_executor& ex) : timeout(ex), done(ex) {}
};

class runner : public std::enable_shared_from_this<runner> {
public:
    runner(run_environment env, run_request req, asio::any_io_executor ex)
        : env_(std::move(env)), req_(std::move(req)), ex_(ex), deadline_(ex), watch_(ex) {}

    // The agent loop: render prompt; per step generate (calls dispatched
    // from the stream), then await tools and append results, or verify the
    // answer (feedback turn on failure); budgets and cancellation anywhere.
    asio::awaitable<run_outcome> run();

private:
    struct stop_reason {
        std::string state;  // budget_exhausted or cancelled
        std::string error;
    };

    double now_ms() const { return std::chrono::duration<double, std::milli>(clock_type::now() - t0_).count(); }
    bool stopping() const { return deadline_hit_ || fenced_ || (env_.cancel && env_.cancel->load()); }

    // The steps of run(), in order (comments at their definitions).
    bool open_run();
    result<std::unique_ptr<journal::event_sink>> open_journal(const journal::run_log* resumed);
    status setup();
    void arm_budgets();
    void disarm_budgets();
    result<std::vector<int32_t>> render_prompt();
    std::optional<stop_reason> spent_budget(int step) const;
    asio::awaitable<result<int32_t>> generate_turn(int step, std::vector<int32_t> append);
    asio::awaitable<void> await_tools();
    std::vector<chat_message> append_results(int step);
    asio::awaitable<std::optional<chat_message>> verify_answer(int step);
    run_outcome end_run(std::string state, std::string error);

    asio::awaitable<request_stats> generate(std::vector<int32_t> append, int max_tokens, run_turn& turn);
    // The same steps on a remote model (agent_remote_turn.cpp): the first
    // messages, one streamed turn whose text and calls go where the local
    // engine's tokens go (on_text, handle_events), and the next messages.
    status render_remote_prompt();
    asio::awaitable<request_stats> generate_remote(int max_tokens, run_turn& turn);
    void next_remote_messages(const std::vector<chat_message>& new_messages);
    request_stats replay_turn(const journal::model_turn_event& recorded, run_turn& turn);
    result<std::shared_ptr<turn_constraint>> make_constraint();
    grounded_values grounding() const;
    // Data the model reads (the task, tool results): what it names becomes
    // groundable. Never the runtime's own words (validation errors, error
    // turns): they quote what the model wrote.
    void ground(const std::string& text) {
        collect_identifiers(text, grounded_);
        grounding_texts_.push_back(text);
    }
    void ground_check_text(const std::string& text, const std::string& answer);
    // Journals `body` (written and handed to the OS), then reports it to the
    // observer: a watcher never sees what the journal does not hold.
    void record(journal::event_body body);
    void record_rejected_call(std::string call_id, std::string name, std::string arguments, std::string error);
    // The run's spans from its events (agent_trace.cpp); the traceparent a
    // remote turn's request and a call's tool carry (empty without tracing).
    void trace_event(const journal::event& e);
    std::string turn_traceparent() const { return trace_ ? trace_->traceparent() : std::string(); }
    std::string call_traceparent(const std::string& call_id) { return trace_ ? trace_->tool_traceparent(call_id) : std::string(); }
    void on_token(int32_t token, run_turn& turn);
    // Decoded text of the turn (a token's piece, or a remote content delta).
    void on_text(std::string_view piece);
    void handle_events();
    std::shared_ptr<call_slot> make_call(int step, int index, const std::string& name, const std::string& arguments, bool early);
    void start_call(const std::shared_ptr<call_slot>& slot);
    // Resume and approval, before a call starts: true when the call is
    // settled (its recorded result taken, skipped, rejected, or parked).
    bool settle_before_start(const std::shared_ptr<call_slot>& slot);
    void park(const std::shared_ptr<call_slot>& slot, std::string state, std::string reason, std::string message);
    bool requires_approval(const std::string& tool) const;
    void run_call(const std::shared_ptr<call_slot>& slot);
    void finish_call(const std::shared_ptr<call_slot>& slot, bool ok, std::string text);
    void record_call(const call_slot& slot);
    void record_start(const call_slot& slot);
    void start_speculative_calls(int step);
    std::shared_ptr<call_slot> take_speculative(const std::string& name, const std::string& arguments_json, int index);
    void discard_speculative();
    asio::awaitable<void> await_calls(const std::vector<std::shared_ptr<call_slot>>& calls);
    struct verdict {
        bool ok = false;
        std::string message;     // for the model: why the answer failed
        std::string check_text;  // the failing check tool's own result (empty: the runtime's words)
    };
    asio::awaitable<verdict> verify(const std::string& answer);
    result<std::vector<int32_t>> next_turn_tokens(int32_t end_token, const std::vector<chat_message>& new_messages);
    void journal_turn(const run_turn& t);
    void finish(run_outcome& out, std::string state, std::string error = {});
    void watch_cancel();
    void stop_work();

    run_environment env_;
    run_request req_;
    asio::any_io_executor ex_;
    asio::steady_timer deadline_;
    asio::steady_timer watch_;  // polls the external cancel flag (set from a signal handler or another thread)
    bool deadline_hit_ = false;
    bool done_ = false;
    bool ended_ = false;  // run_end is written: nothing is recorded after it
    // Resuming: what the journal holds (null for a new run); the turn being
    // fed from it; the session's KV lags behind the conversation (replayed
    // turns are prefilled with the first generated one); why the run parks.
    std::shared_ptr<run_replay> replay_;
    bool replaying_ = false;
    bool kv_behind_ = false;
    std::optional<stop_reason> park_;
    call_decision approval_;  // the last decision the approval hook gave
    int64_t n_events_ = 0;  // events recorded (their seq when the run keeps no journal)
    int n_rejected_answers_ = 0;
    std::vector<std::weak_ptr<call_slot>> live_calls_;
    clock_type::time_point t0_ = clock_type::now();
    std::unique_ptr<journal::event_sink> journal_;
    // The journal refused a write (fencing: another process owns the run
    // now): the run stops, records nothing more and starts no tool.
    bool fenced_ = false;

    const agent_definition* agent_ = nullptr;
    std::vector<std::shared_ptr<tools::tool>> tools_;
    std::map<std::string, std::pair<std::shared_ptr<tools::tool>, std::shared_ptr<const json_schema>>> tool_by_name_;
    std::vector<std::pair<std::shared_ptr<tools::tool>, const agent_verify_check*>> verify_tools_;
    std::shared_ptr<const json_schema> output_schema_;
    std::shared_ptr<turn_constraint> constraint_;  // the running turn's, used on the engine thread
    std::set<std::string> grounded_;
    std::vector<std::string> grounding_texts_;  // the texts grounded_ came from (for "x-grounded-with")

    // Speculative tools: calls predicted for the turn being decoded, calls
    // predicted for the turn after it (from the same results, so that a call
    // whose arguments the previous results already hold overlaps the call
    // the model makes in between), and what the predictions are made from:
    // the previous turn's calls and results, and the turn's before that.
    std::vector<std::shared_ptr<call_slot>> spec_slots_;
    std::vector<std::shared_ptr<call_slot>> ahead_slots_;
    std::vector<predicted_call> turn_predictions_;  // this turn's, for call drafts (started or not)
    std::string prev_kind_ = "<start>";
    std::string prev_text_;  // what the previous turn read (task, tool results, verifier's words)
    std::string back_kind_;  // the turn before the previous one ("" before there was one)
    std::string back_text_;

    session_id session_ = 0;
    request_id current_request_ = 0;
    // Remote model: the stream of the turn in flight (closed by stop_work),
    // the conversation as sent (each request repeats it byte for byte), and
    // the turn's content and calls as the server streamed them.
    std::shared_ptr<remote::chat_stream> remote_stream_;
    std::vector<remote::remote_message> remote_messages_;
    std::string remote_content_;
    std::vector<remote::remote_tool_call> remote_calls_;
    std::vector<chat_message> messages_;
    chat_render_options render_options_;  // the tools section, in every render
    std::string rendered_;             // the conversation as rendered so far (ends with the assistant prompt)
    std::vector<int32_t> all_tokens_;  // the tokens of rendered_ plus generated ones (for the no-kv_retain mode)
    int n_prompt_tokens_ = 0;          // tokens of rendered_
    int generated_total_ = 0;

    // The turn being decoded.
    std::optional<incremental_detokenizer> detok_;
    tool_call_parser parser_;
    std::vector<tool_call_event> events_;
    std::string turn_text_;
    int turn_step_ = 0;
    int turn_calls_ = 0;
    int turn_call_errors_ = 0;
    std::vector<std::shared_ptr<call_slot>> turn_slots_;
    std::vector<std::pair<int, std::string>> turn_errors_;  // call index → error text for the model
    std::map<int, std::string> turn_model_ids_;  // call index → the id the model wrote for it (Mistral)
    // The turn as structured calls, for the families whose templates tell a
    // turn of calls from an answer by them (Mistral): the text before the
    // first call, and each complete call with the id its result answers.
    std::string turn_lead_text_;
    std::vector<chat_tool_call> turn_structured_calls_;
    double turn_decode_end_ms_ = 0;

    run_outcome out_;
    std::unique_ptr<telemetry::run_trace> trace_;  // made at the first event when env_.tracer is set
};

}  // namespace tachyon::agent_detail
