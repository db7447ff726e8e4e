// MCP over Streamable HTTP (revision 2025-11-25): every message is POSTed to
// one endpoint; a request is answered with either one JSON body
// (application/json) or an event stream (text/event-stream) that carries
// progress notifications and then the response. The server's MCP-Session-Id
// is sent back on every later request, with MCP-Protocol-Version; a 404 for a
// session means it expired (the channel closes, and the client initializes
// again); close() DELETEs the session. Once the server gave a session id,
// a GET holds the session's own event stream open (messages outside any
// request: notifications/tools/list_changed), where the server offers one.
// An event stream that breaks before its answer, after the server gave its
// events ids, is resumed with GET and Last-Event-ID once the delay the
// server asked for (SSE retry) has passed.
//
// Plain http:// only, to the host the user names (loopback or any other).
// Headers come from the agent file, a bearer token from an environment
// variable: never from the URL.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "tools/mcp/transport.h"

namespace tachyon::tools::mcp {

struct http_options {
    std::string server;                          // names the server in messages
    std::string url;                             // http://host[:port]/path
    std::map<std::string, std::string> headers;  // sent with every request
    std::string bearer_env;                      // environment variable holding a bearer token; empty: none
    std::chrono::milliseconds connect_timeout{10000};
    std::chrono::milliseconds read_timeout{300000};  // silence on an open response before it is given up
    size_t max_body_bytes = size_t{64} << 20;
};

struct http_url {
    std::string host, port, target;
};
// "http://127.0.0.1:8080/mcp" -> {127.0.0.1, 8080, /mcp}; errors name the URL.
result<http_url> parse_http_url(std::string_view url);

std::unique_ptr<transport> make_http_transport(http_options options);

}  // namespace tachyon::tools::mcp
