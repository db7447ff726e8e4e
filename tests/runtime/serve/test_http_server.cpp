#include "runtime/serve/http_server.h"

#include <doctest/doctest.h>

#include <random>
#include <thread>

#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "tests/runtime/scripted_model.h"
#include "tests/runtime/telemetry/otlp_receiver.h"
#include "tests/tools/incident_fixture.h"

using namespace tachyon;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

std::shared_ptr<model_host> scripted_host(int n_turns, const std::string& turn = "Hello from the script.") {
    auto tok = scripted::chatml_tokenizer();
    auto m = std::make_unique<scripted::model>(tok, std::vector<std::string>(static_cast<size_t>(n_turns), turn));
    m->set_fallback(tok.find_token("<|im_end|>"));
    return model_host::create(std::move(m), std::move(tok), chat_format::chatml, engine_options{});
}

struct reply {
    int status = 0;
    std::string body;
    bhttp::response<bhttp::string_body> raw;
};

// One request on a fresh connection (synchronous Beast client).
reply send(uint16_t port, bhttp::verb method, const std::string& target, const std::string& body = {},
           std::vector<std::pair<std::string, std::string>> headers = {}) {
    boost::asio::io_context io;
    beast::tcp_stream stream(io);
    stream.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    bhttp::request<bhttp::string_body> req{method, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    if (!body.empty()) {
        req.set(bhttp::field::content_type, "application/json");
        req.body() = body;
    }
    req.prepare_payload();
    bhttp::write(stream, req);
    beast::flat_buffer buffer;
    reply r;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64 << 20);
    beast::error_code ec;
    bhttp::read(stream, buffer, parser, ec);
    if (ec) return r;
    r.raw = parser.release();
    r.status = r.raw.result_int();
    r.body = r.raw.body();
    return r;
}

std::vector<std::string> sse_data_lines(const std::string& body) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < body.size()) {
        size_t j = body.find('\n', i);
        if (j == std::string::npos) j = body.size();
        std::string_view line(body.data() + i, j - i);
        if (line.rfind("data: ", 0) == 0) out.emplace_back(line.substr(6));
        i = j + 1;
    }
    return out;
}

std::string chat_body(bool stream, const std::string& extra = "") {
    return std::string(R"({"model": "scripted", "messages": [{"role": "user", "content": "hi"}], "temperature": 0)") +
           (stream ? R"(, "stream": true, "stream_options": {"include_usage": true})" : "") + extra + "}";
}

struct fixture {
    http::metrics stats;
    std::unique_ptr<http::server> server;
    uint16_t port = 0;

    explicit fixture(http::server_options o = {}, int n_turns = 64, http::run_registry* runs = nullptr,
                     std::shared_ptr<model_host> host = nullptr) {
        o.host = "127.0.0.1";
        o.port = 0;
        if (!host) host = scripted_host(n_turns);
        server = std::make_unique<http::server>(o, std::vector<http::metrics::model_entry>{{"scripted", host}}, stats, runs);
        auto st = server->start();
        REQUIRE_MESSAGE(st.ok(), st.err().message);
        port = server->port();
    }
};

std::string error_field(const std::string& body, const char* field) {
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    if (p.parse(simdjson::padded_string(body)).get(doc)) return "<not json>";
    simdjson::dom::element v;
    if (doc["error"][field].get(v)) return "<missing>";
    if (v.is_null()) return "null";
    return std::string(v.get_string().value());
}

}  // namespace

TEST_CASE("http_server: healthz and models") {
    fixture f;
    auto h = send(f.port, bhttp::verb::get, "/healthz");
    CHECK(h.status == 200);
    CHECK(h.body == R"({"status":"ok"})");
    auto m = send(f.port, bhttp::verb::get, "/v1/models");
    CHECK(m.status == 200);
    CHECK(m.body.find(R"("id":"scripted")") != std::string::npos);
    CHECK(send(f.port, bhttp::verb::get, "/v1/models/scripted").status == 200);
    auto missing = send(f.port, bhttp::verb::get, "/v1/models/nope");
    CHECK(missing.status == 404);
    CHECK(error_field(missing.body, "code") == "model_not_found");
    CHECK(send(f.port, bhttp::verb::get, "/nowhere").status == 404);
    CHECK(send(f.port, bhttp::verb::delete_, "/v1/models").status == 405);
}

TEST_CASE("http_server: a non-streamed chat completion") {
    fixture f;
    auto r = send(f.port, bhttp::verb::post, "/v1/chat/completions", chat_body(false));
    REQUIRE(r.status == 200);
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.parse(simdjson::padded_string(r.body));
    CHECK(std::string_view(doc["object"]) == "chat.completion");
    CHECK(std::string_view(doc["model"]) == "scripted");
    CHECK(std::string_view(doc["choices"].at(0)["message"]["content"]) == "Hello from the script.");
    CHECK(std::string_view(doc["choices"].at(0)["finish_reason"]) == "stop");
    CHECK(int64_t(doc["usage"]["completion_tokens"]) > 0);
    CHECK(r.raw[bhttp::field::content_type] == "application/json");
}

TEST_CASE("http_server: a client that goes away during a non-streamed completion stops its decoding") {
    // 4000 tokens of a 3000-word script at >= 2 ms per forward: 8 s if it ran to the end.
    std::string turn;
    std::mt19937 rng(5);
    for (int i = 0; i < 3000; ++i) {
        turn += 'w';
        turn += std::to_string(rng() % 100000);
        turn += ' ';
    }
    auto tok = scripted::chatml_tokenizer();
    auto m = std::make_unique<scripted::model>(tok, std::vector<std::string>{turn});
    m->set_fallback(tok.find_token("<|im_end|>"));
    m->set_forward_delay(std::chrono::milliseconds(2));
    fixture f({}, 0, nullptr, model_host::create(std::move(m), std::move(tok), chat_format::chatml, engine_options{}));
    {
        boost::asio::io_context io;
        beast::tcp_stream stream(io);
        stream.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), f.port));
        bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/chat/completions", 11};
        req.set(bhttp::field::host, "127.0.0.1");
        req.set(bhttp::field::content_type, "application/json");
        req.body() = chat_body(false, R"(, "max_tokens": 4000)");
        req.prepare_payload();
        bhttp::write(stream, req);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        stream.socket().shutdown(tcp::socket::shutdown_both);
        stream.close();
    }
    // The completion ends (cancelled) soon after, with only part of the script generated
    // (without the watch it ran on for 8 s, to all 4000 tokens).
    std::string text;
    for (int i = 0; i < 200; ++i) {
        text = f.stats.render({}, {});
        if (text.find("tachyon_chat_completions_total 1") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(text.find("tachyon_chat_completions_total 1") != std::string::npos);
    const std::string counter = "\ntachyon_completion_tokens_total ";
    const size_t at = text.find(counter);
    REQUIRE(at != std::string::npos);
    CHECK(std::stol(text.substr(at + counter.size())) < 2000);
}

TEST_CASE("http_server: a streamed chat completion is SSE chunks, usage, then [DONE]") {
    fixture f;
    auto r = send(f.port, bhttp::verb::post, "/v1/chat/completions", chat_body(true));
    REQUIRE(r.status == 200);
    CHECK(r.raw[bhttp::field::content_type] == "text/event-stream");
    auto lines = sse_data_lines(r.body);
    REQUIRE(lines.size() >= 4);
    CHECK(lines.back() == "[DONE]");
    std::string id, content, finish;
    bool usage = false;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
        simdjson::dom::parser p;
        simdjson::dom::element doc = p.parse(simdjson::padded_string(lines[i]));
        CHECK(std::string_view(doc["object"]) == "chat.completion.chunk");
        if (id.empty()) id = std::string(std::string_view(doc["id"]));
        CHECK(std::string_view(doc["id"]) == id);
        simdjson::dom::array choices = doc["choices"];
        if (choices.size() == 0) {
            usage = true;
            CHECK(int64_t(doc["usage"]["completion_tokens"]) > 0);
            continue;
        }
        auto delta = choices.at(0)["delta"];
        if (i == 0) CHECK(std::string_view(delta["role"]) == "assistant");
        std::string_view piece;
        if (!delta["content"].get(piece)) content += piece;
        std::string_view fr;
        if (!choices.at(0)["finish_reason"].get(fr)) finish = fr;
    }
    CHECK(content == "Hello from the script.");
    CHECK(finish == "stop");
    CHECK(usage);
}

TEST_CASE("http_server: bad requests are 400/404 with a message naming the input") {
    fixture f;
    auto bad_json = send(f.port, bhttp::verb::post, "/v1/chat/completions", "{\"model\": ");
    CHECK(bad_json.status == 400);
    CHECK(error_field(bad_json.body, "message").rfind("body: not valid JSON", 0) == 0);
    CHECK(error_field(bad_json.body, "type") == "invalid_request_error");
    auto bad_type = send(f.port, bhttp::verb::post, "/v1/chat/completions", R"({"model": "scripted", "messages": "hi"})");
    CHECK(bad_type.status == 400);
    CHECK(error_field(bad_type.body, "param") == "messages");
    CHECK(error_field(bad_type.body, "message") == "messages: expected an array, got a string");
    auto unknown = send(f.port, bhttp::verb::post, "/v1/chat/completions", R"({"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})");
    CHECK(unknown.status == 404);
    CHECK(error_field(unknown.body, "code") == "model_not_found");
    CHECK(error_field(unknown.body, "param") == "model");
    CHECK(send(f.port, bhttp::verb::get, "/v1/chat/completions").status == 405);
}

TEST_CASE("http_server: headers over the limit are 431, a body over the limit 413, a request over the concurrency limit 429 with Retry-After") {
    http::server_options o;
    o.body_limit = 2048;
    o.header_limit = 1024;
    o.max_chat_requests = 0;
    fixture f(o);
    CHECK(send(f.port, bhttp::verb::get, "/healthz", {}, {{"X-Padding", std::string(2000, 'x')}}).status == 431);
    auto big = send(f.port, bhttp::verb::post, "/v1/chat/completions", std::string(4096, ' ') + chat_body(false));
    CHECK(big.status == 413);
    auto busy = send(f.port, bhttp::verb::post, "/v1/chat/completions", chat_body(false));
    CHECK(busy.status == 429);
    CHECK(busy.raw[bhttp::field::retry_after] == "1");
    CHECK(error_field(busy.body, "code") == "rate_limit_exceeded");
}

TEST_CASE("http_server: with an API key, requests need the Bearer token, healthz does not") {
    http::server_options o;
    o.api_key = "0123456789abcdef-secret";
    fixture f(o);
    CHECK(send(f.port, bhttp::verb::get, "/healthz").status == 200);
    auto none = send(f.port, bhttp::verb::get, "/v1/models");
    CHECK(none.status == 401);
    CHECK(error_field(none.body, "type") == "authentication_error");
    CHECK(send(f.port, bhttp::verb::get, "/v1/models", {}, {{"Authorization", "Bearer 0123456789abcdef-secreT"}}).status == 401);
    CHECK(send(f.port, bhttp::verb::get, "/v1/models", {}, {{"Authorization", "Bearer 0123456789abcdef-secret"}}).status == 200);
    CHECK(send(f.port, bhttp::verb::get, "/metrics", {}, {{"Authorization", "Bearer 0123456789abcdef-secret"}}).status == 200);
}

TEST_CASE("http_server: a non-loopback address without an API key does not start") {
    http::metrics stats;
    http::server_options o;
    o.host = "0.0.0.0";
    o.port = 0;
    http::server s(o, {{"scripted", scripted_host(1)}}, stats, nullptr);
    auto st = s.start();
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message.find("requires an API key") != std::string::npos);
    CHECK(http::is_loopback("127.0.0.1"));
    CHECK(http::is_loopback("::1"));
    CHECK_FALSE(http::is_loopback("10.0.0.1"));
}

TEST_CASE("http_server: metrics count requests and tokens in Prometheus text") {
    fixture f;
    REQUIRE(send(f.port, bhttp::verb::post, "/v1/chat/completions", chat_body(false)).status == 200);
    auto m = send(f.port, bhttp::verb::get, "/metrics");
    REQUIRE(m.status == 200);
    CHECK(m.body.find("# TYPE tachyon_http_requests_total counter") != std::string::npos);
    CHECK(m.body.find(R"(tachyon_http_requests_total{route="/v1/chat/completions",status="200"} 1)") != std::string::npos);
    CHECK(m.body.find("tachyon_chat_completions_total 1") != std::string::npos);
    CHECK(m.body.find(R"(tachyon_kv_blocks_total{model="scripted"})") != std::string::npos);
    CHECK(m.body.find("tachyon_prefix_cache_hit_rate ") != std::string::npos);
    CHECK(m.body.find("tachyon_chat_queue_depth 0") != std::string::npos);
}

TEST_CASE("http_server: graceful shutdown finishes the request in flight, then refuses connections") {
    // A long scripted answer, streamed: shutdown waits for it.
    fixture f({}, 1, nullptr, scripted_host(1, std::string(300, 'a')));
    auto pending = std::async(std::launch::async, [&] { return send(f.port, bhttp::verb::post, "/v1/chat/completions", chat_body(true)); });
    // Shut down once the request is in flight (a fixed sleep lost that race
    // on a loaded machine, and the request met the shutdown's 503 instead).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (f.stats.render({}, {}).find("tachyon_chat_requests_in_flight 1\n") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    f.server->shutdown();
    auto r = pending.get();
    CHECK(r.status == 200);
    auto lines = sse_data_lines(r.body);
    REQUIRE_FALSE(lines.empty());
    CHECK(lines.back() == "[DONE]");
    boost::asio::io_context io;
    tcp::socket s(io);
    beast::error_code ec;
    s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), f.port), ec);
    CHECK(ec);
}

TEST_CASE("http_server: agent runs: start, state, live events with Last-Event-ID resume, cancel, errors") {
    const std::string model = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";
    if (!std::filesystem::exists(model)) {
        MESSAGE("skipped: the shipped model is absent");
        return;
    }
    incident_fixture::temp_root incident("http_runs_incident");
    incident_fixture::temp_root journals("http_runs_journal");
    incident_fixture::write_incident(incident.path);
    service_options so;
    so.engine.n_ctx = 16384;
    agent_service service(so);
    http::metrics stats;
    http::run_registry_options ro;
    ro.agents_dir = std::string(TACHYON_SOURCE_DIR) + "/agents";
    ro.journal_dir = journals.path.string();
    ro.max_active = 1;
    ro.model_paths = {model};
    ro.data_roots = {incident.path.string()};
    http::run_registry runs(service, ro, &stats);
    auto host = service.host(model);
    REQUIRE(host.ok());
    http::server_options o;
    o.host = "127.0.0.1";
    o.port = 0;
    http::server server(o, {{"incident-analyst", *host}}, stats, &runs);
    REQUIRE(server.start().ok());
    const uint16_t port = server.port();

    const std::string body = R"({"agent": "incident-analyst", "task": "Checkout fails with 502s. Find the root cause.", "inputs": {"incident_dir": ")" +
                             incident.path.string() + "\"}}";
    auto started = send(port, bhttp::verb::post, "/v1/runs", body);
    REQUIRE(started.status == 201);
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.parse(simdjson::padded_string(started.body));
    const std::string id{std::string_view(doc["id"])};
    CHECK(std::string_view(doc["state"]) == "running");

    // One at a time: a second run is refused while the first goes.
    if (runs.n_active() > 0) {
        auto second = send(port, bhttp::verb::post, "/v1/runs", body);
        if (runs.n_active() > 0) CHECK(second.status == 429);
    }

    // The live stream ends with run_end; ids are the sequence numbers.
    auto events = send(port, bhttp::verb::get, "/v1/runs/" + id + "/events");
    REQUIRE(events.status == 200);
    CHECK(events.raw[bhttp::field::content_type] == "text/event-stream");
    auto lines = sse_data_lines(events.body);
    REQUIRE(lines.size() >= 3);
    CHECK(lines.front().find(R"("type":"run_start")") != std::string::npos);
    CHECK(lines.back().find(R"("type":"run_end")") != std::string::npos);
    CHECK(events.body.rfind("id: 0\n", 0) == 0);
    {
        // The live events are the journal's lines, so ids stay valid after a restart.
        std::vector<std::string> file_lines;
        std::ifstream in(journals.path / (id + ".jsonl"));
        for (std::string line; std::getline(in, line);) file_lines.push_back(line);
        CHECK(lines == file_lines);
    }

    auto resumed = send(port, bhttp::verb::get, "/v1/runs/" + id + "/events", {}, {{"Last-Event-ID", "1"}});
    REQUIRE(resumed.status == 200);
    CHECK(resumed.body.rfind("id: 2\n", 0) == 0);
    CHECK(sse_data_lines(resumed.body).size() == lines.size() - 2);

    auto state = send(port, bhttp::verb::get, "/v1/runs/" + id);
    REQUIRE(state.status == 200);
    CHECK(state.body.find(R"("state":"running")") == std::string::npos);
    CHECK(state.body.find(R"("journal":)") != std::string::npos);
    CHECK(std::filesystem::exists(journals.path / (id + ".jsonl")));
    CHECK(send(port, bhttp::verb::post, "/v1/runs/" + id + "/cancel").status == 202);

    CHECK(send(port, bhttp::verb::get, "/v1/runs/nope").status == 404);
    auto no_agent = send(port, bhttp::verb::post, "/v1/runs", R"({"agent": "nobody", "task": "x"})");
    CHECK(no_agent.status == 404);
    auto traversal = send(port, bhttp::verb::post, "/v1/runs", R"({"agent": "../x", "task": "x"})");
    CHECK(traversal.status == 400);
    auto missing_input = send(port, bhttp::verb::post, "/v1/runs", R"({"agent": "incident-analyst", "task": "x"})");
    CHECK(missing_input.status == 400);
    CHECK(error_field(missing_input.body, "param") == "inputs.incident_dir");
    CHECK(send(port, bhttp::verb::get, "/v1/runs/" + id + "/events", {}, {{"Last-Event-ID", "x"}}).status == 400);
    server.shutdown();
}

TEST_CASE("http_server: after a restart, finished runs are served from their journals (state, result, events with Last-Event-ID)") {
    incident_fixture::temp_root root("http_runs_restart");
    const std::filesystem::path journals = root.path / "runs";
    // What an earlier server instance left: one finished run, one whose process died mid-call.
    std::string finished_id, cut_id;
    {
        auto w = journal::writer::create(journals, "20261130T010000Z-aaaaaa");
        REQUIRE(w.ok());
        finished_id = w->run_id();
        journal::run_start_event s;
        s.run_id = finished_id;
        s.agent = "incident-analyst";
        s.task = "find the root cause";
        s.started_at = "2026-11-30T01:00:00.000Z";
        REQUIRE(w->run_start(s).ok());
        REQUIRE(w->append(journal::turn_start_event{1}).ok());
        REQUIRE(w->model_turn({1, 100, 0, 20, 0, 5, 30, "<tool_call>...</tool_call>"}).ok());
        journal::tool_call_event c;
        c.step = 1;
        c.call_id = "call_1_0";
        c.name = "error_summary";
        c.ok = true;
        c.result = "payments-db: 3 ERROR lines";
        REQUIRE(w->tool_call(c).ok());
        journal::final_event f;
        f.answer_json = R"({"root_cause_service":"payments-db"})";
        f.verified = true;
        f.steps = 2;
        REQUIRE(w->final_answer(f).ok());
        REQUIRE(w->run_end({journal::run_state::succeeded, ""}).ok());

        auto w2 = journal::writer::create(journals, "20261130T020000Z-bbbbbb");
        REQUIRE(w2.ok());
        cut_id = w2->run_id();
        s.run_id = cut_id;
        REQUIRE(w2->run_start(s).ok());
        REQUIRE(w2->append(journal::turn_start_event{1}).ok());
    }
    // A journal outside the directory that a crafted id must not reach.
    { std::ofstream(root.path / "secret.jsonl") << "{}\n"; }

    service_options so;
    agent_service service(so);
    http::run_registry_options ro;
    ro.agents_dir = std::string(TACHYON_SOURCE_DIR) + "/agents";
    ro.journal_dir = journals.string();
    http::run_registry runs(service, ro, nullptr);
    fixture f({}, 1, &runs);

    auto state = send(f.port, bhttp::verb::get, "/v1/runs/" + finished_id);
    REQUIRE(state.status == 200);
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.parse(simdjson::padded_string(state.body));
    CHECK(std::string_view(doc["id"]) == finished_id);
    CHECK(std::string_view(doc["agent"]) == "incident-analyst");
    CHECK(std::string_view(doc["state"]) == "succeeded");
    CHECK(int64_t(doc["created"]) == 1796000400);  // 2026-11-30T01:00:00Z
    CHECK(std::string_view(doc["result"]["answer"]["root_cause_service"]) == "payments-db");
    CHECK(bool(doc["result"]["verified"]));
    CHECK(int64_t(doc["result"]["steps"]) == 2);
    CHECK(std::string_view(doc["result"]["journal"]).find(finished_id + ".jsonl") != std::string_view::npos);

    // The events are the journal's lines, with their seqs as ids.
    auto events = send(f.port, bhttp::verb::get, "/v1/runs/" + finished_id + "/events");
    REQUIRE(events.status == 200);
    std::vector<std::string> file_lines;
    {
        std::ifstream in(journals / (finished_id + ".jsonl"));
        for (std::string line; std::getline(in, line);) file_lines.push_back(line);
    }
    CHECK(sse_data_lines(events.body) == file_lines);
    CHECK(events.body.rfind("id: 0\n", 0) == 0);
    auto resumed = send(f.port, bhttp::verb::get, "/v1/runs/" + finished_id + "/events", {}, {{"Last-Event-ID", "2"}});
    REQUIRE(resumed.status == 200);
    CHECK(resumed.body.rfind("id: 3\n", 0) == 0);
    CHECK(sse_data_lines(resumed.body) == std::vector<std::string>(file_lines.begin() + 3, file_lines.end()));

    // A run whose process died reads as interrupted, its events as far as they go.
    auto cut = send(f.port, bhttp::verb::get, "/v1/runs/" + cut_id);
    REQUIRE(cut.status == 200);
    CHECK(cut.body.find(R"("state":"interrupted")") != std::string::npos);
    auto cut_events = send(f.port, bhttp::verb::get, "/v1/runs/" + cut_id + "/events");
    REQUIRE(cut_events.status == 200);
    CHECK(sse_data_lines(cut_events.body).size() == 2);

    // Ids that are not run ids never name a file.
    CHECK(send(f.port, bhttp::verb::get, "/v1/runs/nope").status == 404);
    CHECK(send(f.port, bhttp::verb::get, "/v1/runs/..").status == 404);
    CHECK(runs.find("../secret") == nullptr);
    CHECK(runs.find("..%2Fsecret") == nullptr);
    CHECK(runs.find(finished_id + ".jsonl") == nullptr);
    CHECK(runs.find("") == nullptr);
    CHECK(runs.find(finished_id) != nullptr);
}

TEST_CASE("http_server: with tracing, chat completions and agent runs continue the request's traceparent, and /metrics counts dropped spans") {
    otlp_test::receiver rx;
    telemetry::otel_config tc;
    tc.traces_url = rx.traces_url();
    auto tracer = telemetry::tracer::create(tc);
    REQUIRE(tracer.ok());
    const std::string parent_trace = "4bf92f3577b34da6a3ce929d0e0e4736", parent_span = "00f067aa0ba902b7";
    const std::string traceparent = "00-" + parent_trace + "-" + parent_span + "-01";
    {
        http::server_options o;
        o.tracer = *tracer;
        fixture f(o);
        f.stats.set_tracer(*tracer);
        REQUIRE(send(f.port, bhttp::verb::post, "/v1/chat/completions", chat_body(false, R"(, "max_tokens": 16, "seed": 5)"),
                     {{"traceparent", traceparent}})
                    .status == 200);
        REQUIRE(send(f.port, bhttp::verb::post, "/v1/chat/completions", chat_body(true)).status == 200);  // no traceparent: a new trace
        REQUIRE((*tracer)->flush(std::chrono::seconds(5)));
        auto spans = otlp_test::all_spans(rx.requests());
        REQUIRE(spans.size() == 2);
        const auto& s = spans[0];
        CHECK(s.name == "chat scripted");
        CHECK(s.trace_id == parent_trace);
        CHECK(s.parent_span_id == parent_span);
        CHECK(s.str("gen_ai.operation.name") == "chat");
        CHECK(s.str("gen_ai.provider.name") == "tachyon");
        CHECK(s.str("gen_ai.request.model") == "scripted");
        CHECK(s.str("gen_ai.request.max_tokens") == "16");
        CHECK(s.str("gen_ai.request.seed") == "5");
        CHECK(s.str("gen_ai.response.finish_reasons") == "length");  // the script's reply is longer than max_tokens
        CHECK(s.str("gen_ai.usage.output_tokens") == "16");
        CHECK(std::stoll(s.str("gen_ai.usage.input_tokens")) > 0);
        CHECK(s.has("gen_ai.usage.cache_read.input_tokens"));
        CHECK(s.has("gen_ai.response.time_to_first_chunk"));
        CHECK(s.str("gen_ai.response.id").rfind("chatcmpl-", 0) == 0);
        CHECK(spans[1].trace_id != parent_trace);
        CHECK(spans[1].parent_span_id.empty());
        auto m = send(f.port, bhttp::verb::get, "/metrics");
        CHECK(m.body.find("tachyon_otel_spans_dropped_total 0\n") != std::string::npos);
        CHECK(m.body.find("tachyon_otel_spans_exported_total 2\n") != std::string::npos);
    }
    {
        // A collector that refuses: the completion is served, its span dropped and counted.
        std::string dead;
        {
            boost::asio::io_context io;
            tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
            dead = "http://127.0.0.1:" + std::to_string(a.local_endpoint().port()) + "/v1/traces";
        }
        telemetry::otel_config dc;
        dc.traces_url = dead;
        auto dead_tracer = telemetry::tracer::create(dc);
        REQUIRE(dead_tracer.ok());
        http::server_options o;
        o.tracer = *dead_tracer;
        fixture f(o);
        f.stats.set_tracer(*dead_tracer);
        CHECK(send(f.port, bhttp::verb::post, "/v1/chat/completions", chat_body(false)).status == 200);
        REQUIRE((*dead_tracer)->flush(std::chrono::seconds(5)));
        auto m = send(f.port, bhttp::verb::get, "/metrics");
        CHECK(m.body.find("# TYPE tachyon_otel_spans_dropped_total counter") != std::string::npos);
        CHECK(m.body.find("tachyon_otel_spans_dropped_total 1\n") != std::string::npos);
    }

    // An agent run of the shipped model on the incident world.
    const std::string model = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";
    if (!std::filesystem::exists(model)) {
        MESSAGE("skipped the run: the shipped model is absent");
        return;
    }
    otlp_test::receiver run_rx;
    telemetry::otel_config rc;
    rc.traces_url = run_rx.traces_url();
    auto run_tracer = telemetry::tracer::create(rc);
    REQUIRE(run_tracer.ok());
    incident_fixture::temp_root incident("http_traced_incident");
    incident_fixture::temp_root journals("http_traced_journal");
    incident_fixture::write_incident(incident.path);
    service_options so;
    so.engine.n_ctx = 16384;
    so.tracer = *run_tracer;
    agent_service service(so);
    http::metrics stats;
    http::run_registry_options ro;
    ro.agents_dir = std::string(TACHYON_SOURCE_DIR) + "/agents";
    ro.journal_dir = journals.path.string();
    ro.model_paths = {model};
    ro.data_roots = {incident.path.string()};
    http::run_registry runs(service, ro, &stats);
    auto host = service.host(model);
    REQUIRE(host.ok());
    http::server_options o;
    o.host = "127.0.0.1";
    o.port = 0;
    http::server server(o, {{"incident-analyst", *host}}, stats, &runs);
    REQUIRE(server.start().ok());
    const std::string body = R"({"agent": "incident-analyst", "task": "Checkout fails with 502s. Find the root cause.", "inputs": {"incident_dir": ")" +
                             incident.path.string() + "\"}}";
    auto started = send(server.port(), bhttp::verb::post, "/v1/runs", body, {{"traceparent", traceparent}});
    REQUIRE(started.status == 201);
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.parse(simdjson::padded_string(started.body));
    const std::string id{std::string_view(doc["id"])};
    auto events = send(server.port(), bhttp::verb::get, "/v1/runs/" + id + "/events");  // ends with the run
    REQUIRE(events.status == 200);
    server.shutdown();
    REQUIRE((*run_tracer)->flush(std::chrono::seconds(5)));
    auto spans = otlp_test::all_spans(run_rx.requests());
    const otlp_test::parsed_span* run = nullptr;
    int n_chat = 0, n_tool = 0;
    for (const auto& s : spans) {
        if (s.name == "invoke_agent incident-analyst") run = &s;
        n_chat += s.name == "chat incident-analyst" ? 1 : 0;
        n_tool += s.name.rfind("execute_tool ", 0) == 0 ? 1 : 0;
    }
    REQUIRE(run != nullptr);
    CHECK(run->trace_id == parent_trace);
    CHECK(run->parent_span_id == parent_span);
    CHECK(run->str("gen_ai.agent.name") == "incident-analyst");
    CHECK(run->str("tachyon.run.id") == id);
    CHECK(n_chat >= 1);
    CHECK(n_chat == std::stoi(run->str("tachyon.run.turns")));
    CHECK(n_tool == std::stoi(run->str("tachyon.run.tool_calls")));
    for (const auto& s : spans) {
        CHECK(s.trace_id == parent_trace);
        if (&s != run) CHECK(s.parent_span_id == run->span_id);
    }
}
