// A run's tool calls: dispatch on the tool pool, timeouts, cancellation, and
// speculative calls started from the agent's history before the model writes
// them.
#include "runtime/agent/agent_runner.h"

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
    record(std::move(e));
    if (env_.observer) env_.observer->on_tool_start(slot.rec);
}

// Starts the read-only calls the agent's history predicts for this turn and
// for the next one, before the model writes them; the calls predicted for
// this turn by the previous one carry over.
void runner::start_speculative_calls(int step) {
    spec_slots_ = std::move(ahead_slots_);
    ahead_slots_.clear();
    if (!env_.predictor) return;
    env_.predictor->count_turn(prev_kind_);
    env_.predictor->count_turn(call_predictor::two_ahead(prev_kind_));
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

void runner::start_call(const std::shared_ptr<call_slot>& slot) {
    slot->rec.start_ms = now_ms();
    live_calls_.push_back(slot);
    if (!slot->speculative) record_start(*slot);
    if (stopping()) {  // cancelled, or out of time: a call written meanwhile does not start
        slot->cancel.store(true);
        finish_call(slot, false, slot->rec.name + ": cancelled");
        return;
    }
    int64_t timeout_ms = agent_->budgets.tool_timeout_ms;
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
    asio::post(*env_.tool_pool, [this, self = shared_from_this(), slot, ex] {
        tools::call_context ctx{&slot->cancel};
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
