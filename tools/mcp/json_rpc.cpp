#include "tools/mcp/json_rpc.h"

#include <simdjson.h>

namespace tachyon::tools::mcp {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

std::string text_of(element e) { return simdjson::minify(e); }

}  // namespace

result<message> parse_message(std::string_view text) {
    simdjson::dom::parser parser;
    element doc;
    if (auto err = parser.parse(simdjson::padded_string(text)).get(doc))
        return make_error(errc::parse_error, std::string("not JSON (") + simdjson::error_message(err) + ")");
    if (doc.type() != element_type::OBJECT) return make_error(errc::parse_error, "not a JSON-RPC message (expected a JSON object)");
    std::string_view version;
    if (doc["jsonrpc"].get_string().get(version) || version != "2.0")
        return make_error(errc::parse_error, "not a JSON-RPC 2.0 message (expected \"jsonrpc\": \"2.0\")");
    message m;
    element id, v;
    const bool has_id = !doc["id"].get(id) && id.type() != element_type::NULL_VALUE;
    if (has_id) {
        if (id.type() != element_type::STRING && id.type() != element_type::INT64 && id.type() != element_type::UINT64)
            return make_error(errc::parse_error, "JSON-RPC id must be a string or an integer");
        m.id = text_of(id);
    }
    if (!doc["method"].get(v)) {
        std::string_view method;
        if (v.get_string().get(method)) return make_error(errc::parse_error, "JSON-RPC method must be a string");
        m.method = std::string(method);
        m.type = has_id ? message::kind::request : message::kind::notification;
        if (!doc["params"].get(v)) m.params = text_of(v);
        return m;
    }
    if (!doc["result"].get(v)) {
        if (!has_id) return make_error(errc::parse_error, "JSON-RPC response without an id");
        m.type = message::kind::response;
        m.result = text_of(v);
        return m;
    }
    if (!doc["error"].get(v)) {
        m.type = message::kind::error;
        int64_t code = 0;
        std::string_view what;
        if (v.type() != element_type::OBJECT || v["code"].get_int64().get(code) || v["message"].get_string().get(what))
            return make_error(errc::parse_error, "JSON-RPC error without an integer code and a message");
        m.error_code = code;
        m.error_message = std::string(what);
        element data;
        if (!v["data"].get(data)) m.error_data = text_of(data);
        return m;  // an error about an unreadable request may carry no id
    }
    return make_error(errc::parse_error, "JSON-RPC message with neither method, result nor error");
}

std::string make_request(int64_t id, std::string_view method, std::string_view params_json) {
    std::string out = "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) + ",\"method\":" + json::quote(method);
    if (!params_json.empty()) out += ",\"params\":" + std::string(params_json);
    return out + "}";
}

std::string make_notification(std::string_view method, std::string_view params_json) {
    std::string out = "{\"jsonrpc\":\"2.0\",\"method\":" + json::quote(method);
    if (!params_json.empty()) out += ",\"params\":" + std::string(params_json);
    return out + "}";
}

std::string make_response(std::string_view id_json, std::string_view result_json) {
    return "{\"jsonrpc\":\"2.0\",\"id\":" + std::string(id_json) + ",\"result\":" + std::string(result_json) + "}";
}

std::string make_error_response(std::string_view id_json, int64_t code, std::string_view message) {
    return "{\"jsonrpc\":\"2.0\",\"id\":" + std::string(id_json) + ",\"error\":{\"code\":" + std::to_string(code) +
           ",\"message\":" + json::quote(message) + "}}";
}

}  // namespace tachyon::tools::mcp
