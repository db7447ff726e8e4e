#include "runtime/remote/stream_chunk.h"

#include <simdjson.h>

#include "runtime/common/json_util.h"

namespace tachyon::remote {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

std::string stream_first_bytes(std::string_view s, size_t n = 200) {
    return json::sanitize_utf8(s.size() <= n ? s : s.substr(0, n)) + (s.size() > n ? "..." : "");
}

error bad_chunk(std::string_view data, const std::string& what) {
    return make_error(errc::parse_error, "event stream: " + what + " (event data: " + stream_first_bytes(data) + ")");
}

// A string member, or empty when absent or null; an error for another kind.
result<std::string> optional_string(element obj, const char* key, std::string_view data, const std::string& path) {
    element v;
    if (obj[key].get(v) != simdjson::SUCCESS || v.type() == element_type::NULL_VALUE) return std::string();
    if (v.type() != element_type::STRING) return bad_chunk(data, path + ": expected a string, got " + json::kind_name(v.type()));
    return std::string(v.get_string().value());
}

int int_member(element obj, const char* key) {
    element v;
    if (obj[key].get(v) != simdjson::SUCCESS) return 0;
    if (v.type() == element_type::INT64) return static_cast<int>(v.get_int64().value());
    if (v.type() == element_type::UINT64) return static_cast<int>(v.get_uint64().value());
    return 0;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

result<stream_chunk> parse_chunk(std::string_view data) {
    stream_chunk out;
    if (data == "[DONE]") {
        out.done = true;
        return out;
    }
    simdjson::dom::parser parser;
    element doc;
    if (parser.parse(simdjson::padded_string(data)).get(doc) != simdjson::SUCCESS)
        return bad_chunk(data, "not valid JSON (expected a chat.completion.chunk object or [DONE])");
    if (doc.type() != element_type::OBJECT) return bad_chunk(data, "expected a chat.completion.chunk object, got " + json::kind_name(doc.type()));
    element err;
    if (doc["error"].get(err) == simdjson::SUCCESS) {
        std::string message;
        element m;
        if (err.type() == element_type::OBJECT && err["message"].get(m) == simdjson::SUCCESS && m.type() == element_type::STRING)
            message = std::string(m.get_string().value());
        else
            message = stream_first_bytes(data);
        return make_error(errc::internal, "the server reported an error in the stream: " + message);
    }
    element usage;
    if (doc["usage"].get(usage) == simdjson::SUCCESS && usage.type() == element_type::OBJECT) {
        stream_usage u;
        u.prompt_tokens = int_member(usage, "prompt_tokens");
        u.completion_tokens = int_member(usage, "completion_tokens");
        element details;
        if (usage["prompt_tokens_details"].get(details) == simdjson::SUCCESS && details.type() == element_type::OBJECT)
            u.cached_tokens = int_member(details, "cached_tokens");
        out.usage = u;
    }
    element choices;
    if (doc["choices"].get(choices) != simdjson::SUCCESS) {
        if (out.usage) return out;
        return bad_chunk(data, "choices: missing (expected a chat.completion.chunk object)");
    }
    if (choices.type() != element_type::ARRAY) return bad_chunk(data, "choices: expected an array, got " + json::kind_name(choices.type()));
    for (element choice : choices.get_array()) {
        if (choice.type() != element_type::OBJECT) return bad_chunk(data, "choices[0]: expected an object");
        if (int_member(choice, "index") != 0) continue;  // n > 1 was never asked for
        auto finish = optional_string(choice, "finish_reason", data, "choices[0].finish_reason");
        if (!finish) return finish.err();
        out.finish_reason = *finish;
        element delta;
        if (choice["delta"].get(delta) != simdjson::SUCCESS) continue;
        if (delta.type() != element_type::OBJECT) return bad_chunk(data, "choices[0].delta: expected an object, got " + json::kind_name(delta.type()));
        auto content = optional_string(delta, "content", data, "choices[0].delta.content");
        if (!content) return content.err();
        out.content = std::move(content).value();
        element calls;
        if (delta["tool_calls"].get(calls) != simdjson::SUCCESS || calls.type() == element_type::NULL_VALUE) continue;
        if (calls.type() != element_type::ARRAY) return bad_chunk(data, "choices[0].delta.tool_calls: expected an array, got " + json::kind_name(calls.type()));
        size_t i = 0;
        for (element call : calls.get_array()) {
            const std::string path = "choices[0].delta.tool_calls[" + std::to_string(i++) + "]";
            if (call.type() != element_type::OBJECT) return bad_chunk(data, path + ": expected an object, got " + json::kind_name(call.type()));
            tool_fragment f;
            element index;
            if (call["index"].get(index) == simdjson::SUCCESS) {
                if (index.type() != element_type::INT64 || index.get_int64().value() < 0 || index.get_int64().value() > 1024)
                    return bad_chunk(data, path + ".index: expected an integer in [0, 1024]");
                f.index = static_cast<int>(index.get_int64().value());
            }
            auto id = optional_string(call, "id", data, path + ".id");
            if (!id) return id.err();
            f.id = std::move(id).value();
            element fn;
            if (call["function"].get(fn) == simdjson::SUCCESS && fn.type() != element_type::NULL_VALUE) {
                if (fn.type() != element_type::OBJECT) return bad_chunk(data, path + ".function: expected an object, got " + json::kind_name(fn.type()));
                auto name = optional_string(fn, "name", data, path + ".function.name");
                if (!name) return name.err();
                f.name = std::move(name).value();
                element args;
                if (fn["arguments"].get(args) == simdjson::SUCCESS && args.type() != element_type::NULL_VALUE) {
                    if (args.type() == element_type::STRING) f.arguments = std::string(args.get_string().value());
                    else if (args.type() == element_type::OBJECT) f.arguments = simdjson::minify(args);  // a server that sends the object itself
                    else return bad_chunk(data, path + ".function.arguments: expected a string, got " + json::kind_name(args.type()));
                }
            }
            out.tools.push_back(std::move(f));
        }
    }
    return out;
}

size_t tool_call_assembler::find_or_open(const tool_fragment& f) {
    for (size_t i = calls_.size(); i-- > 0;) {
        if (f.index >= 0 ? open_[i].key_index == f.index : (!f.id.empty() && open_[i].key_id == f.id)) return i;
    }
    // No key at all: the fragment continues the last call.
    if (f.index < 0 && f.id.empty() && !calls_.empty()) return calls_.size() - 1;
    assembled_call c;
    c.index = static_cast<int>(calls_.size());
    c.id = f.id;
    calls_.push_back(std::move(c));
    open_call o;
    o.key_index = f.index;
    o.key_id = f.id;
    open_.push_back(o);
    return calls_.size() - 1;
}

void tool_call_assembler::add(const tool_fragment& f, std::vector<assembled_call>& complete) {
    const size_t i = find_or_open(f);
    assembled_call& c = calls_[i];
    open_call& o = open_[i];
    if (c.id.empty()) c.id = f.id;
    if (o.done || o.too_long) return;
    if (!o.started) c.name += f.name;
    for (char ch : f.arguments) {
        if (!o.started && is_blank(ch)) continue;
        o.started = true;
        if (c.arguments_json.size() >= max_arguments_bytes) {
            o.too_long = true;
            return;
        }
        c.arguments_json += ch;
        if (o.depth.push(ch)) {
            o.done = true;
            complete.push_back(c);
            return;
        }
    }
}

void tool_call_assembler::finish(std::vector<assembled_call>& complete, std::vector<broken_call>& broken) {
    for (size_t i = 0; i < calls_.size(); ++i) {
        open_call& o = open_[i];
        assembled_call& c = calls_[i];
        if (o.done) continue;
        o.done = true;
        if (o.too_long) {
            broken.push_back({c.index, c.name, "the arguments of call '" + c.name + "' are longer than " + std::to_string(max_arguments_bytes) + " bytes"});
        } else if (!o.started) {
            c.arguments_json = "{}";  // a call without arguments
            complete.push_back(c);
        } else {
            broken.push_back({c.index, c.name, "the arguments of call '" + c.name + "' ended before their JSON object closed: " +
                                                   stream_first_bytes(c.arguments_json, 120) + " (expected one JSON object)"});
        }
    }
}

}  // namespace tachyon::remote
