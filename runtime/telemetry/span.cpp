#include "runtime/telemetry/span.h"

#include <cmath>
#include <cstdio>

#include "runtime/common/json_util.h"

namespace tachyon::telemetry {
namespace {

void append_value(std::string& out, const attribute_value& v) {
    if (const auto* s = std::get_if<std::string>(&v)) {
        out += "{\"stringValue\":";
        json::append_quoted(out, *s);
        out += "}";
    } else if (const auto* b = std::get_if<bool>(&v)) {
        out += *b ? "{\"boolValue\":true}" : "{\"boolValue\":false}";
    } else if (const auto* i = std::get_if<int64_t>(&v)) {
        // int64 travels as a decimal string in the protobuf JSON mapping.
        out += "{\"intValue\":\"" + std::to_string(*i) + "\"}";
    } else if (const auto* d = std::get_if<double>(&v)) {
        if (!std::isfinite(*d)) {
            out += "{\"doubleValue\":0}";
            return;
        }
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        out += "{\"doubleValue\":";
        out += buf;
        out += "}";
    } else {
        out += "{\"arrayValue\":{\"values\":[";
        const auto& a = std::get<std::vector<std::string>>(v);
        for (size_t k = 0; k < a.size(); ++k) {
            if (k > 0) out += ",";
            out += "{\"stringValue\":";
            json::append_quoted(out, a[k]);
            out += "}";
        }
        out += "]}}";
    }
}

void append_attributes(std::string& out, const std::vector<attribute>& attributes) {
    out += "[";
    for (size_t k = 0; k < attributes.size(); ++k) {
        if (k > 0) out += ",";
        out += "{\"key\":";
        json::append_quoted(out, attributes[k].key);
        out += ",\"value\":";
        append_value(out, attributes[k].value);
        out += "}";
    }
    out += "]";
}

bool is_zero(const span_id& id) {
    for (uint8_t b : id)
        if (b != 0) return false;
    return true;
}

}  // namespace

const attribute_value* span::find(std::string_view key) const {
    for (const auto& a : attributes)
        if (a.key == key) return &a.value;
    return nullptr;
}

std::string otlp_json(const resource_info& resource, const std::vector<span>& spans) {
    std::string out = "{\"resourceSpans\":[{\"resource\":{\"attributes\":";
    append_attributes(out, resource.attributes);
    out += "},\"scopeSpans\":[{\"scope\":{\"name\":";
    json::append_quoted(out, resource.scope_name);
    if (!resource.scope_version.empty()) {
        out += ",\"version\":";
        json::append_quoted(out, resource.scope_version);
    }
    out += "},\"spans\":[";
    for (size_t k = 0; k < spans.size(); ++k) {
        const span& s = spans[k];
        if (k > 0) out += ",";
        out += "{\"traceId\":\"" + to_hex(s.context.trace) + "\",\"spanId\":\"" + to_hex(s.context.span) + "\"";
        if (!is_zero(s.parent)) out += ",\"parentSpanId\":\"" + to_hex(s.parent) + "\"";
        // W3C flags in the low byte (sampled), as the OTLP span's "flags" field carries them.
        out += ",\"flags\":" + std::to_string(s.context.sampled ? 1 : 0);
        out += ",\"name\":";
        json::append_quoted(out, s.name);
        out += ",\"kind\":" + std::to_string(static_cast<int>(s.kind));
        out += ",\"startTimeUnixNano\":\"" + std::to_string(s.start_unix_nano) + "\"";
        out += ",\"endTimeUnixNano\":\"" + std::to_string(s.end_unix_nano) + "\"";
        out += ",\"attributes\":";
        append_attributes(out, s.attributes);
        out += ",\"status\":{";
        if (s.status != status_code::unset) {
            out += "\"code\":" + std::to_string(static_cast<int>(s.status));
            if (!s.status_message.empty()) {
                out += ",\"message\":";
                json::append_quoted(out, s.status_message);
            }
        }
        out += "}}";
    }
    out += "]}]}]}";
    return out;
}

}  // namespace tachyon::telemetry
