// Tracing settings from the standard OpenTelemetry variables, the same
// ones every OpenTelemetry SDK reads, and the CLI's --otlp-endpoint:
//   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  the traces URL, used as given
//   OTEL_EXPORTER_OTLP_ENDPOINT         the base URL; /v1/traces is appended
//   OTEL_EXPORTER_OTLP_HEADERS          k1=v1,k2=v2 (values percent-decoded)
//   OTEL_EXPORTER_OTLP_TRACES_HEADERS   the same, for traces only (wins)
//   OTEL_EXPORTER_OTLP_TIMEOUT          milliseconds per export (default 10000)
//   OTEL_EXPORTER_OTLP_PROTOCOL         http/json only (the others are refused)
//   OTEL_SERVICE_NAME                   service.name (default "tachyon")
//   OTEL_RESOURCE_ATTRIBUTES            k1=v1,k2=v2, more resource attributes
//   OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG   (sampler.h)
//   OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
//                                       tool arguments and results on spans
//   OTEL_SDK_DISABLED=true              off, whatever else is set
// Tracing is off unless an endpoint is configured.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runtime/telemetry/sampler.h"
#include "runtime/telemetry/span.h"

namespace tachyon::telemetry {

struct otel_config {
    std::string traces_url;  // empty: tracing off
    std::map<std::string, std::string> headers;
    std::chrono::milliseconds timeout{10000};
    std::string service_name = "tachyon";
    std::vector<attribute> resource_attributes;  // besides service.name
    class sampler sampler;
    bool capture_content = false;

    bool enabled() const { return !traces_url.empty(); }
};

// Reads a variable; null when unset. std::getenv by default.
using env_reader = std::function<const char*(const char* name)>;

// The settings from the variables. `endpoint_flag` (--otlp-endpoint, a base
// URL as OTEL_EXPORTER_OTLP_ENDPOINT) wins over both endpoint variables.
// Errors name the variable or flag and what was expected.
result<otel_config> config_from_env(std::string_view endpoint_flag = {}, const env_reader& getenv = {});

}  // namespace tachyon::telemetry
