#include "runtime/remote/remote_model.h"

#include <simdjson.h>

#include <cmath>

#include "runtime/common/json_util.h"
#include "runtime/formats/chat_format.h"
#include "tools/mcp/http_transport.h"

namespace tachyon::remote {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

error fail(std::string_view what, std::string_view key, const std::string& message) {
    std::string where;
    where.reserve(what.size() + key.size() + 1);
    where.append(what);
    if (!key.empty()) where.append(".").append(key);
    return make_error(errc::invalid_argument, where + ": " + message);
}

result<std::string> string_of(element v, std::string_view what, std::string_view key) {
    if (v.type() != element_type::STRING) return fail(what, key, "expected a string, got " + json::kind_name(v.type()));
    return std::string(v.get_string().value());
}

}  // namespace

std::string_view to_string(tool_mode mode) { return mode == tool_mode::server ? "server" : "text"; }

bool looks_like_remote_model(std::string_view text) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    return first != std::string_view::npos && text[first] == '{';
}

result<endpoint> parse_endpoint(std::string_view url) {
    if (url.rfind("https://", 0) == 0)
        return make_error(errc::unsupported, "url '" + std::string(url) + "': https is not supported yet, use a local TLS proxy "
                                             "(for example stunnel or nginx on this host) and give its http:// address");
    auto u = tools::mcp::parse_http_url(url);
    if (!u) return u.err();
    endpoint e{u->host, u->port, u->target};
    while (!e.base_target.empty() && e.base_target.back() == '/') e.base_target.pop_back();
    return e;
}

result<remote_model> parse_remote_model(std::string_view json_text, std::string_view what) {
    simdjson::dom::parser parser;
    element doc;
    if (parser.parse(simdjson::padded_string(json_text)).get(doc) != simdjson::SUCCESS)
        return fail(what, "", "not valid JSON (expected an object with url and name)");
    if (doc.type() != element_type::OBJECT) return fail(what, "", "expected an object with url and name, got " + json::kind_name(doc.type()));
    remote_model m;
    bool has_url = false, has_name = false;
    for (auto field : doc.get_object()) {
        const std::string_view key = field.key;
        element v = field.value;
        if (key == "url") {
            auto s = string_of(v, what, key);
            if (!s) return s.err();
            if (auto e = parse_endpoint(*s); !e) return fail(what, key, e.err().message);
            m.url = *s;
            while (!m.url.empty() && m.url.back() == '/') m.url.pop_back();
            has_url = true;
        } else if (key == "name") {
            auto s = string_of(v, what, key);
            if (!s) return s.err();
            if (s->empty()) return fail(what, key, "expected the model name the server serves, got an empty string");
            m.name = *s;
            has_name = true;
        } else if (key == "api_key_env") {
            auto s = string_of(v, what, key);
            if (!s) return s.err();
            m.api_key_env = *s;
        } else if (key == "tools") {
            auto s = string_of(v, what, key);
            if (!s) return s.err();
            if (*s == "server") m.tools = tool_mode::server;
            else if (*s == "text") m.tools = tool_mode::text;
            else return fail(what, key, "expected \"server\" or \"text\", got \"" + *s + "\"");
        } else if (key == "chat_format") {
            auto s = string_of(v, what, key);
            if (!s) return s.err();
            if (!chat_format_from_name(*s)) return fail(what, key, "expected one of " + chat_format_names() + ", got \"" + *s + "\"");
            m.chat_format = *s;
        } else if (key == "timeout_s" || key == "connect_timeout_s" || key == "idle_timeout_s") {
            double s = 0;
            if (v.type() == element_type::DOUBLE) s = v.get_double().value();
            else if (v.type() == element_type::INT64) s = static_cast<double>(v.get_int64().value());
            else return fail(what, key, "expected a number of seconds, got " + json::kind_name(v.type()));
            if (!(s > 0) || s > 86400 || !std::isfinite(s)) return fail(what, key, "expected seconds in (0, 86400], got " + std::to_string(s));
            const auto ms = std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
            if (key == "timeout_s") m.timeouts.first_token = ms;
            else if (key == "connect_timeout_s") m.timeouts.connect = ms;
            else m.timeouts.idle = ms;
        } else if (key == "max_turn_tokens") {
            if (v.type() != element_type::INT64 || v.get_int64().value() < 1 || v.get_int64().value() > 1 << 20)
                return fail(what, key, "expected an integer in [1, 1048576]");
            m.max_turn_tokens = static_cast<int>(v.get_int64().value());
        } else if (key == "max_retries") {
            if (v.type() != element_type::INT64 || v.get_int64().value() < 0 || v.get_int64().value() > 20)
                return fail(what, key, "expected an integer in [0, 20]");
            m.max_retries = static_cast<int>(v.get_int64().value());
        } else if (key == "provider") {
            auto s = string_of(v, what, key);
            if (!s) return s.err();
            if (s->empty()) return fail(what, key, "expected the backend's name (\"vllm\", \"sglang\", ...), got an empty string");
            m.provider = *s;
        } else if (key == "headers") {
            if (v.type() != element_type::OBJECT) return fail(what, key, "expected an object of header name -> string");
            for (auto h : v.get_object()) {
                auto s = string_of(h.value, what, std::string(key) + "." + std::string(h.key));
                if (!s) return s.err();
                if (s->find_first_of("\r\n") != std::string::npos || std::string_view(h.key).find_first_of(" \t\r\n:") != std::string_view::npos)
                    return fail(what, std::string(key) + "." + std::string(h.key), "expected a header name and a value on one line");
                m.headers[std::string(h.key)] = *s;
            }
        } else {
            return fail(what, key, "unknown key (expected one of: url, name, api_key_env, tools, chat_format, timeout_s, "
                                   "connect_timeout_s, idle_timeout_s, max_retries, max_turn_tokens, provider, headers)");
        }
    }
    if (!has_url) return fail(what, "url", "missing (required: the API base, e.g. \"http://host:8000/v1\")");
    if (!has_name) return fail(what, "name", "missing (required: the model name the server serves)");
    return m;
}

result<remote_model> remote_model_from_url(std::string_view url, std::string name) {
    if (auto e = parse_endpoint(url); !e) return make_error(e.err().code, "--remote: " + e.err().message);
    if (name.empty()) return make_error(errc::invalid_argument, "--remote " + std::string(url) + ": expected the model name the server serves (--remote-model NAME)");
    remote_model m;
    m.url = std::string(url);
    while (!m.url.empty() && m.url.back() == '/') m.url.pop_back();
    m.name = std::move(name);
    return m;
}

}  // namespace tachyon::remote
