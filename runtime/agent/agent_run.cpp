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
// then the tools and schemas. False: the run has ended (recorded).
bool runner::open_run() {
    agent_ = req_.agent.get();
    const agent_definition& a = *agent_;
    if (!req_.journal_dir.empty()) {
        auto w = journal::writer::create(req_.journal_dir, req_.run_id);
        if (!w) {
            finish(out_, "failed", w.err().message);
            return false;
        }
        journal_.emplace(std::move(w).value());
        t0_ = journal_->start();
        out_.run_id = journal_->run_id();
        out_.journal_path = journal_->path().string();
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
    record(std::move(e));
    if (auto st = setup(); !st) {
        finish(out_, "failed", st.err().message);
        return false;
    }
    return true;
}

status runner::setup() {
    agent_ = req_.agent.get();
    const agent_definition& a = *agent_;
    auto made = make_agent_tools(a, req_.inputs, req_.custom_tools);
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
    deadline_.expires_after(std::chrono::milliseconds(agent_->budgets.deadline_ms));
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
    journal::event e;
    if (journal_) {
        auto written = journal_->append(body);
        if (written) {
            e = std::move(written).value();
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
        if (slot->rec.start_ms != 0 || slot->finished) continue;
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
    {
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
        auto parsed = journal::parse_run_state(out.state);
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
    return e;
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
