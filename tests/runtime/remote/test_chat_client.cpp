#include "runtime/remote/chat_client.h"

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <optional>

#include "fake_backend.h"

using namespace tachyon;
using namespace tachyon::remote;

namespace {

struct streamed {
    std::optional<result<turn_result>> out;
    std::string content;
    std::vector<assembled_call> calls;
    std::vector<std::string> call_errors;
};

remote_model model_at(const std::string& url) {
    remote_model m;
    m.url = url;
    m.name = "qwen2.5-7b";
    m.timeouts.connect = std::chrono::milliseconds(2000);
    m.timeouts.first_token = std::chrono::milliseconds(5000);
    m.timeouts.idle = std::chrono::milliseconds(5000);
    return m;
}

turn_request simple_request() {
    turn_request r;
    r.messages = {{"system", "You are terse.", {}, {}}, {"user", "hi", {}, {}}};
    r.tools = {R"({"type": "function", "function": {"name": "get_trace", "description": "d", "parameters": {"type": "object"}}})"};
    r.session_id = "run-42";
    r.request_id = "run-42-1";
    return r;
}

// Runs one stream to its end; `cancel_after` > 0 cancels it that long after the start.
streamed stream_once(const remote_model& m, turn_request r, std::chrono::milliseconds cancel_after = {}) {
    boost::asio::io_context io;
    streamed s;
    auto stream = chat_stream::create(io.get_executor(), m);
    turn_callbacks cb;
    cb.on_content = [&](std::string_view t) { s.content += t; };
    cb.on_call = [&](const assembled_call& c) { s.calls.push_back(c); };
    cb.on_call_error = [&](int, const std::string&, const std::string& message) { s.call_errors.push_back(message); };
    boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> { s.out = co_await stream->run(std::move(r), cb); },
                          boost::asio::detached);
    boost::asio::steady_timer timer(io);
    if (cancel_after.count() > 0) {
        timer.expires_after(cancel_after);
        timer.async_wait([&](boost::system::error_code ec) {
            if (!ec) stream->cancel();
        });
    }
    io.run_for(std::chrono::seconds(30));
    REQUIRE(s.out.has_value());
    return s;
}

}  // namespace

TEST_CASE("chat_client: content and tool-call deltas stream in, calls keyed by index or by id, each complete when its arguments close") {
    fake_backend::server backend({fake_backend::sse({
        R"({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})",
        R"({"choices": [{"index": 0, "delta": {"content": "Looking "}}]})",
        R"({"choices": [{"index": 0, "delta": {"content": "at it."}}]})",
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "get_trace", "arguments": ""}}]}}]})",
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"trace_id\": "}}]}}]})",
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"4bf9}\"}"}}]}}]})",
        // a server that keys fragments by id only
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "c2", "function": {"name": "search_logs", "arguments": "{\"service\""}}]}}]})",
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "c2", "function": {"arguments": ": \"payments\"}"}}]}}]})",
        R"({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})",
        R"({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 31, "prompt_tokens_details": {"cached_tokens": 100}}})",
    })});
    auto s = stream_once(model_at(backend.url()), simple_request());
    REQUIRE_MESSAGE(s.out->ok(), (s.out->ok() ? "" : s.out->err().message));
    const turn_result& t = **s.out;
    CHECK(s.content == "Looking at it.");
    REQUIRE(s.calls.size() == 2);
    CHECK(s.calls[0].name == "get_trace");
    CHECK(s.calls[0].id == "c1");
    CHECK(s.calls[0].arguments_json == R"({"trace_id": "4bf9}"})");  // a brace inside a string does not close it
    CHECK(s.calls[1].name == "search_logs");
    CHECK(s.calls[1].arguments_json == R"({"service": "payments"})");
    CHECK(t.finish_reason == "tool_calls");
    REQUIRE(t.usage.has_value());
    CHECK(t.usage->cached_tokens == 100);
    CHECK(t.n_attempts == 1);
    auto req = backend.requests();
    REQUIRE(req.size() == 1);
    CHECK(req[0].rfind("POST /v1/chat/completions HTTP/1.1\r\n", 0) == 0);
    CHECK(req[0].find("X-Session-Id: run-42\r\n") != std::string::npos);
    CHECK(req[0].find("X-Request-Id: run-42-1\r\n") != std::string::npos);
    CHECK(req[0].find(R"("stream": true)") != std::string::npos);
    CHECK(req[0].find(R"("tools": [{"type": "function")") != std::string::npos);
    CHECK(req[0].find(R"("tool_choice": "auto")") != std::string::npos);
}

TEST_CASE("chat_client: the request body is deterministic and a later turn's body starts with the earlier messages byte for byte") {
    const remote_model m = model_at("http://127.0.0.1:1/v1");
    turn_request first = simple_request();
    turn_request second = first;
    second.messages.push_back({"assistant", "", {{"call_1_0", "get_trace", R"({"trace_id": "x"})"}}, {}});
    second.messages.push_back({"tool", "trace ...", {}, "call_1_0"});
    const std::string a = request_body(m, first), b = request_body(m, second);
    CHECK(a == request_body(m, first));
    const std::string prefix = a.substr(0, a.find("]"));  // up to the end of the first turn's messages
    CHECK(b.compare(0, prefix.size(), prefix) == 0);
    CHECK(b.find(R"({"role": "tool", "content": "trace ...", "tool_call_id": "call_1_0"})") != std::string::npos);
    turn_request seeded = first;
    seeded.sampling.seed = 0xffffffffffffffffULL;  // servers take a signed 64-bit seed
    CHECK(request_body(m, seeded).find(R"("seed": 9223372036854775807)") != std::string::npos);
    CHECK(b.find(R"("tool_calls": [{"id": "call_1_0", "type": "function", "function": {"name": "get_trace", "arguments": "{\"trace_id\": \"x\"}"}}])") !=
          std::string::npos);
}

TEST_CASE("chat_client: 503 with Retry-After is retried after the time it asks for, a backend that stays busy is an error naming it") {
    fake_backend::server backend({fake_backend::status(503, "Service Unavailable", R"({"error": {"message": "overloaded"}})", "Retry-After: 1\r\n"),
                                  fake_backend::sse({R"({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})"})});
    const auto t0 = std::chrono::steady_clock::now();
    auto s = stream_once(model_at(backend.url()), simple_request());
    REQUIRE_MESSAGE(s.out->ok(), (s.out->ok() ? "" : s.out->err().message));
    CHECK(s.content == "ok");
    CHECK((*s.out)->n_attempts == 2);
    CHECK(backend.requests().size() == 2);
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(950));  // Retry-After: 1 was honoured

    fake_backend::server busy({fake_backend::status(429, "Too Many Requests", R"({"error": {"message": "slow down"}})", "Retry-After: 0\r\n")});
    remote_model m = model_at(busy.url());
    m.max_retries = 2;
    auto b = stream_once(m, simple_request());
    REQUIRE_FALSE(b.out->ok());
    CHECK(busy.requests().size() == 3);
    const std::string& e = b.out->err().message;
    CHECK(e.find("remote model qwen2.5-7b at " + busy.url()) == 0);
    CHECK(e.find("answered 429 Too Many Requests: {\"error\": {\"message\": \"slow down\"}}") != std::string::npos);
    CHECK(e.find("after 3 attempt(s)") != std::string::npos);
}

TEST_CASE("chat_client: other statuses are not retried, the error quotes the first bytes of the body") {
    fake_backend::server backend({fake_backend::status(400, "Bad Request", R"({"error": {"message": "model 'qwen2.5-7b' not found"}})")});
    auto s = stream_once(model_at(backend.url()), simple_request());
    REQUIRE_FALSE(s.out->ok());
    CHECK(backend.requests().size() == 1);
    CHECK(s.out->err().message ==
          "remote model qwen2.5-7b at " + backend.url() + ": answered 400 Bad Request: {\"error\": {\"message\": \"model 'qwen2.5-7b' not found\"}}");
}

TEST_CASE("chat_client: a backend that hangs times out with an error naming the timeout, one that refuses connections is retried, then an error") {
    fake_backend::server backend({fake_backend::reply{{}, true}});
    remote_model m = model_at(backend.url());
    m.timeouts.first_token = std::chrono::milliseconds(300);
    auto s = stream_once(m, simple_request());
    REQUIRE_FALSE(s.out->ok());
    CHECK(s.out->err().code == errc::timeout);
    CHECK(s.out->err().message == "remote model qwen2.5-7b at " + backend.url() + ": no answer within 300 ms (timeout_s)");

    // A port nothing listens on.
    uint16_t closed_port;
    {
        fake_backend::server gone({fake_backend::status(200, "OK", "")});
        closed_port = gone.port();
    }
    remote_model refused = model_at("http://127.0.0.1:" + std::to_string(closed_port) + "/v1");
    refused.max_retries = 1;
    auto r = stream_once(refused, simple_request());
    REQUIRE_FALSE(r.out->ok());
    CHECK(r.out->err().code == errc::io_error);
    CHECK(r.out->err().message.find("cannot connect: ") != std::string::npos);
    CHECK(r.out->err().message.find("(after 2 attempt(s))") != std::string::npos);
}

TEST_CASE("chat_client: a stream that goes silent after its first token is an idle timeout, not a retry") {
    fake_backend::reply r = fake_backend::sse({R"({"choices": [{"index": 0, "delta": {"content": "Look"}}]})"}, false);
    r.hang = true;
    fake_backend::server backend({r});
    remote_model m = model_at(backend.url());
    m.timeouts.idle = std::chrono::milliseconds(300);
    auto s = stream_once(m, simple_request());
    REQUIRE_FALSE(s.out->ok());
    CHECK(s.content == "Look");
    CHECK(s.out->err().code == errc::timeout);
    CHECK(s.out->err().message == "remote model qwen2.5-7b at " + backend.url() + ": the stream went silent for 300 ms (idle_timeout_s)");
    CHECK(backend.requests().size() == 1);  // content was handed on: never replayed
}

TEST_CASE("chat_client: malformed streams are errors naming the backend and what was wrong") {
    auto error_of = [](fake_backend::reply r) {
        fake_backend::server backend({std::move(r)});
        auto s = stream_once(model_at(backend.url()), simple_request());
        REQUIRE_FALSE(s.out->ok());
        const std::string prefix = "remote model qwen2.5-7b at " + backend.url() + ": ";
        CHECK(s.out->err().message.rfind(prefix, 0) == 0);
        return s.out->err().message.substr(prefix.size());
    };
    CHECK(error_of(fake_backend::sse({"{not json"})) ==
          "event stream: not valid JSON (expected a chat.completion.chunk object or [DONE]) (event data: {not json)");
    CHECK(error_of(fake_backend::sse({R"({"choices": "nope"})"})).find("choices: expected an array, got a string") != std::string::npos);
    CHECK(error_of(fake_backend::sse({R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0"}]}}]})"}))
              .find("choices[0].delta.tool_calls[0].index: expected an integer") != std::string::npos);
    CHECK(error_of(fake_backend::sse({R"({"error": {"message": "CUDA out of memory"}})"})) ==
          "the server reported an error in the stream: CUDA out of memory");
    CHECK(error_of(fake_backend::sse({R"({"choices": [{"index": 0, "delta": {"content": "half"}}]})"}, false)) ==
          "the stream ended without [DONE] after 1 event(s) (expected data: [DONE] as the last event)");
}

TEST_CASE("chat_client: a call whose arguments never close is reported as a broken call, not a crash") {
    fake_backend::server backend({fake_backend::sse({
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "get_trace", "arguments": "{\"trace_id\": \"ab"}}]}}]})",
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "list_services"}}]}}]})",
        R"({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})",
    })});
    auto s = stream_once(model_at(backend.url()), simple_request());
    REQUIRE(s.out->ok());
    REQUIRE(s.calls.size() == 1);  // the call without arguments is complete at the end, with {}
    CHECK(s.calls[0].name == "list_services");
    CHECK(s.calls[0].arguments_json == "{}");
    REQUIRE(s.call_errors.size() == 1);
    CHECK(s.call_errors[0] == "the arguments of call 'get_trace' ended before their JSON object closed: {\"trace_id\": \"ab (expected one JSON object)");
}

TEST_CASE("chat_client: cancel closes the stream and the turn ends cancelled") {
    fake_backend::server backend({fake_backend::reply{{}, true}});
    auto s = stream_once(model_at(backend.url()), simple_request(), std::chrono::milliseconds(100));
    REQUIRE(s.out->ok());
    CHECK((*s.out)->finish_reason == "cancelled");
}

TEST_CASE("chat_client: https is refused with the advice to use a local TLS proxy, a missing API key variable is named") {
    auto s = stream_once(model_at("https://api.example.com/v1"), simple_request());
    REQUIRE_FALSE(s.out->ok());
    CHECK(s.out->err().message.find("https is not supported yet, use a local TLS proxy") != std::string::npos);

    remote_model m = model_at("http://127.0.0.1:9/v1");
    m.api_key_env = "TACHYON_TEST_NO_SUCH_KEY";
    auto k = stream_once(m, simple_request());
    REQUIRE_FALSE(k.out->ok());
    CHECK(k.out->err().message ==
          "remote model qwen2.5-7b at http://127.0.0.1:9/v1: api_key_env 'TACHYON_TEST_NO_SUCH_KEY' is not set (expected the API key in that environment variable)");
}
