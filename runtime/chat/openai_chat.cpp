#include "runtime/chat/openai_chat.h"

#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <random>

#include "runtime/constrain/json_schema.h"
#include "runtime/common/json_util.h"

namespace tachyon::openai {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;


error fail(const std::string& path, const std::string& what) { return make_error(errc::invalid_argument, path + ": " + what); }
error expected(const std::string& path, const std::string& what, element v) {
    return fail(path, "expected " + what + ", got " + json::kind_name(v.type()));
}

std::string member(const std::string& path, std::string_view key) { return path.empty() ? std::string(key) : path + "." + std::string(key); }
std::string item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// Keys of `obj` outside `allowed` are errors naming the key, as the API does
// for unrecognized arguments.
status check_keys(element obj, const std::string& path, std::initializer_list<std::string_view> allowed) {
    for (auto field : obj.get_object()) {
        bool ok = false;
        for (auto a : allowed) ok = ok || field.key == a;
        if (!ok) {
            std::string list;
            for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
            return fail(member(path, field.key), "unrecognized argument (expected one of: " + list + ")");
        }
    }
    return {};
}

result<std::string> get_string(element v, const std::string& path) {
    if (v.type() != element_type::STRING) return expected(path, "a string", v);
    return std::string(v.get_string().value());
}

result<bool> get_bool(element v, const std::string& path) {
    if (v.type() != element_type::BOOL) return expected(path, "a boolean", v);
    return v.get_bool().value();
}

result<double> get_number(element v, const std::string& path, double lo, double hi) {
    double x = 0;
    if (v.type() == element_type::INT64) x = static_cast<double>(v.get_int64().value());
    else if (v.type() == element_type::UINT64) x = static_cast<double>(v.get_uint64().value());
    else if (v.type() == element_type::DOUBLE) x = v.get_double().value();
    else return expected(path, "a number", v);
    if (!(x >= lo && x <= hi)) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "expected a number in [%g, %g], got %g", lo, hi, x);
        return fail(path, buf);
    }
    return x;
}

result<int64_t> get_int(element v, const std::string& path, int64_t lo, int64_t hi) {
    int64_t x = 0;
    if (v.type() == element_type::INT64) x = v.get_int64().value();
    else if (v.type() == element_type::UINT64) return fail(path, "integer out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    else return expected(path, "an integer", v);
    if (x < lo || x > hi) return fail(path, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(x));
    return x;
}

// Message content: a string, an array of text parts, or null (empty).
result<std::string> get_content(element v, const std::string& path) {
    if (v.type() == element_type::NULL_VALUE) return std::string();
    if (v.type() == element_type::STRING) return std::string(v.get_string().value());
    if (v.type() != element_type::ARRAY) return expected(path, "a string or an array of text parts", v);
    std::string out;
    size_t i = 0;
    for (element part : v.get_array()) {
        const std::string p = item(path, i++);
        if (part.type() != element_type::OBJECT) return expected(p, "a content part object", part);
        element type, text;
        if (part["type"].get(type)) return fail(p + ".type", "missing (required)");
        auto t = get_string(type, p + ".type");
        if (!t) return t.err();
        if (*t != "text") return fail(p + ".type", "only text parts are supported; got '" + *t + "'");
        if (part["text"].get(text)) return fail(p + ".text", "missing (required)");
        auto s = get_string(text, p + ".text");
        if (!s) return s.err();
        out += *s;
    }
    return out;
}

bool valid_function_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
    return true;
}

result<tool_call> parse_tool_call(element v, const std::string& path) {
    if (v.type() != element_type::OBJECT) return expected(path, "a tool call object", v);
    TACHYON_TRY(check_keys(v, path, {"id", "type", "function", "index"}));
    tool_call c;
    element x;
    if (!v["id"].get(x)) {
        auto id = get_string(x, path + ".id");
        if (!id) return id.err();
        c.id = *id;
    }
    if (!v["type"].get(x)) {
        auto t = get_string(x, path + ".type");
        if (!t) return t.err();
        if (*t != "function") return fail(path + ".type", "expected 'function', got '" + *t + "'");
    }
    element fn;
    if (v["function"].get(fn)) return fail(path + ".function", "missing (required)");
    if (fn.type() != element_type::OBJECT) return expected(path + ".function", "an object", fn);
    if (fn["name"].get(x)) return fail(path + ".function.name", "missing (required)");
    auto name = get_string(x, path + ".function.name");
    if (!name) return name.err();
    c.name = *name;
    std::string args = "{}";
    if (!fn["arguments"].get(x)) {
        auto a = get_string(x, path + ".function.arguments");
        if (!a) return a.err();
        args = *a;
    }
    auto spaced = json::spaced(args, path + ".function.arguments");
    if (!spaced || spaced->empty() || spaced->front() != '{')
        return fail(path + ".function.arguments", "expected a JSON object encoded as a string");
    c.arguments_json = std::move(spaced).value();
    return c;
}

result<message> parse_message(element v, const std::string& path) {
    if (v.type() != element_type::OBJECT) return expected(path, "a message object", v);
    element x;
    if (v["role"].get(x)) return fail(path + ".role", "missing (required)");
    auto role = get_string(x, path + ".role");
    if (!role) return role.err();
    message m;
    if (*role == "system" || *role == "developer" || *role == "user") {
        TACHYON_TRY(check_keys(v, path, {"role", "content", "name"}));
        m.role = *role == "user" ? "user" : "system";
    } else if (*role == "assistant") {
        TACHYON_TRY(check_keys(v, path, {"role", "content", "name", "tool_calls", "refusal"}));
        m.role = "assistant";
    } else if (*role == "tool") {
        TACHYON_TRY(check_keys(v, path, {"role", "content", "tool_call_id"}));
        m.role = "tool";
    } else {
        return fail(path + ".role", "expected one of system, developer, user, assistant, tool; got '" + *role + "'");
    }
    if (v["content"].get(x)) {
        if (m.role != "assistant") return fail(path + ".content", "missing (required)");
    } else {
        auto c = get_content(x, path + ".content");
        if (!c) return c.err();
        m.content = std::move(c).value();
    }
    if (m.role == "assistant" && !v["tool_calls"].get(x) && x.type() != element_type::NULL_VALUE) {
        if (x.type() != element_type::ARRAY) return expected(path + ".tool_calls", "an array", x);
        size_t i = 0;
        for (element c : x.get_array()) {
            auto call = parse_tool_call(c, item(path + ".tool_calls", i++));
            if (!call) return call.err();
            m.tool_calls.push_back(std::move(call).value());
        }
    }
    if (m.role == "tool") {
        if (v["tool_call_id"].get(x)) return fail(path + ".tool_call_id", "missing (required)");
        auto id = get_string(x, path + ".tool_call_id");
        if (!id) return id.err();
        m.tool_call_id = *id;
    }
    return m;
}

result<function_tool> parse_tool(element v, const std::string& path) {
    if (v.type() != element_type::OBJECT) return expected(path, "a tool object", v);
    TACHYON_TRY(check_keys(v, path, {"type", "function"}));
    element x;
    if (v["type"].get(x)) return fail(path + ".type", "missing (required)");
    auto type = get_string(x, path + ".type");
    if (!type) return type.err();
    if (*type != "function") return fail(path + ".type", "expected 'function', got '" + *type + "'");
    element fn;
    if (v["function"].get(fn)) return fail(path + ".function", "missing (required)");
    const std::string fp = path + ".function";
    if (fn.type() != element_type::OBJECT) return expected(fp, "an object", fn);
    TACHYON_TRY(check_keys(fn, fp, {"name", "description", "parameters", "strict"}));
    function_tool t;
    if (fn["name"].get(x)) return fail(fp + ".name", "missing (required)");
    auto name = get_string(x, fp + ".name");
    if (!name) return name.err();
    if (!valid_function_name(*name)) return fail(fp + ".name", "expected 1 to 64 characters of a-z, A-Z, 0-9, _ or -; got '" + *name + "'");
    t.name = *name;
    if (!fn["description"].get(x)) {
        auto d = get_string(x, fp + ".description");
        if (!d) return d.err();
        t.description = *d;
    }
    if (!fn["strict"].get(x)) {
        auto s = get_bool(x, fp + ".strict");
        if (!s) return s.err();
    }
    if (!fn["parameters"].get(x)) {
        if (x.type() != element_type::OBJECT) return expected(fp + ".parameters", "a JSON Schema object", x);
        const std::string text = simdjson::minify(x);
        auto schema = json_schema::parse(text, t.name, "argument");
        if (!schema) return fail(fp + ".parameters", schema.err().message);
        if (auto c = schema->unsatisfiable()) return fail(member(fp + ".parameters", c->path), c->what);
        auto spaced = json::spaced(text, fp + ".parameters");
        if (!spaced) return spaced.err();
        t.parameters_json = std::move(spaced).value();
    }
    return t;
}

status parse_tool_choice(element v, chat_request& r) {
    if (v.type() == element_type::STRING) {
        const std::string_view s = v.get_string().value();
        if (s == "none") r.tool_choice = tool_choice_mode::none;
        else if (s == "auto") r.tool_choice = tool_choice_mode::automatic;
        else if (s == "required") r.tool_choice = tool_choice_mode::required;
        else return fail("tool_choice", "expected 'none', 'auto', 'required' or a function object; got '" + std::string(s) + "'");
        return {};
    }
    if (v.type() != element_type::OBJECT) return expected("tool_choice", "a string or an object", v);
    element fn, x;
    if (v["function"].get(fn) || fn.type() != element_type::OBJECT) return fail("tool_choice.function", "expected an object with a name");
    if (fn["name"].get(x)) return fail("tool_choice.function.name", "missing (required)");
    auto name = get_string(x, "tool_choice.function.name");
    if (!name) return name.err();
    r.tool_choice = tool_choice_mode::named;
    r.tool_choice_name = *name;
    return {};
}

status parse_response_format(element v, chat_request& r) {
    if (v.type() != element_type::OBJECT) return expected("response_format", "an object", v);
    TACHYON_TRY(check_keys(v, "response_format", {"type", "json_schema"}));
    element x;
    if (v["type"].get(x)) return fail("response_format.type", "missing (required)");
    auto type = get_string(x, "response_format.type");
    if (!type) return type.err();
    if (*type == "text") {
        r.response_format = response_format_kind::text;
    } else if (*type == "json_object") {
        r.response_format = response_format_kind::json_object;
        r.response_schema_json = R"({"type": "object"})";
    } else if (*type == "json_schema") {
        r.response_format = response_format_kind::json_schema;
        element js;
        if (v["json_schema"].get(js)) return fail("response_format.json_schema", "missing (required for type json_schema)");
        if (js.type() != element_type::OBJECT) return expected("response_format.json_schema", "an object", js);
        TACHYON_TRY(check_keys(js, "response_format.json_schema", {"name", "description", "schema", "strict"}));
        if (js["name"].get(x)) return fail("response_format.json_schema.name", "missing (required)");
        if (auto n = get_string(x, "response_format.json_schema.name"); !n) return n.err();
        if (js["schema"].get(x)) return fail("response_format.json_schema.schema", "missing (required)");
        if (x.type() != element_type::OBJECT) return expected("response_format.json_schema.schema", "a JSON Schema object", x);
        const std::string text = simdjson::minify(x);
        auto schema = json_schema::parse(text, "response", "field");
        if (!schema) return fail("response_format.json_schema.schema", schema.err().message);
        if (auto c = schema->unsatisfiable()) return fail(member("response_format.json_schema.schema", c->path), c->what);
        if (schema->root().types != json_types::object)
            return fail("response_format.json_schema.schema", "the root must be an object schema (\"type\": \"object\")");
        r.response_schema_json = text;
    } else {
        return fail("response_format.type", "expected 'text', 'json_object' or 'json_schema'; got '" + *type + "'");
    }
    return {};
}

status parse_top_level(element doc, chat_request& r) {
    if (doc.type() != element_type::OBJECT) return fail("body", "expected a JSON object, got " + json::kind_name(doc.type()));
    TACHYON_TRY(check_keys(doc, "", {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p",
                                      "max_tokens", "max_completion_tokens", "stop", "seed", "response_format", "stream",
                                      "stream_options", "n", "user", "frequency_penalty", "presence_penalty", "logprobs",
                                      "store", "metadata", "tachyon_forced_tokens"}));
    element x;
    if (doc["model"].get(x)) return fail("model", "missing (required)");
    auto model = get_string(x, "model");
    if (!model) return model.err();
    r.model = *model;

    if (doc["messages"].get(x)) return fail("messages", "missing (required)");
    if (x.type() != element_type::ARRAY) return expected("messages", "an array", x);
    size_t i = 0;
    for (element m : x.get_array()) {
        auto msg = parse_message(m, item("messages", i++));
        if (!msg) return msg.err();
        r.messages.push_back(std::move(msg).value());
    }
    if (r.messages.empty()) return fail("messages", "expected at least one message");

    if (!doc["tools"].get(x) && x.type() != element_type::NULL_VALUE) {
        if (x.type() != element_type::ARRAY) return expected("tools", "an array", x);
        i = 0;
        for (element t : x.get_array()) {
            const std::string p = item("tools", i++);
            auto tool = parse_tool(t, p);
            if (!tool) return tool.err();
            for (const auto& other : r.tools)
                if (other.name == tool->name) return fail(p + ".function.name", "duplicate function name '" + tool->name + "'");
            r.tools.push_back(std::move(tool).value());
        }
        if (r.tools.size() > 64) return fail("tools", "at most 64 tools are supported");
    }
    r.tool_choice = r.tools.empty() ? tool_choice_mode::none : tool_choice_mode::automatic;
    if (!doc["tool_choice"].get(x) && x.type() != element_type::NULL_VALUE) {
        TACHYON_TRY(parse_tool_choice(x, r));
        if (r.tools.empty() && (r.tool_choice == tool_choice_mode::required || r.tool_choice == tool_choice_mode::named))
            return fail("tool_choice", "a tool is required but 'tools' is empty");
        if (r.tool_choice == tool_choice_mode::named) {
            bool found = false;
            for (const auto& t : r.tools) found = found || t.name == r.tool_choice_name;
            if (!found) return fail("tool_choice.function.name", "no tool named '" + r.tool_choice_name + "' in 'tools'");
        }
    }
    if (!doc["parallel_tool_calls"].get(x)) {
        auto b = get_bool(x, "parallel_tool_calls");
        if (!b) return b.err();
        r.parallel_tool_calls = *b;
    }
    if (!doc["temperature"].get(x) && x.type() != element_type::NULL_VALUE) {
        auto t = get_number(x, "temperature", 0, 2);
        if (!t) return t.err();
        r.temperature = *t;
    }
    if (!doc["top_p"].get(x) && x.type() != element_type::NULL_VALUE) {
        auto t = get_number(x, "top_p", 0, 1);
        if (!t) return t.err();
        r.top_p = *t;
    }
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {
        if (!doc[key].get(x) && x.type() != element_type::NULL_VALUE) {
            auto n = get_int(x, key, 1, 1 << 20);
            if (!n) return n.err();
            r.max_tokens = static_cast<int>(*n);
        }
    }
    if (!doc["stop"].get(x) && x.type() != element_type::NULL_VALUE) {
        if (x.type() == element_type::STRING) {
            r.stop.emplace_back(x.get_string().value());
        } else if (x.type() == element_type::ARRAY) {
            i = 0;
            for (element s : x.get_array()) {
                auto str = get_string(s, item("stop", i++));
                if (!str) return str.err();
                r.stop.push_back(*str);
            }
            if (r.stop.size() > 4) return fail("stop", "at most 4 stop sequences");
        } else {
            return expected("stop", "a string or an array of strings", x);
        }
        for (size_t k = 0; k < r.stop.size(); ++k)
            if (r.stop[k].empty()) return fail(r.stop.size() == 1 && x.type() == element_type::STRING ? "stop" : item("stop", k), "expected a non-empty string");
    }
    if (!doc["seed"].get(x) && x.type() != element_type::NULL_VALUE) {
        auto s = get_int(x, "seed", INT64_MIN, INT64_MAX);
        if (!s) return s.err();
        r.seed = static_cast<uint64_t>(*s);
    }
    if (!doc["response_format"].get(x) && x.type() != element_type::NULL_VALUE) TACHYON_TRY(parse_response_format(x, r));
    if (!doc["stream"].get(x) && x.type() != element_type::NULL_VALUE) {
        auto b = get_bool(x, "stream");
        if (!b) return b.err();
        r.stream = *b;
    }
    if (!doc["stream_options"].get(x) && x.type() != element_type::NULL_VALUE) {
        if (x.type() != element_type::OBJECT) return expected("stream_options", "an object", x);
        TACHYON_TRY(check_keys(x, "stream_options", {"include_usage"}));
        element u;
        if (!x["include_usage"].get(u)) {
            auto b = get_bool(u, "stream_options.include_usage");
            if (!b) return b.err();
            r.include_usage = *b;
        }
        if (!r.stream) return fail("stream_options", "only allowed when 'stream' is true");
    }
    if (!doc["tachyon_forced_tokens"].get(x) && x.type() != element_type::NULL_VALUE) {
        if (x.type() != element_type::ARRAY) return expected("tachyon_forced_tokens", "an array of token ids", x);
        size_t k = 0;
        for (element t : x.get_array()) {
            auto id = get_int(t, item("tachyon_forced_tokens", k++), 0, INT32_MAX);
            if (!id) return id.err();
            r.forced_tokens.push_back(static_cast<int32_t>(*id));
        }
    }
    if (!doc["n"].get(x) && x.type() != element_type::NULL_VALUE) {
        auto n = get_int(x, "n", 1, 1);
        if (!n) return fail("n", "only n = 1 is supported");
    }
    if (!doc["logprobs"].get(x) && x.type() != element_type::NULL_VALUE) {
        auto b = get_bool(x, "logprobs");
        if (!b) return b.err();
        if (*b) return fail("logprobs", "log probabilities are not supported");
    }
    for (const char* key : {"frequency_penalty", "presence_penalty"}) {
        if (!doc[key].get(x) && x.type() != element_type::NULL_VALUE) {
            auto p = get_number(x, key, -2, 2);
            if (!p) return p.err();
        }
    }
    if (!doc["user"].get(x)) {
        if (auto u = get_string(x, "user"); !u) return u.err();
    }
    return {};
}

std::string random_hex(size_t n) {
    std::random_device rd;
    std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(n, '0');
    for (auto& c : out) c = digits[rng() & 15];
    return out;
}

void append_head(std::string& out, const completion& c, std::string_view object) {
    out += "{\"id\":";
    json::append_quoted(out, c.id);
    out += ",\"object\":\"";
    out += object;
    out += "\",\"created\":" + std::to_string(c.created) + ",\"model\":";
    json::append_quoted(out, c.model);
    out += ",\"system_fingerprint\":\"tachyon\"";
}

void append_usage(std::string& out, const usage& u) {
    out += "{\"prompt_tokens\":" + std::to_string(u.prompt_tokens) + ",\"completion_tokens\":" + std::to_string(u.completion_tokens) +
           ",\"total_tokens\":" + std::to_string(u.prompt_tokens + u.completion_tokens) +
           ",\"prompt_tokens_details\":{\"cached_tokens\":" + std::to_string(u.cached_tokens) + "}}";
}

}  // namespace

std::string error_json(const api_error& e) {
    std::string out = "{\"error\":{\"message\":";
    json::append_quoted(out, e.message);
    out += ",\"type\":";
    json::append_quoted(out, e.type);
    out += ",\"param\":";
    out += e.param.empty() ? "null" : json::quote(e.param);
    out += ",\"code\":";
    out += e.code.empty() ? "null" : json::quote(e.code);
    out += "}}";
    return out;
}

api_error to_api_error(const error& e) {
    api_error out;
    out.message = e.message;
    switch (e.code) {
        case errc::invalid_argument:
        case errc::parse_error:
        case errc::out_of_range: {
            out.status = 400;
            const size_t colon = e.message.find(": ");
            const std::string head = colon == std::string::npos ? std::string() : e.message.substr(0, colon);
            if (!head.empty() && head != "body" && head.find(' ') == std::string::npos) out.param = head;
            break;
        }
        case errc::not_found:
            out.status = 404;
            out.type = "not_found_error";
            break;
        case errc::unsupported:
            out.status = 400;
            break;
        case errc::resource_exhausted:
            out.status = 429;
            out.type = "rate_limit_error";
            out.code = "rate_limit_exceeded";
            break;
        case errc::timeout:
            out.status = 504;
            out.type = "timeout_error";
            break;
        default:
            out.status = 500;
            out.type = "server_error";
            break;
    }
    return out;
}

result<chat_request> parse_chat_request(std::string_view body) {
    simdjson::dom::parser parser;
    element doc;
    if (auto err = parser.parse(simdjson::padded_string(body)).get(doc))
        return make_error(errc::invalid_argument, std::string("body: not valid JSON: ") + simdjson::error_message(err));
    chat_request r;
    try {
        TACHYON_TRY(parse_top_level(doc, r));
    } catch (const simdjson::simdjson_error& e) {
        return make_error(errc::invalid_argument, std::string("body: ") + e.what());
    }
    return r;
}

result<std::vector<chat_message>> to_chat_messages(const chat_request& request) {
    std::vector<chat_message> out;
    out.reserve(request.messages.size());
    for (const auto& m : request.messages) {
        chat_message c;
        c.role = m.role;
        c.content = m.content;
        c.tool_call_id = m.tool_call_id;
        // Structured: each family's renderer writes them in its own syntax.
        for (const auto& call : m.tool_calls) c.tool_calls.push_back({call.id, call.name, call.arguments_json});
        out.push_back(std::move(c));
    }
    return out;
}

std::vector<std::string> tool_lines(const std::vector<function_tool>& tools) {
    std::vector<std::string> out;
    for (const auto& t : tools) {
        std::string s = "{\"type\": \"function\", \"function\": {\"name\": " + json::quote(t.name);
        s += ", \"description\": " + json::quote(t.description);
        s += ", \"parameters\": " + t.parameters_json + "}}";
        out.push_back(std::move(s));
    }
    return out;
}

result<std::string> render_prompt(const chat_request& request, chat_format format) {
    auto messages = to_chat_messages(request);
    if (!messages) return messages.err();
    chat_render_options o;
    o.add_generation_prompt = true;
    if (request.tool_choice != tool_choice_mode::none) o.tools = tool_lines(request.tools);
    auto text = render_chat(format, *messages, o);
    if (!text) return make_error(errc::invalid_argument, (o.tools.empty() ? "messages: " : "tools: ") + text.err().message);
    return text;
}

std::string completion_json(const completion& c) {
    std::string out;
    append_head(out, c, "chat.completion");
    out += ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":";
    out += c.content.empty() && !c.tool_calls.empty() ? "null" : json::quote(c.content);
    if (!c.reasoning_content.empty()) out += ",\"reasoning_content\":" + json::quote(c.reasoning_content);
    if (!c.tool_calls.empty()) {
        out += ",\"tool_calls\":[";
        for (size_t i = 0; i < c.tool_calls.size(); ++i) {
            const auto& t = c.tool_calls[i];
            if (i) out += ",";
            out += "{\"id\":" + json::quote(t.id) + ",\"type\":\"function\",\"function\":{\"name\":" + json::quote(t.name) +
                   ",\"arguments\":" + json::quote(t.arguments_json) + "}}";
        }
        out += "]";
    }
    out += ",\"refusal\":null},\"logprobs\":null,\"finish_reason\":" + json::quote(c.finish_reason) + "}],\"usage\":";
    append_usage(out, c.tokens);
    out += "}";
    return out;
}

std::string chunk_json(const completion& head, const delta& d) {
    std::string out;
    append_head(out, head, "chat.completion.chunk");
    out += ",\"choices\":[{\"index\":0,\"delta\":{";
    bool first = true;
    auto sep = [&] {
        if (!first) out += ",";
        first = false;
    };
    if (d.role) {
        sep();
        out += "\"role\":\"assistant\",\"content\":\"\"";
    } else if (!d.content.empty()) {
        sep();
        out += "\"content\":" + json::quote(d.content);
    }
    if (!d.reasoning_content.empty()) {
        sep();
        out += "\"reasoning_content\":" + json::quote(d.reasoning_content);
    }
    if (d.tool_index >= 0) {
        sep();
        out += "\"tool_calls\":[{\"index\":" + std::to_string(d.tool_index);
        if (!d.tool_id.empty()) out += ",\"id\":" + json::quote(d.tool_id) + ",\"type\":\"function\"";
        out += ",\"function\":{";
        if (!d.tool_id.empty()) out += "\"name\":" + json::quote(d.tool_name) + ",";
        out += "\"arguments\":" + json::quote(d.arguments) + "}}]";
    }
    out += "},\"logprobs\":null,\"finish_reason\":";
    out += d.finish_reason.empty() ? "null" : json::quote(d.finish_reason);
    out += "}]}";
    return out;
}

std::string usage_chunk_json(const completion& head, const usage& u) {
    std::string out;
    append_head(out, head, "chat.completion.chunk");
    out += ",\"choices\":[],\"usage\":";
    append_usage(out, u);
    out += "}";
    return out;
}

std::string make_completion_id() { return "chatcmpl-" + random_hex(24); }
std::string make_tool_call_id(tool_call_syntax syntax) {
    return syntax == tool_call_syntax::mistral ? random_hex(9) : "call_" + random_hex(24);
}

sampling_params sampling_of(const chat_request& request) {
    sampling_params p;
    p.temperature = static_cast<float>(request.temperature);
    p.top_k = 0;
    p.top_p = request.top_p <= 0 ? 1e-6f : static_cast<float>(request.top_p);
    p.min_p = 0;
    p.repeat_penalty = 1.0f;
    if (request.seed) {
        p.seed = *request.seed;
    } else {
        std::random_device rd;
        p.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    }
    return p;
}

}  // namespace tachyon::openai
