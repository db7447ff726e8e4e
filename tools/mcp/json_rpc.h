// JSON-RPC 2.0 messages as MCP exchanges them: one JSON object per message
// (no batches, which MCP dropped in 2025-06-18), built as text and read with
// simdjson. Values travel as minified JSON text, so a caller parses only what
// it needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/json_text.h"
#include "base/result.h"

namespace tachyon::tools::mcp {

// JSON-RPC error codes MCP uses.
inline constexpr int64_t k_method_not_found = -32601;
inline constexpr int64_t k_invalid_params = -32602;

struct message {
    enum class kind { request, notification, response, error };
    kind type = kind::notification;
    std::string id;      // requests and responses: the id as minified JSON ("7", "\"a\"")
    std::string method;  // requests and notifications
    std::string params;  // minified JSON; empty when absent
    std::string result;  // responses: minified JSON
    int64_t error_code = 0;  // errors
    std::string error_message;
    std::string error_data;  // minified JSON; empty when absent
};

// Reads one message. An error names what is wrong ("not a JSON object",
// "response without result or error") for the caller to prefix with the peer.
result<message> parse_message(std::string_view text);

std::string make_request(int64_t id, std::string_view method, std::string_view params_json);
std::string make_notification(std::string_view method, std::string_view params_json);
std::string make_response(std::string_view id_json, std::string_view result_json);
std::string make_error_response(std::string_view id_json, int64_t code, std::string_view message);


}  // namespace tachyon::tools::mcp
