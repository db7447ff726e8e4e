#include "runtime/formats/conversation.h"

#include <simdjson.h>

namespace tachyon {
namespace {

using simdjson::dom::element;

std::string text_of(element e) {
    std::string_view s;
    if (!e.get_string().get(s)) return std::string(s);
    return simdjson::minify(e);
}

result<std::string> string_field(element obj, std::string_view key, const std::string& where, bool required) {
    element v;
    if (obj[key].get(v)) {
        if (required) return make_error(errc::invalid_argument, where + "." + std::string(key) + ": missing (expected a string)");
        return std::string();
    }
    std::string_view s;
    if (v.is_null()) return std::string();
    if (v.get_string().get(s))
        return make_error(errc::invalid_argument, where + "." + std::string(key) + ": expected a string");
    return std::string(s);
}

result<conversation> from_object(element obj, element tools, bool with_tools, const std::string& where) {
    conversation c;
    simdjson::dom::array messages;
    if (obj["messages"].get_array().get(messages))
        return make_error(errc::invalid_argument, where + ".messages: missing (expected an array of messages)");
    size_t i = 0;
    for (element m : messages) {
        const std::string at = where + ".messages[" + std::to_string(i++) + "]";
        if (!m.is_object()) return make_error(errc::invalid_argument, at + ": expected an object");
        chat_message msg;
        auto role = string_field(m, "role", at, true);
        if (!role) return role.err();
        msg.role = *role;
        element content;
        if (!m["content"].get(content) && !content.is_null()) msg.content = text_of(content);
        auto id = string_field(m, "tool_call_id", at, false);
        if (!id) return id.err();
        msg.tool_call_id = *id;
        auto name = string_field(m, "name", at, false);
        if (!name) return name.err();
        msg.name = *name;
        std::string_view reasoning;
        if (!m["reasoning_content"].get_string().get(reasoning)) msg.reasoning_content = std::string(reasoning);
        simdjson::dom::array calls;
        if (!m["tool_calls"].get_array().get(calls)) {
            size_t k = 0;
            for (element call : calls) {
                const std::string cat = at + ".tool_calls[" + std::to_string(k++) + "]";
                element fn;
                if (call["function"].get(fn) || !fn.is_object())
                    return make_error(errc::invalid_argument, cat + ".function: missing (expected an object)");
                chat_tool_call tc;
                auto cid = string_field(call, "id", cat, false);
                if (!cid) return cid.err();
                tc.id = *cid;
                auto cname = string_field(fn, "name", cat + ".function", true);
                if (!cname) return cname.err();
                tc.name = *cname;
                element args;
                tc.arguments_json = fn["arguments"].get(args) ? std::string("{}") : text_of(args);
                msg.tool_calls.push_back(std::move(tc));
            }
        }
        c.messages.push_back(std::move(msg));
    }
    bool b = true;
    if (!obj["add_generation_prompt"].get_bool().get(b)) c.options.add_generation_prompt = b;
    if (!obj["enable_thinking"].get_bool().get(b)) c.options.enable_thinking = b;
    if (!obj["extra_kwargs"]["enable_thinking"].get_bool().get(b)) c.options.enable_thinking = b;
    simdjson::dom::array tool_list;
    if (with_tools && !tools.get_array().get(tool_list)) {
        for (element t : tool_list) {
            if (!t.is_object()) return make_error(errc::invalid_argument, where + ".tools: expected an array of objects");
            c.options.tools.push_back(simdjson::minify(t));
        }
    }
    return c;
}

}  // namespace

result<conversation> parse_conversation(std::string_view json_text, std::string_view what, std::string_view case_name) {
    simdjson::dom::parser parser;
    simdjson::padded_string padded(json_text);
    element root;
    if (auto err = parser.parse(padded).get(root))
        return make_error(errc::invalid_argument, std::string(what) + ": not valid JSON (" + simdjson::error_message(err) + ")");
    if (!root.is_object()) return make_error(errc::invalid_argument, std::string(what) + ": expected a JSON object");
    element tools;
    const bool has_tools = !root["tools"].get(tools);
    simdjson::dom::object cases;
    if (!root["cases"].get_object().get(cases)) {
        if (case_name.empty()) {
            std::string names;
            for (auto [k, v] : cases) names += (names.empty() ? "" : ", ") + std::string(k);
            return make_error(errc::invalid_argument, std::string(what) + ": a file of cases; choose one with --case (" + names + ")");
        }
        element one;
        if (cases[case_name].get(one) || !one.is_object())
            return make_error(errc::invalid_argument, std::string(what) + ": no case '" + std::string(case_name) + "'");
        bool with_tools = false;
        if (one["with_tools"].get_bool().get(with_tools)) with_tools = false;
        return from_object(one, tools, has_tools && with_tools, std::string(what) + ": cases." + std::string(case_name));
    }
    if (!case_name.empty())
        return make_error(errc::invalid_argument, std::string(what) + ": --case " + std::string(case_name) + " given, but the file has no \"cases\"");
    return from_object(root, tools, has_tools, std::string(what));
}

}  // namespace tachyon
