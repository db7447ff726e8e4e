// The run's spans: its events as they are recorded, handed to the run's
// trace (runtime/telemetry/run_trace.h), which is made at the first event,
// once the run's id and clock origin are known.
#include "runtime/agent/agent_runner.h"

#include <cmath>
#include <filesystem>

namespace tachyon::agent_detail {

void runner::trace_event(const journal::event& e) {
    if (!trace_) {
        telemetry::run_trace_info info;
        info.agent = agent_ ? agent_->name : req_.agent->name;
        info.run_id = out_.run_id;
        info.traceparent = req_.traceparent;
        info.t0 = t0_;
        const agent_definition& a = *req_.agent;
        // Settings are floats: written with the digits the agent file gave (0.95, not 0.949999988).
        const auto as_written = [](float v) { return std::round(static_cast<double>(v) * 1e6) / 1e6; };
        info.temperature = as_written(a.sampling.temperature);
        info.top_p = as_written(a.sampling.top_p);
        info.seed = a.sampling.seed;
        info.max_tokens = a.budgets.max_tokens;
        if (env_.remote) {
            // An OpenAI-compatible server: its model name, and who serves it.
            info.model = env_.remote->name;
            info.provider = env_.remote->provider;
            info.remote = true;
            if (auto where = remote::parse_endpoint(env_.remote->url)) {
                info.server_address = where->host;
                info.server_port = where->port;
            }
        } else {
            info.model = std::filesystem::path(a.model).stem().string();  // the file's name, as serve lists it
        }
        trace_ = std::make_unique<telemetry::run_trace>(env_.tracer, std::move(info));
    }
    trace_->on_event(e);
}

}  // namespace tachyon::agent_detail
