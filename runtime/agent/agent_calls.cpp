// A run's tool calls: dispatch on the tool pool, timeouts, cancellation, and
// speculative calls started from the agent's history before the model writes
// them.
#include "runtime/agent/agent_runner.h"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "base/log.h"
#include "runtime/common/json_util.h"
#include "runtime/agent/tool_catalog.h"

namespace tachyon::agent_detail {

std::shared_ptr<call_slot> runner::make_call(int step, int index, const std::string& name, const std::string& arguments, bool early) {
    auto slot = std::make_shared<call_slot>(ex_);
    slot->rec.step = step;
    slot->rec.call_id = call_id_of(step, index);
    slot->rec.name = name;
    slot->rec.arguments = arguments;
    slot->rec.early = early;
    auto it = tool_by_name_.find(name);
    if (it != tool_by_name_.end()) slot->tool = it->second.first;
    return slot;
}

void runner::finish_call(const std::shared_ptr<call_slot>& slot, bool ok, std::string text) {
    if (slot->finished) return;
    slot->finished = true;
    slot->timeout.cancel();
    slot->cut_off.emit(asio::cancellation_type::terminal);
    slot->rec.end_ms = now_ms();
    slot->rec.ok = ok;
    slot->rec.result = std::move(text);
    if (!slot->speculative) record_call(*slot);  // a prediction is recorded when the model's call matches it
    slot->done.set();
}

// The journal first, then the report: a watcher that saw the result can find it on disk.
void runner::record_call(const call_slot& slot) {
    if (ended_) return;
    out_.calls.push_back(slot.rec);
    record(journal_event(slot.rec));
    if (env_.observer) env_.observer->on_tool_end(slot.rec);
}

// The intent: written (fdatasync'ed for a tool with side effects) before
// the tool begins, so that a resume knows the call may have run.
void runner::record_start(const call_slot& slot) {
    if (ended_) return;
    journal::tool_start_event e;
    e.step = slot.rec.step;
    e.call_id = slot.rec.call_id;
    e.name = slot.rec.name;
    e.arguments_json = slot.rec.arguments;
    e.start_ms = slot.rec.start_ms;
    e.early = slot.rec.early;
    e.speculative = slot.rec.speculative;
    e.read_only = slot.tool && slot.tool->flags().read_only;
    e.idempotency_key = idempotency_key(out_.run_id, slot.rec);
    record(std::move(e));
    if (env_.observer) env_.observer->on_tool_start(slot.rec);
}

// Starts the read-only calls the agent's history predicts for this turn and
// for the next one, before the model writes them; the calls predicted for
// this turn by the previous one carry over.
void runner::start_speculative_calls(int step) {
    spec_slots_ = std::move(ahead_slots_);
    ahead_slots_.clear();
    turn_predictions_.clear();
    if (!env_.predictor) return;
    env_.predictor->count_turn(prev_kind_);
    env_.predictor->count_turn(call_predictor::two_ahead(prev_kind_));
    if (req_.switches.call_drafts) {
        // What the model is likely to write: the calls predicted for this
        // turn, then those started for it a turn ahead.
        turn_predictions_ = env_.predictor->predict(prev_kind_, prev_text_);
        for (const auto& s : spec_slots_) {
            const bool known = std::any_of(turn_predictions_.begin(), turn_predictions_.end(), [&](const predicted_call& p) {
                auto args = json::minify(p.arguments, "predicted call");
                return p.name == s->rec.name && args && *args == s->rec.arguments;
            });
            if (!known) turn_predictions_.push_back({s->rec.name, s->rec.arguments});
        }
    }
    if (!req_.switches.speculative_tools) return;
    const grounded_values gv = grounding();
    const auto start = [&](const predicted_call& p, std::vector<std::shared_ptr<call_slot>>& into) {
        auto it = tool_by_name_.find(p.name);
        if (it == tool_by_name_.end() || !it->second.first->flags().read_only) return;
        if (!it->second.second->validate(p.arguments, req_.switches.grounding ? &gv : nullptr)) return;
        auto args = json::minify(p.arguments, "predicted call");
        if (!args) return;
        for (const auto* slots : {&spec_slots_, &ahead_slots_})
            for (const auto& s : *slots)
                if (s->rec.name == p.name && s->rec.arguments == *args) return;  // already running
        auto slot = make_call(step, -1, p.name, *args, true);
        slot->speculative = true;
        ++out_.n_spec_calls;
        start_call(slot);
        into.push_back(std::move(slot));
    };
    for (const auto& p : env_.predictor->predict(prev_kind_, prev_text_)) start(p, spec_slots_);
    for (const auto& p : env_.predictor->predict(call_predictor::two_ahead(prev_kind_), prev_text_)) start(p, ahead_slots_);
}

// The speculative call the model's call matches exactly (name and minified
// arguments), now the model's; null when none does.
std::shared_ptr<call_slot> runner::take_speculative(const std::string& name, const std::string& arguments_json, int index) {
    if (spec_slots_.empty() && ahead_slots_.empty()) return nullptr;
    auto args = json::minify(arguments_json, "call");
    if (!args) return nullptr;
    for (auto* slots : {&spec_slots_, &ahead_slots_}) {
        for (auto it = slots->begin(); it != slots->end(); ++it) {
            auto slot = *it;
            if (slot->rec.name != name || slot->rec.arguments != *args) continue;
            slots->erase(it);
            slot->speculative = false;
            slot->rec.speculative = true;
            slot->rec.step = turn_step_;
            slot->rec.call_id = call_id_of(turn_step_, index);
            ++out_.n_spec_hits;
            out_.spec_saved_ms += (slot->finished ? slot->rec.end_ms : now_ms()) - slot->rec.start_ms;
            record_start(*slot);
            if (slot->finished) record_call(*slot);
            return slot;
        }
    }
    return nullptr;
}

// Predictions the model did not make are cancelled and forgotten.
void runner::discard_speculative() {
    for (auto& slot : spec_slots_) {
        slot->cancel.store(true);
        if (!slot->finished) finish_call(slot, false, slot->rec.name + ": speculative call discarded");
    }
    spec_slots_.clear();
}

void runner::stop_work() {
    if (current_request_ != 0) env_.host->eng().cancel(current_request_);
    if (remote_stream_) remote_stream_->cancel();
    for (auto& w : live_calls_) {
        if (auto slot = w.lock(); slot && !slot->finished) {
            slot->cancel.store(true);
            finish_call(slot, false, slot->rec.name + ": cancelled");
        }
    }
}

void runner::watch_cancel() {
    watch_.expires_after(std::chrono::milliseconds(50));
    watch_.async_wait([this, self = shared_from_this()](boost::system::error_code ec) {
        if (ec || done_) return;
        if (env_.cancel && env_.cancel->load()) {
            stop_work();
            return;
        }
        watch_cancel();
    });
}

bool runner::requires_approval(const std::string& tool) const {
    for (const auto& t : agent_->tools)
        if (t.name == tool) return t.requires_approval;
    return false;
}

// Parks the run on `slot`: journaled as pending, finished here without
// running; the loop ends the run in `state` once the turn's other calls are
// done, and a resume with a decision takes it from there.
void runner::park(const std::shared_ptr<call_slot>& slot, std::string state, std::string reason, std::string message) {
    slot->parked = true;
    slot->finished = true;
    if (slot->rec.start_ms == 0) slot->rec.start_ms = now_ms();
    journal::call_pending_event e;
    e.step = slot->rec.step;
    e.call_id = slot->rec.call_id;
    e.name = slot->rec.name;
    e.arguments_json = slot->rec.arguments;
    e.reason = std::move(reason);
    e.message = message;
    out_.pending.push_back(e);
    record(std::move(e));
    if (!park_) park_ = stop_reason{std::move(state), std::move(message)};
    slot->done.set();
}

bool runner::settle_before_start(const std::shared_ptr<call_slot>& slot) {
    if (slot->speculative) return false;  // read-only, and not the model's call yet
    const run_tool_call& c = slot->rec;
    const bool read_only = slot->tool && slot->tool->flags().read_only;
    // 1. A result the journal holds: the model reads it again; nothing runs.
    if (replay_) {
        if (const auto* r = replay_->result(c.call_id, c.name, c.arguments)) {
            slot->rec.start_ms = r->start_ms;
            slot->rec.end_ms = r->end_ms;
            slot->rec.ok = r->ok;
            slot->rec.result = r->ok ? r->result : r->error;
            slot->rec.replayed = true;
            slot->finished = true;
            out_.calls.push_back(slot->rec);
            slot->done.set();
            return true;
        }
    }
    const call_decision* decided = replay_ ? replay_->decision(c.call_id) : nullptr;
    // 2. Approval, asked once per call (the decision is journaled).
    if (requires_approval(c.name)) {
        if (!decided || (decided->action != "approve" && decided->action != "reject")) {
            std::optional<call_decision> d = req_.approve ? req_.approve(c) : std::nullopt;
            if (!d) {
                park(slot, "awaiting_approval", "approval",
                     "call " + c.call_id + " of " + c.name + " " + c.arguments + " requires approval: approve or reject it");
                return true;
            }
            d->call_id = c.call_id;
            record(journal::decision_event{d->call_id, d->action, d->reason});
            if (replay_) replay_->add_decision(*d);
            approval_ = *d;
            decided = &approval_;
        }
        if (decided->action == "reject") {
            slot->rec.start_ms = now_ms();
            finish_call(slot, false, c.name + ": rejected by a person" + (decided->reason.empty() ? "" : ": " + decided->reason));
            return true;
        }
    }
    // 3. Started by an earlier process without a result: it may have run.
    if (replay_ && replay_->maybe_ran(c.call_id, c.name, c.arguments) && !read_only) {
        if (!decided || (decided->action != "retry" && decided->action != "skip")) {
            park(slot, "needs_attention", "attention",
                 "call " + c.call_id + " of " + c.name + " " + c.arguments +
                     " was started before the run's process stopped and may have run; it is not read-only, so it runs "
                     "again only when a person decides: retry or skip");
            return true;
        }
        if (decided->action == "skip") {
            slot->rec.start_ms = now_ms();
            finish_call(slot, false, c.name + ": not run: skipped by a person after an interruption" +
                                         (decided->reason.empty() ? "" : ": " + decided->reason));
            return true;
        }
    }
    return false;  // run it (again, for a read-only call or a retry)
}

void runner::start_call(const std::shared_ptr<call_slot>& slot) {
    if (settle_before_start(slot)) return;
    slot->rec.start_ms = now_ms();
    live_calls_.push_back(slot);
    if (!slot->speculative) record_start(*slot);
    if (stopping()) {  // cancelled, or out of time: a call written meanwhile does not start
        slot->cancel.store(true);
        finish_call(slot, false, slot->rec.name + ": cancelled");
        return;
    }
    // The agent file's timeout for this tool; else the tool's own bound
    // (MCP: its client times the request out first, and tells the server),
    // with a second's grace; else the run's default.
    int64_t timeout_ms = agent_->budgets.tool_timeout_ms;
    if (const int64_t own = slot->tool->flags().max_duration_ms; own > 0) timeout_ms = std::max(timeout_ms, own + 1000);
    for (const auto& t : agent_->tools)
        if (t.name == slot->rec.name && t.timeout_ms) timeout_ms = *t.timeout_ms;
    slot->timeout.expires_after(std::chrono::milliseconds(timeout_ms));
    slot->timeout.async_wait([this, self = shared_from_this(), slot, timeout_ms](boost::system::error_code ec) {
        if (ec || slot->finished) return;
        slot->cancel.store(true);
        finish_call(slot, false, slot->rec.name + ": timed out after " + std::to_string(timeout_ms) + " ms");
    });
    // The tool begins its work now, or later if it waits first (tools::tool::begin);
    // the timeout above counts that wait too. A call finished meanwhile never runs.
    slot->tool->begin({ex_, slot->cut_off.slot()}, [this, self = shared_from_this(), slot] {
        if (!slot->finished) run_call(slot);
    });
}

void runner::run_call(const std::shared_ptr<call_slot>& slot) {
    auto ex = ex_;
    // The pool thread holds the runner alive: a timed-out call may finish after the run.
    // The key stays the same for this call in every process of the run.
    auto key = std::make_shared<const std::string>(idempotency_key(out_.run_id, slot->rec));
    auto traceparent = std::make_shared<const std::string>(call_traceparent(slot->rec.call_id));
    asio::post(*env_.tool_pool, [this, self = shared_from_this(), slot, ex, key, traceparent] {
        tools::call_context ctx{&slot->cancel, *key, *traceparent};
        result<std::string> r = make_error(errc::internal, "tool threw");
        try {
            r = slot->tool->invoke(slot->rec.arguments, ctx);
        } catch (const std::exception& e) {
            r = make_error(errc::internal, slot->rec.name + ": internal error: " + e.what());
        }
        // A call cut off meanwhile (timeout, discarded prediction, cancel) is
        // finished already: nothing to deliver, and the run may be over.
        if (slot->cancel.load()) return;
        asio::post(ex, [this, self, slot, r = std::move(r)]() mutable {
            if (r) finish_call(slot, true, std::move(r).value());
            else finish_call(slot, false, r.err().message);
        });
    });
}

asio::awaitable<void> runner::await_calls(const std::vector<std::shared_ptr<call_slot>>& calls) {
    for (const auto& c : calls) co_await c->done.wait();
}

}  // namespace tachyon::agent_detail
