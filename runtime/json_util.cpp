#include "runtime/json_util.h"

#include <simdjson.h>

#include <cstdio>

namespace tachyon::json {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if invalid.
size_t utf8_length(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
    return n;
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

void append_quoted(std::string& out, std::string_view s) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"') { out += "\\\""; ++i; continue; }
        if (c == '\\') { out += "\\\\"; ++i; continue; }
        if (c == '\n') { out += "\\n"; ++i; continue; }
        if (c == '\t') { out += "\\t"; ++i; continue; }
        if (c == '\r') { out += "\\r"; ++i; continue; }
        if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
            ++i;
            continue;
        }
        size_t n = utf8_length(s, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD for a byte that starts no valid sequence
            ++i;
            continue;
        }
        out.append(s.substr(i, n));
        i += n;
    }
    out += '"';
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

}  // namespace tachyon::json
