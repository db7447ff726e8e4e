#include "runtime/common/json_util.h"

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace tachyon::json {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// Length of the valid UTF-8 sequence starting at text[i], or 0 when the bytes
// there are not one (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
size_t utf8_sequence_length(std::string_view text, size_t i) {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    const uint8_t b0 = byte(i);
    if (b0 < 0x80) return 1;
    size_t n = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        if (b0 == 0xE0) lo = 0xA0;  // overlong
        if (b0 == 0xED) hi = 0x9F;  // surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        if (b0 == 0xF0) lo = 0x90;  // overlong
        if (b0 == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
        return 0;
    }
    if (i + n > text.size()) return 0;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (size_t k = 2; k < n; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    return n;
}


// Appends the character at text[i] (U+FFFD when its bytes are not valid
// UTF-8); returns the index after it.
size_t append_utf8_char(std::string& out, std::string_view text, size_t i) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
        out.append(replacement);
        return i + 1;
    }
    out.append(text.substr(i, n));
    return i + n;
}

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

void append_quoted(std::string& out, std::string_view text) {
    out.reserve(out.size() + text.size() + 2);
    out.push_back('"');
    size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x80) {
            i = append_utf8_char(out, text, i);
            continue;
        }
        switch (c) {
            case '"': out.append("\\\""); break;
            case '\\': out.append("\\\\"); break;
            case '\n': out.append("\\n"); break;
            case '\r': out.append("\\r"); break;
            case '\t': out.append("\\t"); break;
            case '\b': out.append("\\b"); break;
            case '\f': out.append("\\f"); break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out.append(buf);
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
        ++i;
    }
    out.push_back('"');
}

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

std::string sanitize_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) i = append_utf8_char(out, text, i);
    return out;
}

std::string quote(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    append_quoted(out, s);
    return out;
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
