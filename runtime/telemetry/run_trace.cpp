#include "runtime/telemetry/run_trace.h"

#include <charconv>
#include <variant>

namespace tachyon::telemetry {
namespace {

void set_sampling(span& s, double temperature, double top_p, std::optional<int64_t> max_tokens, std::optional<uint64_t> seed) {
    s.set("gen_ai.request.temperature", temperature);
    s.set("gen_ai.request.top_p", top_p);
    if (max_tokens) s.set("gen_ai.request.max_tokens", *max_tokens);
    // Servers read seeds as signed 64-bit integers; so does OTLP's intValue.
    if (seed) s.set("gen_ai.request.seed", static_cast<int64_t>(*seed & 0x7fffffffffffffffULL));
}

}  // namespace

run_trace::run_trace(std::shared_ptr<tracer> t, run_trace_info info) : tracer_(std::move(t)), info_(std::move(info)) {
    const span_start root = tracer_->start_root(info_.traceparent);
    run_.context = root.context;
    run_.parent = root.parent;
    run_.name = "invoke_agent " + info_.agent;
    run_.kind = span_kind::internal;  // the agent runs in this process
}

run_trace::~run_trace() {
    if (run_open_) end_run("failed", "the run ended without recording its end", -1);
}

uint64_t run_trace::at(double t_ms) const {
    return tracer_->unix_nanos(info_.t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double, std::milli>(t_ms)));
}

std::string run_trace::traceparent() const {
    if (turn_ && !turn_generated_) return format_traceparent(turn_->context);
    return format_traceparent(run_.context);
}

std::string run_trace::tool_traceparent(const std::string& call_id) {
    auto it = tool_starts_.find(call_id);
    if (it == tool_starts_.end()) it = tool_starts_.emplace(call_id, tracer::child_of(run_.context)).first;
    return format_traceparent(it->second.context);
}

void run_trace::open_turn(int64_t step, double t_ms) {
    close_turn();
    const span_start where = tracer::child_of(run_.context);
    span s;
    s.context = where.context;
    s.parent = where.parent;
    s.name = "chat " + info_.model;
    // In-process generation is INTERNAL; a request to another server is CLIENT (semantic conventions).
    s.kind = info_.remote ? span_kind::client : span_kind::internal;
    s.start_unix_nano = s.end_unix_nano = at(t_ms);
    s.set("gen_ai.operation.name", std::string("chat"));
    s.set("gen_ai.provider.name", info_.provider);
    s.set("gen_ai.request.model", info_.model);
    if (!info_.server_address.empty()) s.set("server.address", info_.server_address);
    int64_t port = 0;
    const std::string& p = info_.server_port;
    if (auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port); ec == std::errc() && end == p.data() + p.size() && !p.empty())
        s.set("server.port", port);
    set_sampling(s, info_.temperature, info_.top_p, info_.max_tokens > 0 ? std::optional<int64_t>(info_.max_tokens) : std::nullopt,
                 info_.seed != 0 ? std::optional<uint64_t>(info_.seed) : std::nullopt);
    s.set("gen_ai.conversation.id", info_.run_id);
    s.set("tachyon.step", step);
    turn_ = std::move(s);
    turn_generated_ = false;
    turn_step_ = step;
}

void run_trace::close_turn(const std::string& finish_reason_override) {
    if (!turn_) return;
    span s = std::move(*turn_);
    turn_.reset();
    if (!turn_generated_) {
        // The turn never finished (cancelled, deadline, a failed request).
        s.set("gen_ai.response.finish_reasons", std::vector<std::string>{finish_reason_override.empty() ? "error" : finish_reason_override});
        s.status = status_code::error;
        s.status_message = "the turn did not finish";
        s.set("error.type", std::string(finish_reason_override.empty() ? "incomplete" : finish_reason_override));
    } else {
        const std::string reason = !finish_reason_override.empty() ? finish_reason_override
                                   : steps_with_calls_.count(turn_step_) ? "tool_calls"
                                                                        : "stop";
        s.set("gen_ai.response.finish_reasons", std::vector<std::string>{reason});
    }
    tracer_->end(std::move(s));
}

void run_trace::end_run(const std::string& state, const std::string& error, double t_ms) {
    if (turn_) close_turn(turn_generated_ ? std::string() : state == "cancelled" ? "cancelled" : "error");
    run_.end_unix_nano = t_ms >= 0 ? at(t_ms) : tracer_->unix_nanos(std::chrono::steady_clock::now());
    run_.set("tachyon.run.state", state);
    run_.set("tachyon.run.turns", n_turns_);
    run_.set("tachyon.run.tool_calls", n_calls_);
    run_.set("gen_ai.usage.input_tokens", input_tokens_);
    run_.set("gen_ai.usage.output_tokens", output_tokens_);
    run_.set("gen_ai.usage.cache_read.input_tokens", cached_tokens_);
    if (state != "succeeded" && state != "needs_attention" && state != "awaiting_approval") {
        run_.status = status_code::error;
        run_.status_message = error.empty() ? state : error;
        run_.set("error.type", state);
    }
    run_open_ = false;
    tracer_->end(run_);
}

void run_trace::on_event(const journal::event& e) {
    const auto& b = e.body;
    if (std::get_if<journal::run_start_event>(&b)) {
        run_.start_unix_nano = at(0);
        run_.set("gen_ai.operation.name", std::string("invoke_agent"));
        run_.set("gen_ai.provider.name", info_.provider);
        run_.set("gen_ai.agent.name", info_.agent);
        run_.set("gen_ai.conversation.id", info_.run_id);
        run_.set("gen_ai.request.model", info_.model);
        run_.set("tachyon.run.id", info_.run_id);
        run_open_ = true;
    } else if (std::get_if<journal::run_resume_event>(&b)) {
        // A resumed run is a new part of its trace in this process: from here on.
        run_.start_unix_nano = at(e.t_ms);
        run_.set("gen_ai.operation.name", std::string("invoke_agent"));
        run_.set("gen_ai.provider.name", info_.provider);
        run_.set("gen_ai.agent.name", info_.agent);
        run_.set("gen_ai.conversation.id", info_.run_id);
        run_.set("gen_ai.request.model", info_.model);
        run_.set("tachyon.run.id", info_.run_id);
        run_.set("tachyon.run.resumed", true);
        run_open_ = true;
    } else if (const auto* ts = std::get_if<journal::turn_start_event>(&b)) {
        open_turn(ts->step, e.t_ms);
    } else if (const auto* mt = std::get_if<journal::model_turn_event>(&b)) {
        if (!turn_ || turn_step_ != mt->step) {
            open_turn(mt->step, mt->prefill_start_ms);  // an older writer without turn_start
        }
        span& s = *turn_;
        s.start_unix_nano = at(mt->prefill_start_ms);
        s.end_unix_nano = at(mt->decode_end_ms);
        // Input tokens: the turn's whole prompt, of which the prefix cache
        // (kept KV) served reused_tokens.
        s.set("gen_ai.usage.input_tokens", mt->prefill_tokens + mt->reused_tokens);
        s.set("gen_ai.usage.output_tokens", mt->generated_tokens);
        s.set("gen_ai.usage.cache_read.input_tokens", mt->reused_tokens);
        s.set("tachyon.prefix_cache.reused_tokens", mt->reused_tokens);
        s.set("gen_ai.response.time_to_first_chunk", (mt->prefill_end_ms - mt->prefill_start_ms) / 1000.0);
        turn_generated_ = true;
        ++n_turns_;
        input_tokens_ += mt->prefill_tokens + mt->reused_tokens;
        output_tokens_ += mt->generated_tokens;
        cached_tokens_ += mt->reused_tokens;
    } else if (const auto* st = std::get_if<journal::tool_start_event>(&b)) {
        if (st->call_id.rfind("verify_", 0) != 0) steps_with_calls_.insert(st->step);
        if (!tool_starts_.count(st->call_id)) tool_starts_.emplace(st->call_id, tracer::child_of(run_.context));
    } else if (const auto* rj = std::get_if<journal::call_rejected_event>(&b)) {
        steps_with_calls_.insert(rj->step);
    } else if (const auto* tc = std::get_if<journal::tool_call_event>(&b)) {
        const bool verify = tc->call_id.rfind("verify_", 0) == 0;
        if (!verify) steps_with_calls_.insert(tc->step);
        auto it = tool_starts_.find(tc->call_id);
        const span_start where = it != tool_starts_.end() ? it->second : tracer::child_of(run_.context);
        if (it != tool_starts_.end()) tool_starts_.erase(it);
        span s;
        s.context = where.context;
        s.parent = where.parent;
        s.name = "execute_tool " + tc->name;
        s.kind = span_kind::internal;
        s.start_unix_nano = at(tc->start_ms);
        s.end_unix_nano = at(tc->end_ms);
        s.set("gen_ai.operation.name", std::string("execute_tool"));
        s.set("gen_ai.tool.name", tc->name);
        s.set("gen_ai.tool.call.id", tc->call_id);
        s.set("gen_ai.tool.type", std::string("function"));  // the runtime runs it (the model only wrote the call)
        s.set("tachyon.step", tc->step);
        s.set("tachyon.tool.dispatched_while_decoding", tc->early);
        s.set("tachyon.tool.speculative_hit", tc->speculative);
        if (verify) s.set("tachyon.tool.verify", true);
        if (tracer_->capture_content()) {
            s.set("gen_ai.tool.call.arguments", tc->arguments_json);
            s.set("gen_ai.tool.call.result", tc->ok ? tc->result : tc->error);
        }
        if (!tc->ok) {
            s.status = status_code::error;
            // The message may quote the arguments: only with content capture.
            s.status_message = tracer_->capture_content() ? tc->error : "the tool call failed";
            s.set("error.type", std::string(tc->error.find("timed out") != std::string::npos ? "timeout" : "tool_error"));
        }
        ++n_calls_;
        tracer_->end(std::move(s));
    } else if (const auto* f = std::get_if<journal::final_event>(&b)) {
        run_.set("tachyon.run.verified", f->verified);
        run_.set("tachyon.run.steps", f->steps);
    } else if (const auto* end = std::get_if<journal::run_end_event>(&b)) {
        if (run_open_) end_run(std::string(journal::to_string(end->state)), end->error, e.t_ms);
    }
}

span chat_completion_span(const tracer& t, const span_start& where, const chat_span_info& info) {
    span s;
    s.context = where.context;
    s.parent = where.parent;
    s.name = "chat " + info.model;
    s.kind = info.remote ? span_kind::client : span_kind::internal;
    s.start_unix_nano = t.unix_nanos(info.start);
    s.end_unix_nano = t.unix_nanos(info.end);
    s.set("gen_ai.operation.name", std::string("chat"));
    s.set("gen_ai.provider.name", info.provider);
    s.set("gen_ai.request.model", info.model);
    set_sampling(s, info.temperature, info.top_p, info.max_tokens, info.seed);
    if (!info.response_id.empty()) s.set("gen_ai.response.id", info.response_id);
    if (info.first_token)
        s.set("gen_ai.response.time_to_first_chunk", std::chrono::duration<double>(*info.first_token - info.start).count());
    if (!info.finish_reason.empty()) {
        s.set("gen_ai.usage.input_tokens", info.input_tokens);
        s.set("gen_ai.usage.output_tokens", info.output_tokens);
        s.set("gen_ai.usage.cache_read.input_tokens", info.cached_tokens);
        s.set("tachyon.prefix_cache.reused_tokens", info.cached_tokens);
        s.set("gen_ai.response.finish_reasons", std::vector<std::string>{info.finish_reason});
    } else {
        s.status = status_code::error;
        s.status_message = info.error;
        s.set("error.type", std::string("generation_failed"));
    }
    return s;
}

}  // namespace tachyon::telemetry
