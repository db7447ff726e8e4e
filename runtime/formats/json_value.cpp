#include "runtime/formats/json_value.h"

#include <charconv>
#include <cmath>

#include <simdjson.h>

namespace tachyon::formats {

struct json_builder {
    static json_value from(simdjson::dom::element e) {
        json_value v;
        switch (e.type()) {
            case simdjson::dom::element_type::NULL_VALUE: v.kind_ = json_value::kind::null; break;
            case simdjson::dom::element_type::BOOL:
                v.kind_ = json_value::kind::boolean;
                v.boolean_ = e.get_bool().value();
                break;
            case simdjson::dom::element_type::INT64:
                v.kind_ = json_value::kind::integer;
                v.integer_ = e.get_int64().value();
                break;
            case simdjson::dom::element_type::UINT64:
                // Past int64: Python still prints it exactly; a double is the closest we keep.
                v.kind_ = json_value::kind::number;
                v.number_ = static_cast<double>(e.get_uint64().value());
                break;
            case simdjson::dom::element_type::DOUBLE:
                v.kind_ = json_value::kind::number;
                v.number_ = e.get_double().value();
                break;
            case simdjson::dom::element_type::STRING:
                v.kind_ = json_value::kind::string;
                v.string_ = std::string(e.get_string().value());
                break;
            // The array and object are copied out of their simdjson_result
            // first: value() of the temporary result is a reference into it,
            // which a range-for over it would read after it is gone.
            case simdjson::dom::element_type::ARRAY: {
                v.kind_ = json_value::kind::array;
                const simdjson::dom::array items = e.get_array().value();
                for (auto item : items) v.items_.push_back(from(item));
                break;
            }
            case simdjson::dom::element_type::OBJECT: {
                v.kind_ = json_value::kind::object;
                const simdjson::dom::object fields = e.get_object().value();
                for (auto field : fields) v.members_.emplace_back(std::string(field.key), from(field.value));
                break;
            }
        }
        return v;
    }
};

json_value json_value::of_string(std::string s) {
    json_value v;
    v.kind_ = kind::string;
    v.string_ = std::move(s);
    return v;
}

result<json_value> json_value::parse(std::string_view text, std::string_view what) {
    simdjson::dom::parser parser;
    simdjson::padded_string padded(text);
    simdjson::dom::element root;
    if (auto err = parser.parse(padded).get(root)) {
        return make_error(errc::invalid_argument,
                          std::string(what) + ": expected a JSON value (" + simdjson::error_message(err) + ")");
    }
    return json_builder::from(root);
}

const json_value* json_value::find(std::string_view key) const {
    for (const auto& [k, v] : members_)
        if (k == key) return &v;
    return nullptr;
}

void append_python_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    constexpr char hex[] = "0123456789abcdef";
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 15];
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

namespace {

// Python's repr of a float: the shortest text that reads back, with ".0"
// on integral values ("5.0", "1e+16", "inf" is not JSON and cannot occur).
void append_python_float(std::string& out, double d) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
    std::string s(buf, end);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    out += s;
}

void newline(std::string& out, int indent, int level) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
}

}  // namespace

void json_value::dump_to(std::string& out, int indent, int level) const {
    switch (kind_) {
        case kind::null: out += "null"; return;
        case kind::boolean: out += boolean_ ? "true" : "false"; return;
        case kind::integer: out += std::to_string(integer_); return;
        case kind::number: append_python_float(out, number_); return;
        case kind::string: append_python_json_string(out, string_); return;
        case kind::array:
            if (items_.empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < items_.size(); ++i) {
                if (i > 0) out += indent < 0 ? ", " : ",";
                if (indent >= 0) newline(out, indent, level + 1);
                items_[i].dump_to(out, indent, level + 1);
            }
            if (indent >= 0) newline(out, indent, level);
            out += ']';
            return;
        case kind::object:
            if (members_.empty()) {
                out += "{}";
                return;
            }
            out += '{';
            for (size_t i = 0; i < members_.size(); ++i) {
                if (i > 0) out += indent < 0 ? ", " : ",";
                if (indent >= 0) newline(out, indent, level + 1);
                append_python_json_string(out, members_[i].first);
                out += ": ";
                members_[i].second.dump_to(out, indent, level + 1);
            }
            if (indent >= 0) newline(out, indent, level);
            out += '}';
            return;
    }
}

std::string json_value::dumps(int indent) const {
    std::string out;
    dump_to(out, indent, 0);
    return out;
}

namespace {

// Python's repr of a str: single quotes unless the text holds a single
// quote and no double quote.
void append_python_str(std::string& out, std::string_view s) {
    const bool dq = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
    const char q = dq ? '"' : '\'';
    out += q;
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (ch == q || ch == '\\') {
            out += '\\';
            out += ch;
        } else if (ch == '\n') {
            out += "\\n";
        } else if (ch == '\r') {
            out += "\\r";
        } else if (ch == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += ch;
        }
    }
    out += q;
}

}  // namespace

void json_value::repr_to(std::string& out) const {
    switch (kind_) {
        case kind::null: out += "None"; return;
        case kind::boolean: out += boolean_ ? "True" : "False"; return;
        case kind::integer: out += std::to_string(integer_); return;
        case kind::number: append_python_float(out, number_); return;
        case kind::string: append_python_str(out, string_); return;
        case kind::array:
            out += '[';
            for (size_t i = 0; i < items_.size(); ++i) {
                if (i > 0) out += ", ";
                items_[i].repr_to(out);
            }
            out += ']';
            return;
        case kind::object:
            out += '{';
            for (size_t i = 0; i < members_.size(); ++i) {
                if (i > 0) out += ", ";
                append_python_str(out, members_[i].first);
                out += ": ";
                members_[i].second.repr_to(out);
            }
            out += '}';
            return;
    }
}

std::string json_value::python_repr() const {
    std::string out;
    repr_to(out);
    return out;
}

}  // namespace tachyon::formats
