#include "runtime/telemetry/tracer.h"

#include "base/log.h"

namespace tachyon::telemetry {

tracer::tracer(otel_config config, std::unique_ptr<otlp_exporter> exporter)
    : config_(std::move(config)), exporter_(std::move(exporter)) {
    const auto wall = std::chrono::system_clock::now().time_since_epoch();
    const auto steady = std::chrono::steady_clock::now().time_since_epoch();
    steady_to_unix_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count() -
                         std::chrono::duration_cast<std::chrono::nanoseconds>(steady).count();
}

result<std::shared_ptr<tracer>> tracer::create(const otel_config& config, exporter_options tuning) {
    if (!config.enabled()) return std::shared_ptr<tracer>();
    tuning.traces_url = config.traces_url;
    tuning.headers = config.headers;
    tuning.timeout = config.timeout;
    resource_info resource;
    resource.attributes.push_back({"service.name", config.service_name});
    resource.attributes.push_back({"telemetry.sdk.name", std::string("tachyon")});
    resource.attributes.push_back({"telemetry.sdk.language", std::string("cpp")});
    for (const auto& a : config.resource_attributes) resource.attributes.push_back(a);
    auto exporter = otlp_exporter::create(std::move(tuning), std::move(resource));
    if (!exporter) return exporter.err();
    return std::shared_ptr<tracer>(new tracer(config, std::move(exporter).value()));
}

span_start tracer::start_root(std::string_view traceparent) const {
    std::optional<span_context> parent;
    if (!traceparent.empty()) {
        auto p = parse_traceparent(traceparent);
        if (p) parent = *p;
        else TACHYON_LOG(debug, __func__ << ": " << p.err().message << "; a new trace starts");
    }
    span_start s;
    s.context.trace = parent ? parent->trace : new_trace_id();
    s.context.span = new_span_id();
    if (parent) s.parent = parent->span;
    s.context.sampled = config_.sampler.should_sample(s.context.trace, parent);
    return s;
}

span_start tracer::child_of(const span_context& parent) {
    span_start s;
    s.context.trace = parent.trace;
    s.context.span = new_span_id();
    s.context.sampled = parent.sampled;
    s.parent = parent.span;
    return s;
}

void tracer::end(span s) {
    if (!s.context.sampled) return;
    exporter_->submit(std::move(s));
}

uint64_t tracer::unix_nanos(std::chrono::steady_clock::time_point t) const {
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count() + steady_to_unix_ns_;
    return ns < 0 ? 0 : static_cast<uint64_t>(ns);
}

result<std::shared_ptr<tracer>> tracer_from_env(std::string_view endpoint_flag) {
    auto config = config_from_env(endpoint_flag);
    if (!config) return config.err();
    auto t = tracer::create(*config);
    if (t && *t)
        TACHYON_LOG(info, "tracing: OTLP/HTTP JSON to " << config->traces_url << ", sampler " << config->sampler.describe()
                                                        << ", service.name " << config->service_name);
    return t;
}

}  // namespace tachyon::telemetry
