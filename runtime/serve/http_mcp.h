// /mcp on `tachyon serve`: tachyon's MCP server (runtime/mcp/) over the
// Streamable HTTP transport (MCP 2025-11-25).
//
//  - POST carries one JSON-RPC message. initialize opens a session and its
//    answer carries MCP-Session-Id; every later message must carry it (400
//    without, 404 for a session that ended). A notification or response is
//    answered 202. A request is answered as application/json, or, when the
//    client accepts text/event-stream, as an event stream carrying the
//    call's progress notifications and then its answer (a tools/call that
//    runs an agent takes a while); a cancelled call's stream ends without
//    an answer. A client that drops the stream does not cancel the call
//    (notifications/cancelled does): it may resume the stream.
//  - GET (Accept: text/event-stream) opens the session's standalone stream:
//    messages tied to no request, such as notifications/tools/list_changed
//    (notify()); what came while none was open comes first. One at a time:
//    a second GET is 409.
//  - Every event on a stream carries an SSE id; a GET with Last-Event-ID
//    replays the events of that id's stream after it (a bounded history
//    per stream; the last answered POST streams are kept) and goes on with
//    the stream, taking it over from a connection still writing it (the
//    older one ends); a POST's stream that ended with nothing after that
//    event is 410. 2025-11-25 sessions get a first event with an id, no
//    data and a retry hint, to resume from before any message came.
//  - MCP-Protocol-Version, when sent, must be a revision tachyon speaks (400).
//  - DELETE ends the session (its running calls are cancelled).
//  - A browser's Origin that is not loopback is refused (403), against DNS
//    rebinding; the API key rule is the server's (http_server.h).
// Sessions expire after an idle time; a limit bounds how many are open.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <memory>
#include <string_view>

#include "base/result.h"
#include "runtime/mcp/mcp_server.h"
#include "runtime/serve/http_metrics.h"

namespace tachyon::http {

struct mcp_endpoint_options {
    // Tools, agents, the service that runs them, journals, confinement;
    // each session's server is made from these (pool: the endpoint's).
    mcp_server_options server;
    int n_workers = 8;                                 // calls at once, all sessions together
    size_t max_sessions = 64;                          // more (after expiring idle ones): 503
    std::chrono::milliseconds session_idle{30 * 60 * 1000};  // a session unused this long ends
    std::chrono::milliseconds heartbeat{15000};        // SSE comment lines while a call runs
    std::chrono::milliseconds write_timeout{30000};
    std::chrono::milliseconds retry{1000};             // the reconnection delay an SSE stream's first event asks for
    metrics* stats = nullptr;                          // requests counted under route "/mcp"
};

// True for an Origin header value naming a loopback host
// ("http://localhost:5173", "http://127.0.0.1", "http://[::1]:8080").
bool is_loopback_origin(std::string_view origin);

class mcp_endpoint {
public:
    using request_t = boost::beast::http::request<boost::beast::http::string_body>;

    // Errors: the server options are refused (two tools of one name...).
    static result<std::unique_ptr<mcp_endpoint>> make(mcp_endpoint_options options);
    ~mcp_endpoint();  // shutdown()

    // Answers one request to /mcp on `stream` (the connection's strand).
    // Returns whether the connection may serve another request; `stopping`:
    // the server is shutting down (no keep-alive).
    boost::asio::awaitable<bool> serve(boost::beast::tcp_stream& stream, request_t& req, bool stopping);

    // Sends a notification (params: a JSON object, or empty) to every open
    // session on its standalone stream, e.g. notifications/tools/list_changed.
    // A session with no GET stream open keeps it for the next GET.
    void notify(std::string_view method, std::string_view params_json = {});

    // Ends every session's GET stream, for a server that stops: they are
    // no requests in flight to wait for. Sessions and calls go on.
    void end_get_streams();

    // Ends every session: running calls are cancelled and awaited, their
    // streams end. Blocks; not on an I/O thread.
    void shutdown();
    size_t n_sessions() const;

private:
    struct impl;
    explicit mcp_endpoint(std::shared_ptr<impl> i);
    std::shared_ptr<impl> impl_;
};

}  // namespace tachyon::http
