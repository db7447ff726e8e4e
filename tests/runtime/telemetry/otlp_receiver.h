// Test support: an OTLP/HTTP collector on loopback. It accepts
// POST /v1/traces, keeps every request (headers and body), and answers with
// the statuses a test scripts (200 once the script is spent), or not at all
// (a collector that hangs). The received bodies are parsed back into spans
// with simdjson, so tests check what went over the wire.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace otlp_test {

struct received_request {
    std::string target;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
};

struct scripted_answer {
    unsigned status = 200;
    std::string retry_after;  // empty: no Retry-After header
};

// Compiled once (otlp_receiver.cpp): the Beast server it runs costs a test
// file about 12 s to compile.
class receiver {
public:
    receiver();
    ~receiver();
    receiver(const receiver&) = delete;
    receiver& operator=(const receiver&) = delete;

    unsigned short port() const;
    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port()); }
    std::string traces_url() const { return base_url() + "/v1/traces"; }

    // The next answers, in order; then 200.
    void script(std::vector<scripted_answer> answers);
    // Read requests but never answer them.
    void hang(bool on);
    std::vector<received_request> requests() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

// A span read back from an OTLP/JSON body. Attribute values keep their
// OTLP kind ("stringValue", "intValue", "doubleValue", "boolValue",
// "arrayValue") and their text (an intValue's decimal string, an array's
// strings joined with ',').
struct value {
    std::string kind;
    std::string text;
};

struct parsed_span {
    std::string trace_id, span_id, parent_span_id, name;
    int64_t kind = 0;
    std::string start, end;  // as sent: decimal strings
    int64_t status_code = 0;
    std::string status_message;
    std::map<std::string, value> attributes;
    std::map<std::string, std::string> field_kinds;  // each field of the span object: its JSON type

    bool has(const std::string& key) const { return attributes.count(key) > 0; }
    std::string str(const std::string& key) const { return has(key) ? attributes.at(key).text : std::string("<missing>"); }
    uint64_t start_ns() const { return std::stoull(start); }
    uint64_t end_ns() const { return std::stoull(end); }
};

struct parsed_export {
    std::map<std::string, value> resource;
    std::string scope_name;
    std::vector<parsed_span> spans;
};

inline std::string type_name(simdjson::dom::element_type t) {
    switch (t) {
        case simdjson::dom::element_type::ARRAY: return "array";
        case simdjson::dom::element_type::OBJECT: return "object";
        case simdjson::dom::element_type::STRING: return "string";
        case simdjson::dom::element_type::INT64:
        case simdjson::dom::element_type::UINT64:
        case simdjson::dom::element_type::DOUBLE: return "number";
        case simdjson::dom::element_type::BOOL: return "bool";
        default: return "null";
    }
}

inline value read_value(simdjson::dom::object v) {
    value out;
    for (auto field : v) {
        out.kind = std::string(field.key);
        auto e = field.value;
        if (out.kind == "stringValue") out.text = std::string(e.get_string().value());
        else if (out.kind == "intValue") out.text = e.is_string() ? std::string(e.get_string().value()) : "<number:" + simdjson::to_string(e) + ">";
        else if (out.kind == "boolValue") out.text = e.get_bool().value() ? "true" : "false";
        else if (out.kind == "doubleValue") out.text = simdjson::to_string(e);
        else if (out.kind == "arrayValue") {
            for (auto item : e["values"].get_array()) {
                if (!out.text.empty()) out.text += ",";
                out.text += std::string(item["stringValue"].get_string().value());
            }
        }
    }
    return out;
}

inline std::map<std::string, value> read_attributes(simdjson::dom::array a) {
    std::map<std::string, value> out;
    for (auto kv : a) out[std::string(kv["key"].get_string().value())] = read_value(kv["value"].get_object().value());
    return out;
}

// Every span of every body, in the order they arrived. Throws (simdjson)
// on a body that is not the expected shape, which fails the test.
inline std::vector<parsed_export> parse_exports(const std::vector<received_request>& requests) {
    std::vector<parsed_export> out;
    simdjson::dom::parser parser;
    for (const auto& r : requests) {
        simdjson::dom::element doc = parser.parse(simdjson::padded_string(r.body)).value();
        for (auto rs : doc["resourceSpans"].get_array()) {
            parsed_export ex;
            ex.resource = read_attributes(rs["resource"]["attributes"].get_array().value());
            for (auto ss : rs["scopeSpans"].get_array()) {
                ex.scope_name = std::string(ss["scope"]["name"].get_string().value());
                for (auto sp : ss["spans"].get_array()) {
                    parsed_span s;
                    for (auto field : sp.get_object()) s.field_kinds[std::string(field.key)] = type_name(field.value.type());
                    s.trace_id = std::string(sp["traceId"].get_string().value());
                    s.span_id = std::string(sp["spanId"].get_string().value());
                    if (sp["parentSpanId"].error() == simdjson::SUCCESS) s.parent_span_id = std::string(sp["parentSpanId"].get_string().value());
                    s.name = std::string(sp["name"].get_string().value());
                    s.kind = sp["kind"].get_int64().value();
                    s.start = std::string(sp["startTimeUnixNano"].get_string().value());
                    s.end = std::string(sp["endTimeUnixNano"].get_string().value());
                    s.attributes = read_attributes(sp["attributes"].get_array().value());
                    auto st = sp["status"].get_object().value();
                    if (st["code"].error() == simdjson::SUCCESS) s.status_code = st["code"].get_int64().value();
                    if (st["message"].error() == simdjson::SUCCESS) s.status_message = std::string(st["message"].get_string().value());
                    ex.spans.push_back(std::move(s));
                }
            }
            out.push_back(std::move(ex));
        }
    }
    return out;
}

inline std::vector<parsed_span> all_spans(const std::vector<received_request>& requests) {
    std::vector<parsed_span> out;
    for (auto& ex : parse_exports(requests))
        for (auto& s : ex.spans) out.push_back(std::move(s));
    return out;
}

}  // namespace otlp_test
