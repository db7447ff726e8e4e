// The agent loop (DESIGN.md): render prompt, then per step generate a turn
// (tools dispatched from the stream), await its tools and append their
// results, or verify its final answer; budgets and cancellation end it
// anywhere. This file holds the loop, the run's setup, its journal and its
// end; agent_turn.cpp one turn, agent_verify.cpp the final answer,
// agent_calls.cpp the tool calls.
#include "runtime/agent/agent_run.h"

#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <chrono>

#include "base/log.h"
#include "runtime/agent/agent_runner.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/constrain/json_schema.h"
#include "runtime/journal/journal.h"

namespace tachyon {
namespace agent_detail {

asio::awaitable<run_outcome> runner::run() {
    if (!open_run()) co_return out_;
    arm_budgets();
    struct disarm_at_exit {
        runner& r;
        ~disarm_at_exit() { r.disarm_budgets(); }
    } disarm{*this};

    auto prompt = render_prompt();
    if (!prompt) co_return end_run("failed", prompt.err().message);
    std::vector<int32_t> append = std::move(prompt).value();
    for (int step = 1;; ++step) {
        if (auto spent = spent_budget(step)) co_return end_run(std::move(spent->state), std::move(spent->error));
        auto end_token = co_await generate_turn(step, std::move(append));
        if (!end_token) co_return end_run("failed", end_token.err().message);
        if (stopping()) continue;  // reported by spent_budget

        std::vector<chat_message> feedback;
        if (turn_calls_ + turn_call_errors_ > 0) {
            co_await await_tools();
            // A call waits for a person: the run stops here, its turn and the
            // other calls journaled, and goes on from here when resumed.
            if (park_) co_return end_run(park_->state, park_->error);
            feedback = append_results(step);
        } else {
            auto rejected = co_await verify_answer(step);
            if (!rejected) co_return out_;  // accepted, or out of retries: the run has ended
            feedback.push_back(std::move(*rejected));
        }
        auto next = next_turn_tokens(*end_token, feedback);
        if (!next) co_return end_run("failed", next.err().message);
        append = std::move(next).value();
    }
}

// The journal first (a run that cannot start is recorded too), run_start,
// then the tools and schemas. False: the run has ended (recorded). A
// resumed run continues its journal instead: run_resume, then the
// decisions it was given.
bool runner::open_run() {
    agent_ = req_.agent.get();
    const agent_definition& a = *agent_;
    if (req_.resume) {
        replay_ = req_.resume;
        out_.resumed = true;
        out_.run_id = replay_->log().run_id();
        // Nothing is written before the run can go on: a resume that fails
        // here (another writer, an agent file that no longer loads) leaves
        // the journal as it was, to be resumed again.
        auto st = setup();
        auto w = !st ? result<std::unique_ptr<journal::event_sink>>(st.err()) : open_journal(&replay_->log());
        if (!w) {
            journal_.reset();
            finish(out_, "failed", w.err().message);
            return false;
        }
        journal_ = std::move(w).value();
        t0_ = journal_->start();
        out_.journal_path = journal_->location();
        journal::run_resume_event e;
        e.resumed_at = journal::iso_utc(std::chrono::system_clock::now());
        e.from_seq = journal_->n_events();
        for (const auto& w : replay_->log().warnings) e.note += (e.note.empty() ? "" : "; ") + w;
        record(std::move(e));
        for (const auto& d : req_.decisions) {
            record(journal::decision_event{d.call_id, d.action, d.reason});
            replay_->add_decision(d);
        }
        return true;
    }
    if (req_.open_journal || !req_.journal_dir.empty()) {
        out_.run_id = req_.run_id;
        auto w = open_journal(nullptr);
        if (!w) {
            finish(out_, "failed", w.err().message);
            return false;
        }
        journal_ = std::move(w).value();
        t0_ = journal_->start();
        out_.journal_path = journal_->location();
    } else {
        out_.run_id = req_.run_id.empty() ? journal::make_run_id() : req_.run_id;
    }
    journal::run_start_event e;
    e.run_id = out_.run_id;
    e.agent = a.name;
    e.agent_file = a.file;
    e.model = a.model;
    e.inputs = req_.inputs;
    e.task = req_.task;
    e.started_at = journal::iso_utc(std::chrono::system_clock::now());
    e.switches = switches_to_map(req_.switches);
    record(std::move(e));
    if (auto st = setup(); !st) {
        finish(out_, "failed", st.err().message);
        return false;
    }
    return true;
}

// The run's journal: the sink the request opens, else the files of
// journal_dir. A new run learns its id here (out_.run_id: the file
// writer makes one up when none is given).
result<std::unique_ptr<journal::event_sink>> runner::open_journal(const journal::run_log* resumed) {
    if (req_.open_journal) {
        if (!resumed && out_.run_id.empty()) return make_error(errc::invalid_argument, "run request: a journal sink needs a run id");
        return req_.open_journal(resumed ? resumed->run_id() : out_.run_id, resumed);
    }
    auto w = resumed ? journal::writer::open_existing(*resumed) : journal::writer::create(req_.journal_dir, out_.run_id);
    if (!w) return w.err();
    if (!resumed) out_.run_id = w->run_id();
    return std::unique_ptr<journal::event_sink>(std::make_unique<journal::writer>(std::move(w).value()));
}

status runner::setup() {
    agent_ = req_.agent.get();
    const agent_definition& a = *agent_;
    if (!env_.mcp && !a.mcp_servers.empty()) env_.mcp = std::make_shared<mcp_sessions>();  // closed with the run
    auto made = make_agent_tools(a, req_.inputs, req_.custom_tools, env_.mcp.get());
    if (!made) return made.err();
    tools_ = std::move(made).value();
    const auto wrapped = [&](std::shared_ptr<tools::tool> t) { return req_.wrap_tool ? req_.wrap_tool(std::move(t)) : t; };
    for (auto& t : tools_) t = wrapped(std::move(t));
    for (const auto& t : tools_) {
        auto schema = json_schema::parse(t->parameters_schema(), std::string(t->name()), "argument");
        if (!schema) return make_error(errc::internal, "tool " + std::string(t->name()) + " declares a bad schema: " + schema.err().message);
        tool_by_name_.emplace(std::string(t->name()), std::make_pair(t, std::make_shared<const json_schema>(std::move(schema).value())));
    }
    for (const auto& check : a.verify) {
        // A tool defined in code (SDK) verifies as it is; built-ins are made from the check's settings.
        auto custom = std::find_if(req_.custom_tools.begin(), req_.custom_tools.end(), [&](const auto& t) { return t->name() == check.tool; });
        if (custom != req_.custom_tools.end()) {
            verify_tools_.emplace_back(wrapped(*custom), &check);
            continue;
        }
        tool_request r{check.tool, {}};
        for (const auto& [k, v] : check.settings) {
            auto filled = fill_placeholders(v, req_.inputs, a.file + ": verify." + check.tool + ".settings." + k);
            if (!filled) return filled.err();
            r.settings[k] = *filled;
        }
        auto vt = make_builtin_tools({r});
        if (!vt) return vt.err();
        verify_tools_.emplace_back(wrapped(vt->front()), &check);
    }
    if (!a.output_schema.empty()) {
        auto s = json_schema::parse(a.output_schema, "final answer", "field");
        if (!s) return make_error(errc::invalid_argument, a.file + ": output_schema: " + s.err().message);
        output_schema_ = std::make_shared<const json_schema>(std::move(s).value());
    }
    if (!output_schema_) {
        // Without an output schema the agent answers in prose: no field to copy.
        for (size_t i = 0; i < a.verify.size(); ++i)
            for (const auto& [name, source] : a.verify[i].arguments)
                if (source.rfind("$.", 0) == 0)
                    return make_error(errc::invalid_argument,
                                      a.file + ": verify.checks[" + std::to_string(i) + "].arguments." + name + ": '" + source +
                                          "' reads a field of the answer, but the agent has no output_schema (it answers in prose); "
                                          "expected an output_schema, or fixed arguments");
    }
    return {};
}

// The deadline (a timer that stops the run's work when it fires) and the
// watch of the external cancel flag (polled every 50 ms).
void runner::arm_budgets() {
    // A resumed run has what its earlier processes left of the deadline
    // (the run's clock goes on from its journal's last event).
    const int64_t left = std::max<int64_t>(0, agent_->budgets.deadline_ms - static_cast<int64_t>(now_ms()));
    deadline_.expires_after(std::chrono::milliseconds(left));
    deadline_.async_wait([this, self = shared_from_this()](boost::system::error_code ec) {
        if (ec) return;
        deadline_hit_ = true;
        stop_work();
    });
    watch_cancel();
}

void runner::disarm_budgets() {
    done_ = true;
    deadline_.cancel();
    watch_.cancel();
}

// Why the run may not take step `step`: cancelled, past its deadline, out
// of steps or of tokens. Checked before every turn.
std::optional<runner::stop_reason> runner::spent_budget(int step) const {
    const agent_budgets& b = agent_->budgets;
    if (stopping())
        return deadline_hit_ ? stop_reason{"budget_exhausted", "deadline of " + std::to_string(b.deadline_ms) + " ms passed"}
                             : stop_reason{"cancelled", "cancelled"};
    if (step > b.max_steps)
        return stop_reason{"budget_exhausted", "max_steps (" + std::to_string(b.max_steps) + ") reached without a verified answer"};
    if (b.max_tokens - generated_total_ <= 0)
        return stop_reason{"budget_exhausted", "max_tokens (" + std::to_string(b.max_tokens) + ") spent without a verified answer"};
    return std::nullopt;
}

run_outcome runner::end_run(std::string state, std::string error) {
    finish(out_, std::move(state), std::move(error));
    return out_;
}

void runner::record(journal::event_body body) {
    if (ended_) return;
    // Replaying a resumed run: what the journal holds is not written again.
    if (replay_ && replay_->holds(body)) return;
    journal::event e;
    if (journal_) {
        auto written = journal_->append(body);
        if (written) {
            e = std::move(written).value();
        } else if (written.err().code == errc::cancelled) {
            // Fenced: the run belongs to another process now. It stops
            // here, and nothing more of it is written or reported.
            TACHYON_LOG(warn, __func__ << ": run " << out_.run_id << ": " << written.err().message << "; stopping");
            fenced_ = true;
            ended_ = true;
            stop_work();
            return;
        } else {
            // The run goes on; the gap shows as a missing seq to the reader.
            TACHYON_LOG(warn, __func__ << ": " << written.err().message);
            e.seq = journal_->n_events();
            e.t_ms = now_ms();
            e.body = std::move(body);
        }
    } else {
        e.seq = n_events_;
        e.t_ms = now_ms();
        e.body = std::move(body);
    }
    n_events_ = e.seq + 1;
    if (env_.tracer) trace_event(e);
    if (env_.observer) env_.observer->on_event(e);
}

void runner::record_rejected_call(std::string call_id, std::string name, std::string arguments, std::string error) {
    journal::call_rejected_event e;
    e.step = turn_step_;
    e.call_id = std::move(call_id);
    e.name = std::move(name);
    e.arguments_json = std::move(arguments);
    e.error = std::move(error);
    record(std::move(e));
}

void runner::journal_turn(const run_turn& t) { record(journal_event(t)); }

void runner::finish(run_outcome& out, std::string state, std::string error) {
    // No call outlives the run: one still running (a call dispatched from the
    // last tokens of a cancelled turn, a prediction) is cut off and recorded
    // now, before run_end, and a result that comes back later is dropped.
    // A call the model wrote that never started (tools start after the turn
    // and the run stopped first) is journaled as one that never ran.
    for (const auto& slot : turn_slots_) {
        if (slot->rec.start_ms != 0 || slot->finished || slot->parked) continue;
        slot->finished = true;
        record_rejected_call(slot->rec.call_id, slot->rec.name, slot->rec.arguments, "not run: the run stopped (" + (error.empty() ? state : error) + ")");
        slot->done.set();
    }
    stop_work();
    out.state = std::move(state);
    out.error = std::move(error);
    out.total_ms = now_ms();
    for (const auto& t : out.turns) out.model_ms += t.end_ms - t.start_ms;
    for (const auto& c : out.calls) out.tool_ms += c.end_ms - c.start_ms;
    auto parsed = journal::parse_run_state(out.state);
    const bool parked = parsed && journal::is_parked(*parsed);
    if (parked) {
        // Not the end of the run: no final answer; run_end records where it waits.
        journal::run_end_event e;
        e.state = *parsed;
        e.error = out.error;
        record(std::move(e));
    } else {
        journal::final_event f;
        f.answer_json = out.answer.empty() ? "null" : out.answer;
        f.verified = out.verified;
        f.steps = out.steps;
        f.time_to_answer_ms = out.time_to_answer_ms;
        f.model_ms = out.model_ms;
        f.tool_ms = out.tool_ms;
        f.overlap_saved_ms = out.overlap_saved_ms;
        record(std::move(f));
        journal::run_end_event e;
        e.state = parsed ? *parsed : journal::run_state::failed;
        e.error = out.error;
        record(std::move(e));
    }
    ended_ = true;
    if (session_ != 0) env_.host->eng().close_session(session_);
}

}  // namespace agent_detail

journal::model_turn_event journal_event(const run_turn& t) {
    journal::model_turn_event e;
    e.step = t.step;
    e.prefill_tokens = t.prefill_tokens;
    e.reused_tokens = t.reused_tokens;
    e.generated_tokens = t.generated_tokens;
    e.prefill_start_ms = t.start_ms;
    e.prefill_end_ms = t.first_token_ms;
    e.decode_end_ms = t.end_ms;
    e.text = t.text;
    e.tokens = t.tokens;
    return e;
}

std::string idempotency_key(const std::string& run_id, const run_tool_call& call) {
    // call_<step>_<index> for the model's calls, verify_<attempt> for checks.
    const std::string& id = call.call_id;
    if (id.rfind("call_", 0) == 0) {
        const size_t sep = id.rfind('_');
        return run_id + ":" + id.substr(5, sep - 5) + ":" + id.substr(sep + 1);
    }
    if (id.rfind("verify_", 0) == 0) return run_id + ":verify:" + id.substr(7) + ":" + call.name;
    return run_id + ":" + id;
}

journal::tool_call_event journal_event(const run_tool_call& c) {
    journal::tool_call_event e;
    e.step = c.step;
    e.call_id = c.call_id;
    e.name = c.name;
    e.arguments_json = c.arguments;
    e.start_ms = c.start_ms;
    e.end_ms = c.end_ms;
    e.ok = c.ok;
    e.result = c.ok ? c.result : std::string();
    e.error = c.ok ? std::string() : c.result;
    e.early = c.early;
    e.speculative = c.speculative;
    return e;
}

boost::asio::awaitable<run_outcome> run_agent(run_environment env, run_request request) {
    auto ex = co_await boost::asio::this_coro::executor;
    auto r = std::make_shared<agent_detail::runner>(std::move(env), std::move(request), ex);
    try {
        co_return co_await r->run();
    } catch (const std::exception& e) {
        run_outcome out;
        out.state = "failed";
        out.error = std::string("internal error: ") + e.what();
        TACHYON_LOG(error, __func__ << ": " << out.error);
        co_return out;
    }
}

}  // namespace tachyon
