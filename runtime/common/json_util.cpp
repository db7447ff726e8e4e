#include "runtime/common/json_util.h"

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace tachyon::json {
namespace {

void write_spaced(std::string& out, simdjson::dom::element e) {
    using simdjson::dom::element_type;
    switch (e.type()) {
        case element_type::OBJECT: {
            out += '{';
            bool first = true;
            for (auto field : e.get_object()) {
                if (!first) out += ", ";
                first = false;
                append_quoted(out, field.key);
                out += ": ";
                write_spaced(out, field.value);
            }
            out += '}';
            return;
        }
        case element_type::ARRAY: {
            out += '[';
            bool first = true;
            for (auto v : e.get_array()) {
                if (!first) out += ", ";
                first = false;
                write_spaced(out, v);
            }
            out += ']';
            return;
        }
        case element_type::STRING: append_quoted(out, e.get_string().value()); return;
        default: out += simdjson::minify(e); return;
    }
}

}  // namespace

void append_ms(std::string& out, double value) {
    if (!std::isfinite(value)) value = 0;
    char buf[64];
    const int n = std::snprintf(buf, sizeof buf, "%.3f", value);
    if (n > 0 && static_cast<size_t>(n) < sizeof buf) {
        out.append(buf, static_cast<size_t>(n));
    } else {
        out.append("0");  // beyond 1e50 ms: not a duration
    }
}


result<std::string> minify(std::string_view text, std::string_view what) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto err = parser.parse(simdjson::padded_string(text)).get(doc)) {
        return make_error(errc::parse_error, std::string(what) + ": not valid JSON: " + simdjson::error_message(err));
    }
    return simdjson::minify(doc);
}

result<std::string> spaced(std::string_view text, std::string_view what) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto err = parser.parse(simdjson::padded_string(text)).get(doc)) {
        return make_error(errc::parse_error, std::string(what) + ": not valid JSON: " + simdjson::error_message(err));
    }
    std::string out;
    write_spaced(out, doc);
    return out;
}

std::string kind_name(simdjson::dom::element_type t) {
    using simdjson::dom::element_type;
    switch (t) {
        case element_type::ARRAY: return "an array";
        case element_type::OBJECT: return "an object";
        case element_type::INT64:
        case element_type::UINT64: return "an integer";
        case element_type::DOUBLE: return "a number";
        case element_type::STRING: return "a string";
        case element_type::BOOL: return "a boolean";
        case element_type::NULL_VALUE: return "null";
    }
    return "a value";
}

}  // namespace tachyon::json
