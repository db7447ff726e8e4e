// One streamed chat completion against a remote OpenAI-compatible server:
// POST {url}/chat/completions with "stream": true over HTTP/1.1 (Boost.Beast,
// plain http), the SSE body parsed as it arrives into content text and tool
// calls (runtime/remote/stream_chunk.h). A coroutine on the caller's
// executor (the agent run's strand); callbacks run there.
//
// - Timeouts on every step: connect, first token (request sent -> response
//   header and first event), idle (between events).
// - Retries with jittered exponential backoff on connect errors, 429 and
//   503 (honouring Retry-After), only before the first token: a stream that
//   breaks after content arrived is an error, never replayed.
// - cancel() closes the stream; the coroutine returns finish "cancelled".
// - Errors name the model and URL and what the server answered (status and
//   the first bytes of the body).
// - The run id goes out as X-Session-Id (session affinity: the same replica
//   and its prefix cache serve the whole run) and in X-Request-Id; the
//   turn's span as traceparent when the run is traced.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "base/result.h"
#include "inference/engine/sampler.h"
#include "runtime/remote/remote_model.h"
#include "runtime/remote/stream_chunk.h"

namespace tachyon::remote {

struct remote_tool_call {
    std::string id;
    std::string name;
    std::string arguments_json;
};

// One message of the conversation as the request carries it.
struct remote_message {
    std::string role;  // system, user, assistant, tool
    std::string content;
    std::vector<remote_tool_call> tool_calls;  // assistant, server mode
    std::string tool_call_id;                  // tool, server mode
};

struct turn_request {
    std::vector<remote_message> messages;
    // Tool definitions, one {"type": "function", "function": {...}} JSON
    // object each; empty: none sent.
    std::vector<std::string> tools;
    std::string response_schema_json;  // the final answer's schema; empty: none sent
    sampling_params sampling = sampling_params::greedy();
    int max_tokens = 1024;
    std::string session_id;  // the run id (X-Session-Id)
    std::string request_id;  // X-Request-Id
    std::string traceparent; // W3C trace context of the caller's span; empty: not sent
    // Sent as tachyon_forced_tokens (a replaying benchmark's own server,
    // openai::chat_request::forced_tokens); empty: not sent.
    std::vector<int32_t> forced_tokens;
};

// The request body. Deterministic: the same messages give the same bytes,
// so each turn's request starts with the previous one's messages byte for
// byte and the server's prefix cache hits.
std::string request_body(const remote_model& model, const turn_request& request);

struct turn_callbacks {
    // A piece of content text, in order.
    std::function<void(std::string_view text)> on_content;
    // A tool call whose arguments JSON is complete (server mode).
    std::function<void(const assembled_call& call)> on_call;
    // A tool call that ended malformed (arguments never closed, too long).
    std::function<void(int index, const std::string& name, const std::string& message)> on_call_error;
};

struct turn_result {
    std::string finish_reason;  // stop, length, tool_calls (as the server said; "stop" if it said nothing), cancelled
    std::vector<assembled_call> calls;  // every call of the turn, in order
    std::optional<stream_usage> usage;
    int n_attempts = 0;     // requests sent (1 + retries)
    int n_content = 0;      // content and tool-call events received
};

class chat_stream : public std::enable_shared_from_this<chat_stream> {
public:
    static std::shared_ptr<chat_stream> create(boost::asio::any_io_executor ex, remote_model model);
    ~chat_stream();

    // Streams one completion. Errors: connect/timeout/HTTP status/malformed
    // stream, each naming the model and URL. Call once per stream object.
    boost::asio::awaitable<result<turn_result>> run(turn_request request, turn_callbacks callbacks);
    // Closes the connection (on the executor's strand); run() returns with
    // finish "cancelled".
    void cancel();

    const remote_model& model() const;

private:
    struct impl;
    explicit chat_stream(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
};

}  // namespace tachyon::remote
