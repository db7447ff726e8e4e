#include "tachyon/runtime.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "base/log.h"
#include "runtime/agent/agent_service.h"
#include "runtime/sdk/bridge.h"

namespace tachyon::sdk {
namespace {

turn_info to_public(const run_turn& t) {
    return turn_info{t.step, t.prefill_tokens, t.reused_tokens, t.generated_tokens, t.start_ms, t.first_token_ms, t.end_ms, t.text};
}

tool_call_info to_public(const run_tool_call& c) {
    return tool_call_info{c.step, c.call_id, c.name, c.arguments, c.start_ms, c.end_ms, c.ok, c.early, c.result};
}

run_state parse_state(const std::string& s) {
    if (s == "succeeded") return run_state::succeeded;
    if (s == "cancelled") return run_state::cancelled;
    if (s == "budget_exhausted") return run_state::budget_exhausted;
    return run_state::failed;
}

run_result to_public(const run_outcome& o) {
    run_result r;
    r.run_id = o.run_id;
    r.state = parse_state(o.state);
    r.error = o.error;
    r.verified = o.verified;
    r.answer = o.answer;
    r.steps = o.steps;
    r.verify_attempts = o.verify_attempts;
    r.time_to_answer_ms = o.time_to_answer_ms;
    r.model_ms = o.model_ms;
    r.tool_ms = o.tool_ms;
    r.overlap_saved_ms = o.overlap_saved_ms;
    r.prefill_tokens = o.prefill_tokens;
    r.reused_tokens = o.reused_tokens;
    r.generated_tokens = o.generated_tokens;
    r.n_tool_calls = o.n_tool_calls;
    r.n_bad_calls = o.n_bad_calls;
    for (const auto& t : o.turns) r.turns.push_back(to_public(t));
    for (const auto& c : o.calls) r.calls.push_back(to_public(c));
    r.journal_path = o.journal_path;
    return r;
}

// The run's observer, turned into public events. The boundary of user code
// on the event loop: an exception from the callback is logged, never
// propagated into the agent loop.
class event_bridge final : public run_observer {
public:
    explicit event_bridge(event_callback callback) : callback_(std::move(callback)) {}
    void on_turn_start(int step) override { emit(turn_start_event{step}); }
    void on_text(std::string_view text) override { emit(text_event{std::string(text)}); }
    void on_turn_end(const run_turn& t) override { emit(turn_end_event{to_public(t)}); }
    void on_tool_start(const run_tool_call& c) override { emit(tool_start_event{to_public(c)}); }
    void on_tool_end(const run_tool_call& c) override { emit(tool_end_event{to_public(c)}); }
    void on_verify(int attempt, bool ok, const std::string& message) override { emit(verify_event{attempt, ok, message}); }

private:
    void emit(const event& e) {
        try {
            callback_(e);
        } catch (const std::exception& ex) {
            TACHYON_LOG(warn, __func__ << ": the event callback threw: " << ex.what());
        } catch (...) {
            TACHYON_LOG(warn, __func__ << ": the event callback threw a non-standard exception");
        }
    }
    event_callback callback_;
};

service_options to_service_options(const runtime_options& o) {
    service_options so;
    so.engine.n_threads = std::max(1, o.n_threads);
    so.engine.n_ctx = o.n_ctx;
    so.engine.kv_f16 = !o.kv_f32;
    so.n_io_threads = std::max(1, o.n_io_threads);
    so.n_tool_threads = std::max(1, o.n_tool_threads);
    // A runtime has no error path: bad tracing settings are logged and leave tracing off.
    auto tracer = telemetry::tracer_from_env(o.otlp_endpoint);
    if (tracer) so.tracer = *tracer;
    else TACHYON_LOG(warn, "tracing is off: " << tracer.err().message);
    return so;
}

}  // namespace

std::string_view to_string(run_state state) {
    switch (state) {
        case run_state::succeeded: return "succeeded";
        case run_state::failed: return "failed";
        case run_state::cancelled: return "cancelled";
        case run_state::budget_exhausted: return "budget_exhausted";
    }
    return "failed";
}

struct run_handle::state {
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
    std::promise<run_result> promise;
    std::shared_future<run_result> future = promise.get_future().share();
};

const run_result& run_handle::wait() const { return state_->future.get(); }

bool run_handle::done() const { return state_->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

void run_handle::cancel() { state_->cancel->store(true); }

std::shared_future<run_result> run_handle::future() const { return state_->future; }

struct runtime::impl {
    agent_service service;
    std::mutex mutex;
    std::condition_variable idle;
    int n_active = 0;  // runs started whose completion has not finished yet

    explicit impl(const runtime_options& o) : service(to_service_options(o)) {}
};

runtime::runtime(const runtime_options& options) : impl_(std::make_unique<impl>(options)) {}

runtime::~runtime() {
    // Two stages: ask every run to stop, then wait until each has ended (its
    // journal closed, its callback returned) before the event loop stops.
    impl_->service.cancel_all();
    std::unique_lock lock(impl_->mutex);
    impl_->idle.wait(lock, [this] { return impl_->n_active == 0; });
}

run_handle runtime::start(const agent& a, const std::string& task, const run_options& options,
                          std::function<void(const run_result&)> on_done) {
    const auto& ai = agent_access::get(a);
    run_request req;
    req.agent = ai.definition;
    req.task = task;
    req.inputs = options.inputs;
    req.switches.early_dispatch = options.early_dispatch;
    req.switches.parallel_tools = options.parallel_tools;
    req.switches.kv_retain = options.kv_retain;
    req.switches.constrain = options.constrain;
    req.switches.grounding = options.grounding;
    req.journal_dir = options.journal_dir;
    req.run_id = options.run_id;
    req.traceparent = options.traceparent;
    // One tool per name: a per-run tool replaces the agent's tool of that name.
    for (const auto& t : options.tools)
        if (t) req.custom_tools.push_back(adapt_tool(t));
    for (const auto& t : ai.custom_tools) {
        const bool replaced = std::any_of(req.custom_tools.begin(), req.custom_tools.end(), [&](const auto& c) { return c->name() == t->name(); });
        if (!replaced) req.custom_tools.push_back(t);
    }

    auto st = std::make_shared<run_handle::state>();
    std::shared_ptr<event_bridge> observer;
    if (options.on_event) observer = std::make_shared<event_bridge>(options.on_event);
    {
        std::lock_guard lock(impl_->mutex);
        ++impl_->n_active;
    }
    impl* self = impl_.get();
    impl_->service.start(std::move(req), observer.get(), st->cancel,
                         [self, st, observer, on_done = std::move(on_done)](run_outcome out) {
                             st->promise.set_value(to_public(out));
                             if (on_done) {
                                 try {
                                     on_done(st->future.get());
                                 } catch (const std::exception& e) {
                                     TACHYON_LOG(warn, "runtime::start: the on_done callback threw: " << e.what());
                                 } catch (...) {
                                     TACHYON_LOG(warn, "runtime::start: the on_done callback threw a non-standard exception");
                                 }
                             }
                             std::lock_guard lock(self->mutex);
                             --self->n_active;
                             self->idle.notify_all();
                         });
    return run_handle(st);
}

run_result runtime::run(const agent& a, const std::string& task, const run_options& options) {
    return start(a, task, options).wait();
}

result<model> runtime::open_model(const std::string& path, const std::string& chat_format) {
    auto host = impl_->service.host(path, chat_format);
    if (!host) return to_public(host.err());
    return model_access::make(std::move(host).value());
}

void runtime::cancel_all() { impl_->service.cancel_all(); }

void runtime_access::add_model(runtime& rt, const std::string& path, std::shared_ptr<model_host> host) {
    rt.impl_->service.add_host(path, std::move(host));
}

}  // namespace tachyon::sdk
