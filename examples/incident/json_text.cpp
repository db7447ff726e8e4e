#include "examples/incident/json_text.h"

#include <cstdio>

namespace incident {

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

std::string json_string(std::string_view s) {
    std::string out;
    append_json_string(out, s);
    return out;
}

json_object& json_object::raw(std::string_view key, std::string value_json) {
    members_.emplace_back(std::string(key), std::move(value_json));
    return *this;
}
json_object& json_object::str(std::string_view key, std::string_view value) { return raw(key, json_string(value)); }
json_object& json_object::num(std::string_view key, long long value) { return raw(key, std::to_string(value)); }
json_object& json_object::str_array(std::string_view key, const std::vector<std::string>& values) {
    std::string a = "[";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) a += ", ";
        append_json_string(a, values[i]);
    }
    a += "]";
    return raw(key, std::move(a));
}

std::string json_object::text(bool spaced) const {
    std::string out = "{";
    for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += spaced ? ", " : ",";
        append_json_string(out, members_[i].first);
        out += spaced ? ": " : ":";
        out += members_[i].second;
    }
    out += "}";
    return out;
}

}  // namespace incident
