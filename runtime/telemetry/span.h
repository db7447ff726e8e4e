// A finished span as OTLP describes it (opentelemetry/proto/trace/v1):
// ids, parent, name, kind, start and end in unix nanoseconds, attributes
// and a status, and its encoding as OTLP/HTTP JSON (the protobuf JSON
// mapping with the OTLP exceptions: ids as lower-case hex strings, 64-bit
// integers as decimal strings, enums as integers, lowerCamelCase names).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/telemetry/trace_context.h"

namespace tachyon::telemetry {

// opentelemetry.proto.trace.v1.Span.SpanKind
enum class span_kind { internal = 1, server = 2, client = 3 };
// opentelemetry.proto.trace.v1.Status.StatusCode
enum class status_code { unset = 0, ok = 1, error = 2 };

// An attribute value: string, bool, int, double, or an array of strings
// (gen_ai.response.finish_reasons).
using attribute_value = std::variant<std::string, bool, int64_t, double, std::vector<std::string>>;

struct attribute {
    std::string key;
    attribute_value value;
};

struct span {
    span_context context;          // trace id, span id, sampled
    span_id parent{};              // all zero: a root span of this process
    std::string name;
    span_kind kind = span_kind::internal;
    uint64_t start_unix_nano = 0;
    uint64_t end_unix_nano = 0;
    std::vector<attribute> attributes;
    status_code status = status_code::unset;
    std::string status_message;    // with status error

    void set(std::string key, attribute_value value) { attributes.push_back({std::move(key), std::move(value)}); }
    // The value of `key`, or null (tests and the span tree of the docs).
    const attribute_value* find(std::string_view key) const;
};

// What describes the process that made the spans (resource attributes:
// service.name, ...) and the instrumentation scope.
struct resource_info {
    std::vector<attribute> attributes;
    std::string scope_name = "tachyon";
    std::string scope_version;
};

// One ExportTraceServiceRequest body: {"resourceSpans": [{"resource": ...,
// "scopeSpans": [{"scope": ..., "spans": [...]}]}]}.
std::string otlp_json(const resource_info& resource, const std::vector<span>& spans);

}  // namespace tachyon::telemetry
