#include "tools/core/tool_args.h"

#include <simdjson.h>

namespace tachyon::tools {
namespace {
std::string shorten(std::string_view s) {
    return s.size() <= 60 ? std::string(s) : std::string(s.substr(0, 60)) + "...";
}
}  // namespace

std::string_view tool_args::kind_name(value::kind k) {
    switch (k) {
        case value::kind::string: return "a string";
        case value::kind::integer: return "an integer";
        case value::kind::number: return "a number";
        case value::kind::boolean: return "a boolean";
        case value::kind::array: return "an array";
        case value::kind::object: return "an object";
        case value::kind::null: break;
    }
    return "null";
}

error tool_args::fail(std::string message) const { return make_error(errc::invalid_argument, tool_ + ": " + message); }

result<tool_args> tool_args::parse(std::string_view tool, std::string_view json,
                                   const std::vector<std::string_view>& allowed) {
    tool_args out;
    out.tool_ = tool;
    std::string_view trimmed = json;
    while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\n')) trimmed.remove_prefix(1);
    if (trimmed.empty()) return out;  // no arguments at all: same as {}
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (auto err = parser.parse(json.data(), json.size()).get(root))
        return out.fail(std::string("arguments are not valid JSON (") + simdjson::error_message(err) + ")");
    simdjson::dom::object object;
    if (root.get_object().get(object)) return out.fail("arguments must be a JSON object");
    for (auto [key, element] : object) {
        bool known = false;
        for (auto a : allowed) known |= a == key;
        if (!known) {
            std::string names;
            for (auto a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
            return out.fail("unknown argument '" + shorten(key) + "'" +
                            (names.empty() ? "; this tool takes no arguments" : "; expected one of: " + names));
        }
        value v;
        switch (element.type()) {
            case simdjson::dom::element_type::STRING: v.type = value::kind::string, v.text = element.get_string().value(); break;
            case simdjson::dom::element_type::INT64: v.type = value::kind::integer, v.integer = element.get_int64().value(); break;
            case simdjson::dom::element_type::UINT64: v.type = value::kind::number; break;
            case simdjson::dom::element_type::DOUBLE: {
                double d = element.get_double().value();
                if (d == double(std::int64_t(d)) && d > -1e15 && d < 1e15) v.type = value::kind::integer, v.integer = std::int64_t(d);
                else v.type = value::kind::number;
                break;
            }
            case simdjson::dom::element_type::BOOL: v.type = value::kind::boolean, v.boolean = element.get_bool().value(); break;
            case simdjson::dom::element_type::ARRAY:
                v.type = value::kind::array;
                for (auto item : element.get_array()) {
                    std::string_view s;
                    if (item.get_string().get(s)) v.all_strings = false;
                    else v.strings.emplace_back(s);
                }
                break;
            case simdjson::dom::element_type::OBJECT: v.type = value::kind::object; break;
            case simdjson::dom::element_type::NULL_VALUE: v.type = value::kind::null; break;
        }
        if (v.type != value::kind::string) v.text = simdjson::minify(element);
        out.values_[std::string(key)] = std::move(v);
    }
    return out;
}

result<std::optional<std::string>> tool_args::string(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end() || it->second.type == value::kind::null) return std::optional<std::string>{};
    if (it->second.type != value::kind::string)
        return fail(std::string("'").append(key) + "' must be a string; got " + std::string(kind_name(it->second.type)) +
                    " " + shorten(it->second.text));
    return std::optional<std::string>{it->second.text};
}

result<std::string> tool_args::required_string(std::string_view key) const {
    auto v = string(key);
    if (!v) return v.err();
    if (!v->has_value() || (*v)->empty()) {
        std::string message = "'";  // built in steps: `"'" + std::string` trips a false -Wrestrict in g++ 12
        message += key;
        message += "' is required (a non-empty string)";
        return fail(message);
    }
    return std::move(**v);
}

result<std::optional<std::int64_t>> tool_args::integer(std::string_view key, std::int64_t min, std::int64_t max) const {
    auto it = values_.find(key);
    if (it == values_.end() || it->second.type == value::kind::null) return std::optional<std::int64_t>{};
    std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    if (it->second.type != value::kind::integer)
        return fail(std::string("'").append(key) + "' must be " + range + "; got " + std::string(kind_name(it->second.type)) +
                    " " + (it->second.type == value::kind::string ? "\"" + shorten(it->second.text) + "\"" : shorten(it->second.text)));
    if (it->second.integer < min || it->second.integer > max)
        return fail(std::string("'").append(key) + "' must be " + range + "; got " + std::to_string(it->second.integer));
    return std::optional<std::int64_t>{it->second.integer};
}

result<std::optional<bool>> tool_args::boolean(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end() || it->second.type == value::kind::null) return std::optional<bool>{};
    if (it->second.type != value::kind::boolean)
        return fail(std::string("'").append(key) + "' must be true or false; got " + std::string(kind_name(it->second.type)));
    return std::optional<bool>{it->second.boolean};
}

result<std::vector<std::string>> tool_args::string_list(std::string_view key, std::size_t max_items) const {
    auto it = values_.find(key);
    if (it == values_.end() || it->second.type == value::kind::null) return std::vector<std::string>{};
    const value& v = it->second;
    if (v.type != value::kind::array || !v.all_strings)
        return fail(std::string("'").append(key) + "' must be an array of strings; got " + std::string(kind_name(v.type)) + " " +
                    (v.type == value::kind::string ? "\"" + shorten(v.text) + "\"" : shorten(v.text)));
    if (v.strings.size() > max_items)
        return fail(std::string("'").append(key) + "' may hold at most " + std::to_string(max_items) + " items; got " +
                    std::to_string(v.strings.size()));
    return v.strings;
}

}  // namespace tachyon::tools
