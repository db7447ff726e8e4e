#include "runtime/telemetry/otel_config.h"

#include <cctype>
#include <charconv>
#include <cstdlib>

namespace tachyon::telemetry {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

result<std::string> percent_decode(std::string_view s, std::string_view what) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        int v = 0;
        const char* first = s.data() + i + 1;
        if (i + 3 > s.size() || std::from_chars(first, first + 2, v, 16).ptr != first + 2)
            return make_error(errc::invalid_argument, std::string(what) + ": '" + std::string(s) + "': a '%' must be followed by two hex digits");
        out += static_cast<char>(v);
        i += 2;
    }
    return out;
}

// "k1=v1,k2=v2" (W3C baggage-like, as the OpenTelemetry variables write lists).
result<std::map<std::string, std::string>> key_values(std::string_view text, std::string_view what) {
    std::map<std::string, std::string> out;
    while (!text.empty()) {
        const size_t comma = text.find(',');
        std::string_view item = trim(text.substr(0, comma));
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos || trim(item.substr(0, eq)).empty())
            return make_error(errc::invalid_argument, std::string(what) + ": '" + std::string(item) + "': expected key=value");
        auto key = percent_decode(trim(item.substr(0, eq)), what);
        if (!key) return key.err();
        auto value = percent_decode(trim(item.substr(eq + 1)), what);
        if (!value) return value.err();
        out[*key] = *value;
    }
    return out;
}

}  // namespace

result<otel_config> config_from_env(std::string_view endpoint_flag, const env_reader& reader) {
    const auto get = [&](const char* name) -> std::string_view {
        const char* v = reader ? reader(name) : std::getenv(name);
        return v == nullptr ? std::string_view() : trim(v);
    };
    otel_config c;
    if (get("OTEL_SDK_DISABLED") == "true") return c;
    std::string base(endpoint_flag.empty() ? get("OTEL_EXPORTER_OTLP_ENDPOINT") : endpoint_flag);
    const std::string_view what = endpoint_flag.empty() ? "OTEL_EXPORTER_OTLP_ENDPOINT" : "--otlp-endpoint";
    const std::string_view traces = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    if (!endpoint_flag.empty() || traces.empty()) {
        if (!base.empty()) {
            while (!base.empty() && base.back() == '/') base.pop_back();
            c.traces_url = base + "/v1/traces";
        }
    } else {
        c.traces_url = std::string(traces);
    }
    if (!c.traces_url.empty() && c.traces_url.rfind("http://", 0) != 0)
        return make_error(errc::invalid_argument, std::string(endpoint_flag.empty() && !traces.empty() ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : what) +
                                                      " '" + c.traces_url + "': expected an http:// URL (https: put a local TLS proxy in front of the collector)");
    for (const char* name : {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"}) {
        const std::string_view p = get(name);
        if (p.empty()) continue;
        if (p != "http/json")
            return make_error(errc::unsupported, std::string(name) + " '" + std::string(p) + "': tachyon exports http/json only (expected http/json or unset)");
        break;
    }
    for (const char* name : {"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"}) {
        auto h = key_values(get(name), name);
        if (!h) return h.err();
        for (auto& [k, v] : *h) c.headers[k] = v;
    }
    for (const char* name : {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"}) {
        const std::string_view t = get(name);
        if (t.empty()) continue;
        int64_t ms = 0;
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), ms);
        if (ec != std::errc() || p != t.data() + t.size() || ms <= 0)
            return make_error(errc::invalid_argument, std::string(name) + " '" + std::string(t) + "': expected a positive number of milliseconds");
        c.timeout = std::chrono::milliseconds(ms);
        break;
    }
    auto attrs = key_values(get("OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES");
    if (!attrs) return attrs.err();
    for (auto& [k, v] : *attrs) {
        if (k == "service.name") c.service_name = v;
        else c.resource_attributes.push_back({k, v});
    }
    if (const auto name = get("OTEL_SERVICE_NAME"); !name.empty()) c.service_name = std::string(name);
    auto s = sampler::parse(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG"));
    if (!s) return s.err();
    c.sampler = *s;
    const std::string_view capture = get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT");
    if (!capture.empty() && capture != "true" && capture != "false")
        return make_error(errc::invalid_argument, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT '" + std::string(capture) +
                                                      "': expected true or false");
    c.capture_content = capture == "true";
    return c;
}

}  // namespace tachyon::telemetry
