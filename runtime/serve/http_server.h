// The HTTP server (`tachyon serve`): Boost.Beast sessions as C++20
// coroutines, structured as Beast's advanced_server_flex_awaitable: a
// listener, one coroutine per connection on its own strand, a tcp_stream
// with a timeout before every read and write, request_parser with header and
// body limits, keep-alive, and a two-stage shutdown (stop accepting and let
// requests finish; past the deadline, cancel and close).
//
// Routes: POST /v1/chat/completions (OpenAI-compatible, SSE when streamed),
// GET /v1/models, POST /v1/runs, GET /v1/runs/{id}, GET /v1/runs/{id}/events
// (SSE, Last-Event-ID resume), POST /v1/runs/{id}/cancel, GET /healthz,
// GET /metrics, and /mcp when an MCP endpoint is given (http_mcp.h). Errors
// are {"error": {message, type, param, code}}.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/chat/chat_generation.h"
#include "runtime/remote/remote_model.h"
#include "runtime/serve/http_metrics.h"
#include "runtime/serve/http_runs.h"
#include "runtime/telemetry/tracer.h"

namespace tachyon::http {

class mcp_endpoint;

struct server_options {
    std::string host = "127.0.0.1";
    uint16_t port = 8080;                 // 0: an ephemeral port (tests)
    std::string api_key;                  // empty: no authentication (loopback only)
    int n_threads = 1;                    // I/O threads
    size_t body_limit = 1 << 20;          // bytes; larger: 413
    uint32_t header_limit = 16 * 1024;    // bytes; larger: 431
    std::chrono::milliseconds read_timeout{30000};   // a request's header and body
    std::chrono::milliseconds idle_timeout{60000};   // keep-alive wait for the next request
    std::chrono::milliseconds write_timeout{30000};
    std::chrono::milliseconds heartbeat{15000};      // SSE comment lines on a quiet run stream
    int max_chat_requests = 128;          // chat completions in flight; more: 429
    std::chrono::milliseconds shutdown_deadline{10000};
    openai::generation_limits generation;
    // Set: chat completions that ask for `remote_id` are passed on to this
    // server (`tachyon serve --remote`), streamed back as it answers.
    std::shared_ptr<const remote::remote_model> remote;
    std::string remote_id;
    // Set: /mcp serves tachyon's MCP server (Streamable HTTP); outlives the server.
    mcp_endpoint* mcp = nullptr;
    // Set: each chat completion is a `chat {model}` span, continuing the
    // request's traceparent (runs get theirs from the agent service).
    std::shared_ptr<telemetry::tracer> tracer;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

class server {
public:
    // `runs` may be null (no /v1/runs). Models, metrics and runs outlive the server.
    server(server_options options, std::vector<metrics::model_entry> models, metrics& m, run_registry* runs);
    ~server();  // shutdown() if still running

    // Binds and starts the I/O threads. Errors: a non-loopback host without
    // an API key, an address that cannot be bound (naming it).
    status start();
    uint16_t port() const;

    // Two stages: stop accepting and close idle connections; requests in
    // flight finish until the deadline; then generations and runs are
    // cancelled, connections closed, runs awaited (journals closed). Blocks;
    // call from a thread that is not one of the server's.
    void shutdown();

private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace tachyon::http
