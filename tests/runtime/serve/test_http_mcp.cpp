#include "runtime/serve/http_mcp.h"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <atomic>
#include <thread>

#include "runtime/serve/http_server.h"
#include "tests/runtime/scripted_model.h"
#include "tools/mcp/mcp_client.h"
#include "tests/runtime/mcp/waiting_tool.h"

using namespace tachyon;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

using mcp_test::waiting_tool;

class echo_tool final : public tools::tool {
public:
    std::string_view name() const override { return "echo"; }
    std::string_view description() const override { return "Echoes its text."; }
    std::string_view parameters_schema() const override {
        return R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})";
    }
    result<std::string> invoke(std::string_view args, const tools::call_context&) override { return std::string(args); }
};

struct reply {
    int status = 0;
    std::string body;
    bhttp::response<bhttp::string_body> raw;
};

reply send(uint16_t port, bhttp::verb method, const std::string& body, std::vector<std::pair<std::string, std::string>> headers = {}) {
    boost::asio::io_context io;
    beast::tcp_stream stream(io);
    stream.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    bhttp::request<bhttp::string_body> req{method, "/mcp", 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.set(bhttp::field::accept, "application/json, text/event-stream");
    if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    bhttp::write(stream, req);
    beast::flat_buffer buffer;
    reply r;
    beast::error_code ec;
    bhttp::read(stream, buffer, r.raw, ec);
    if (ec) return r;
    r.status = r.raw.result_int();
    r.body = r.raw.body();
    return r;
}

const std::string k_initialize =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

// `tachyon serve` with /mcp over the given tools and agents.
struct fixture {
    http::metrics stats;
    std::unique_ptr<http::mcp_endpoint> mcp;
    std::unique_ptr<http::server> server;
    explicit fixture(mcp_server_options o, std::string api_key = {}) {
        http::mcp_endpoint_options mo;
        mo.server = std::move(o);
        mo.n_workers = 2;
        mo.stats = &stats;
        auto made = http::mcp_endpoint::make(std::move(mo));
        REQUIRE_MESSAGE(made.ok(), made.err().message);
        mcp = std::move(made).value();
        http::server_options so;
        so.port = 0;
        so.api_key = std::move(api_key);
        so.mcp = mcp.get();
        so.shutdown_deadline = std::chrono::milliseconds(200);
        server = std::make_unique<http::server>(so, std::vector<http::metrics::model_entry>{}, stats, nullptr);
        REQUIRE(server->start().ok());
    }
    uint16_t port() const { return server->port(); }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port()) + "/mcp"; }
    std::string open_session() {
        auto r = send(port(), bhttp::verb::post, k_initialize);
        REQUIRE(r.status == 200);
        return std::string(r.raw["MCP-Session-Id"]);
    }
};

// An event stream read as it comes, on a connection of its own (GET /mcp,
// or a POST answered as a stream).
struct sse_reader {
    struct event {
        std::string id, data;
        bool end = false;  // the stream ended (or nothing came in time)
    };
    boost::asio::io_context io;
    beast::tcp_stream stream{io};
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    int status = 0;
    std::string content_type;

    sse_reader(uint16_t port, bhttp::verb method, const std::string& body, std::vector<std::pair<std::string, std::string>> headers) {
        stream.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
        bhttp::request<bhttp::string_body> req{method, "/mcp", 11};
        req.set(bhttp::field::host, "127.0.0.1");
        req.set(bhttp::field::accept, method == bhttp::verb::get ? "text/event-stream" : "application/json, text/event-stream");
        if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
        for (const auto& [k, v] : headers) req.set(k, v);
        req.body() = body;
        req.prepare_payload();
        bhttp::write(stream, req);
        parser.body_limit(boost::none);
        stream.expires_after(std::chrono::seconds(10));
        beast::error_code ec;
        bhttp::read_header(stream, buffer, parser, ec);
        if (ec) return;
        status = parser.get().result_int();
        content_type = std::string(parser.get()[bhttp::field::content_type]);
    }
    // The next event (comment lines skipped); an event with an id and no
    // data is one to resume from.
    event next() {
        while (true) {
            std::string& body = parser.get().body();
            if (const size_t end = body.find("\n\n"); end != std::string::npos) {
                event e;
                std::string block = body.substr(0, end);
                body.erase(0, end + 2);
                bool any = false;
                for (size_t start = 0; start <= block.size();) {
                    size_t nl = block.find('\n', start);
                    if (nl == std::string::npos) nl = block.size();
                    const std::string line = block.substr(start, nl - start);
                    if (line.rfind("id: ", 0) == 0) e.id = line.substr(4), any = true;
                    if (line.rfind("data: ", 0) == 0) e.data = line.substr(6), any = true;
                    start = nl + 1;
                }
                if (any) return e;
                continue;
            }
            if (parser.is_done()) return {{}, {}, true};
            stream.expires_after(std::chrono::seconds(10));
            beast::error_code ec;
            bhttp::read_some(stream, buffer, parser, ec);
            if (ec) return {{}, {}, true};
        }
    }
};

// A tool whose call answers "opened" once the test opens its gate.
class gate_tool final : public tools::tool {
public:
    std::string_view name() const override { return "gate"; }
    std::string_view description() const override { return "Answers once opened."; }
    std::string_view parameters_schema() const override { return R"({"type":"object","properties":{}})"; }
    result<std::string> invoke(std::string_view, const tools::call_context& ctx) override {
        started = true;
        while (!opened && !ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        saw_cancel = ctx.cancelled();
        return std::string("opened");
    }
    std::atomic<bool> started{false}, opened{false}, saw_cancel{false};
};

std::shared_ptr<tools::mcp::client> connect(const std::string& url) {
    tools::mcp::server_config c;
    c.name = "tachyon-http";
    c.url = url;
    c.request_timeout = std::chrono::milliseconds(10000);
    auto made = tools::mcp::client::connect(c);
    REQUIRE_MESSAGE(made.ok(), made.err().message);
    return *made;
}

}  // namespace

TEST_CASE("/mcp: tachyon's own client lists and calls tools, an agent's call streams its progress and answer") {
    auto agent = std::make_shared<agent_definition>();
    agent->file = "summarise.json";
    agent->name = "summarise";
    agent->instructions = "Summarise.";
    agent->model = "scripted.gguf";
    agent->chat_format = "chatml";
    agent->output_schema = R"({"type":"object","properties":{"status":{"type":"string"}},"required":["status"]})";
    agent_service service(service_options{});
    auto tok = scripted::chatml_tokenizer();
    auto m = std::make_unique<scripted::model>(tok, std::vector<std::string>{R"({"status": "summarised"})"});
    m->set_fallback(tok.find_token("<|im_end|>"));
    engine_options eo;
    eo.n_threads = 1;
    service.add_host(agent->model, model_host::create(std::move(m), tok, chat_format::chatml, eo));

    mcp_server_options o;
    o.tools = {std::make_shared<echo_tool>()};
    o.agents = {agent};
    o.service = &service;
    fixture f(o);
    auto c = connect(f.url());
    CHECK(c->protocol_version() == "2025-11-25");
    auto tools = c->tools();
    REQUIRE(tools.ok());
    REQUIRE(tools->size() == 2);
    CHECK((*tools)[0].name == "echo");
    CHECK((*tools)[1].name == "summarise");

    auto echoed = c->call_tool("echo", R"({"text":"hi"})");
    REQUIRE_MESSAGE(echoed.ok(), echoed.err().message);
    CHECK(echoed->text == R"({"text":"hi"})");
    auto bad = c->call_tool("echo", R"({"text":7})");
    REQUIRE(bad.ok());
    CHECK(bad->is_error);

    int turns = 0;
    auto r = c->call_tool("summarise", R"({"task":"go"})", nullptr, [&](double p, std::optional<double>, std::string_view) {
        ++turns;
        CHECK(p == 1);
    });
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    CHECK_FALSE(r->is_error);
    CHECK(r->structured == R"({"status":"summarised"})");
    CHECK(turns == 1);  // the progress notification came on the call's event stream
    CHECK(f.mcp->n_sessions() == 1);
    c->close();  // DELETE
    for (int i = 0; i < 100 && f.mcp->n_sessions() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(f.mcp->n_sessions() == 0);
}

TEST_CASE("/mcp: sessions, protocol version, Origin, methods and bodies are checked") {
    mcp_server_options o;
    o.tools = {std::make_shared<echo_tool>()};
    fixture f(o);
    const uint16_t port = f.port();
    const std::string list = R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})";

    auto init = send(port, bhttp::verb::post, k_initialize, {{"Origin", "http://localhost:5173"}});
    REQUIRE(init.status == 200);
    const std::string id(init.raw["MCP-Session-Id"]);
    CHECK(id.size() == 32);
    CHECK(init.body.find("\"protocolVersion\":\"2025-11-25\"") != std::string::npos);

    auto listed = send(port, bhttp::verb::post, list, {{"MCP-Session-Id", id}, {"MCP-Protocol-Version", "2025-11-25"}});
    CHECK(listed.status == 200);
    CHECK(std::string(listed.raw[bhttp::field::content_type]) == "application/json");
    CHECK(listed.body.find("\"name\":\"echo\"") != std::string::npos);

    auto no_session = send(port, bhttp::verb::post, list);
    CHECK(no_session.status == 400);
    CHECK(no_session.body.find("MCP-Session-Id") != std::string::npos);
    CHECK(send(port, bhttp::verb::post, list, {{"MCP-Session-Id", "nope"}}).status == 404);
    auto version = send(port, bhttp::verb::post, list, {{"MCP-Session-Id", id}, {"MCP-Protocol-Version", "1999-01-01"}});
    CHECK(version.status == 400);
    CHECK(version.body.find("1999-01-01") != std::string::npos);

    auto foreign = send(port, bhttp::verb::post, k_initialize, {{"Origin", "http://evil.example"}});
    CHECK(foreign.status == 403);
    CHECK(foreign.body.find("evil.example") != std::string::npos);
    CHECK(send(port, bhttp::verb::post, k_initialize, {{"Origin", "http://127.0.0.1.evil.example:80"}}).status == 403);

    auto put = send(port, bhttp::verb::put, list, {{"MCP-Session-Id", id}});
    CHECK(put.status == 405);
    CHECK(std::string(put.raw[bhttp::field::allow]) == "GET, POST, DELETE");

    CHECK(send(port, bhttp::verb::post, R"({"jsonrpc":"2.0","method":"notifications/initialized"})", {{"MCP-Session-Id", id}}).status == 202);
    CHECK(send(port, bhttp::verb::post, "[" + list + "]", {{"MCP-Session-Id", id}}).status == 400);
    CHECK(send(port, bhttp::verb::post, "{not json", {{"MCP-Session-Id", id}}).status == 400);
    CHECK(send(port, bhttp::verb::post, list, {{"MCP-Session-Id", id}, {"Content-Type", "text/plain"}}).status == 415);

    CHECK(send(port, bhttp::verb::delete_, {}, {{"MCP-Session-Id", id}}).status == 204);
    CHECK(send(port, bhttp::verb::post, list, {{"MCP-Session-Id", id}}).status == 404);  // ended
    CHECK(send(port, bhttp::verb::delete_, {}, {{"MCP-Session-Id", id}}).status == 404);
}

TEST_CASE("/mcp: off loopback the API key is required, as for every route") {
    mcp_server_options o;
    o.tools = {std::make_shared<echo_tool>()};
    fixture f(o, "0123456789abcdef0123");
    CHECK(send(f.port(), bhttp::verb::post, k_initialize).status == 401);
    CHECK(send(f.port(), bhttp::verb::post, k_initialize, {{"Authorization", "Bearer 0123456789abcdef0123"}}).status == 200);
}

TEST_CASE("/mcp: a cancelled call's stream ends and its tool sees the cancel, shutdown ends a call still running") {
    auto wait = std::make_shared<waiting_tool>();
    mcp_server_options o;
    o.tools = {wait};
    fixture f(o);
    auto c = connect(f.url());
    std::atomic<bool> cancel{false};
    std::thread stopper([&] {
        for (int i = 0; i < 1000 && !wait->started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        cancel = true;
    });
    auto r = c->call_tool("wait", "{}", &cancel);
    stopper.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::cancelled);
    for (int i = 0; i < 500 && !wait->saw_cancel; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK(wait->saw_cancel);

    // A call that runs when the server stops: cancelled, its stream ended, shutdown returns.
    auto wait2 = std::make_shared<waiting_tool>();
    mcp_server_options o2;
    o2.tools = {wait2};
    fixture g(o2);
    const std::string id = g.open_session();
    std::thread caller([&] {
        auto res = send(g.port(), bhttp::verb::post, R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait"}})",
                        {{"MCP-Session-Id", id}});
        CHECK(res.body.find("\"id\":5,\"result\"") == std::string::npos);  // never answered
    });
    for (int i = 0; i < 1000 && !wait2->started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(wait2->started);
    // The id of a call still running is not taken a second time.
    auto again = send(g.port(), bhttp::verb::post, R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait"}})",
                      {{"MCP-Session-Id", id}});
    CHECK(again.status == 400);
    CHECK(again.body.find("already in use") != std::string::npos);
    g.server->shutdown();
    caller.join();
    CHECK(wait2->saw_cancel);
}

TEST_CASE("/mcp: GET opens the session's event stream, one at a time: notifications with ids, Last-Event-ID replays what was missed and takes the stream over") {
    mcp_server_options o;
    o.tools = {std::make_shared<echo_tool>()};
    fixture f(o);
    const uint16_t port = f.port();
    auto init = send(port, bhttp::verb::post, k_initialize);
    REQUIRE(init.status == 200);
    CHECK(init.body.find("\"listChanged\":true") != std::string::npos);
    const std::string id(init.raw["MCP-Session-Id"]);
    const std::string changed = "notifications/tools/list_changed";

    f.mcp->notify(changed);  // before any GET: kept for the first one
    auto first = std::make_unique<sse_reader>(port, bhttp::verb::get, "", std::vector<std::pair<std::string, std::string>>{{"MCP-Session-Id", id}});
    REQUIRE(first->status == 200);
    CHECK(first->content_type == "text/event-stream");
    auto prime = first->next();
    CHECK(prime.id == "0-0");  // nothing sent yet: resuming from here replays everything
    CHECK(prime.data.empty());
    f.mcp->notify(changed);
    auto e1 = first->next(), e2 = first->next();
    CHECK(e1.id == "0-1");
    CHECK(e1.data == R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    CHECK(e2.id == "0-2");

    // The connection breaks; what is sent meanwhile is replayed to the GET that resumes after 0-1.
    first.reset();
    f.mcp->notify(changed);
    sse_reader resumed(port, bhttp::verb::get, "", {{"MCP-Session-Id", id}, {"Last-Event-ID", "0-1"}});
    REQUIRE(resumed.status == 200);
    CHECK(resumed.next().id == "0-2");
    CHECK(resumed.next().id == "0-3");
    f.mcp->notify(changed);
    CHECK(resumed.next().id == "0-4");  // and the stream goes on

    // One GET stream at a time; a resumption takes it over: the older one ends, each message goes out once.
    auto second = send(port, bhttp::verb::get, {}, {{"MCP-Session-Id", id}, {"Accept", "text/event-stream"}});
    CHECK(second.status == 409);
    CHECK(second.body.find("Last-Event-ID") != std::string::npos);
    sse_reader newer(port, bhttp::verb::get, "", {{"MCP-Session-Id", id}, {"Last-Event-ID", "0-4"}});
    REQUIRE(newer.status == 200);
    CHECK(resumed.next().end);
    f.mcp->notify(changed);
    CHECK(newer.next().id == "0-5");

    auto bad = send(port, bhttp::verb::get, {}, {{"MCP-Session-Id", id}, {"Accept", "text/event-stream"}, {"Last-Event-ID", "yesterday"}});
    CHECK(bad.status == 400);
    CHECK(bad.body.find("yesterday") != std::string::npos);
    CHECK(send(port, bhttp::verb::get, {}, {{"MCP-Session-Id", id}, {"Accept", "text/event-stream"}, {"Last-Event-ID", "9-1"}}).status == 400);
    CHECK(send(port, bhttp::verb::get, {}, {{"MCP-Session-Id", id}, {"Accept", "application/json"}}).status == 406);
    CHECK(send(port, bhttp::verb::get, {}, {{"Accept", "text/event-stream"}}).status == 400);
    CHECK(send(port, bhttp::verb::get, {}, {{"MCP-Session-Id", "nope"}, {"Accept", "text/event-stream"}}).status == 404);

    // Ending the session ends its stream.
    CHECK(send(port, bhttp::verb::delete_, {}, {{"MCP-Session-Id", id}}).status == 204);
    CHECK(newer.next().end);
}

TEST_CASE("/mcp: a POST's event stream carries ids, and a client that lost it resumes with GET and Last-Event-ID and gets the answer") {
    auto gate = std::make_shared<gate_tool>();
    mcp_server_options o;
    o.tools = {gate};
    fixture f(o);
    const std::string id = f.open_session();
    auto call = std::make_unique<sse_reader>(f.port(), bhttp::verb::post, R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gate"}})",
                                             std::vector<std::pair<std::string, std::string>>{{"MCP-Session-Id", id}});
    REQUIRE(call->status == 200);
    REQUIRE(call->content_type == "text/event-stream");
    const auto prime = call->next();
    REQUIRE_FALSE(prime.id.empty());
    CHECK(prime.data.empty());
    for (int i = 0; i < 1000 && !gate->started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(gate->started);
    call.reset();  // the connection breaks while the call runs; that does not cancel it
    gate->opened = true;

    sse_reader resumed(f.port(), bhttp::verb::get, "", {{"MCP-Session-Id", id}, {"Last-Event-ID", prime.id}});
    REQUIRE(resumed.status == 200);
    const auto answer = resumed.next();
    CHECK(answer.data.find(R"("id":7,"result")") != std::string::npos);
    CHECK(answer.data.find("opened") != std::string::npos);
    CHECK(answer.id.substr(0, answer.id.find('-')) == prime.id.substr(0, prime.id.find('-')));  // the same stream
    CHECK(resumed.next().end);  // a POST's stream ends with its answer
    CHECK_FALSE(gate->saw_cancel);

    // Resumed once more from the same id, the answer comes again (the stream is kept);
    // from the answer on, nothing follows: the stream is gone.
    sse_reader again(f.port(), bhttp::verb::get, "", {{"MCP-Session-Id", id}, {"Last-Event-ID", prime.id}});
    CHECK(again.next().id == answer.id);
    CHECK(send(f.port(), bhttp::verb::get, {}, {{"MCP-Session-Id", id}, {"Accept", "text/event-stream"}, {"Last-Event-ID", answer.id}}).status == 410);
}

TEST_CASE("/mcp: tachyon's client holds the session's GET stream and lists the tools again after notifications/tools/list_changed") {
    mcp_server_options o;
    o.tools = {std::make_shared<echo_tool>()};
    fixture f(o);
    // Answers with status 200 on /mcp so far: initialize, tools/list, the GET stream, then each tools/list again.
    auto answered = [&f] {
        const std::string text = f.stats.render({}, {});
        const std::string key = "tachyon_http_requests_total{route=\"/mcp\",status=\"200\"} ";
        const size_t at = text.find(key);
        return at == std::string::npos ? 0L : std::stol(text.substr(at + key.size()));
    };
    auto c = connect(f.url());
    for (int i = 0; i < 1000 && answered() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(answered() == 3);  // initialize, tools/list and the client's GET stream
    REQUIRE(c->tools().ok());  // listed already: no request
    CHECK(answered() == 3);
    f.mcp->notify("notifications/tools/list_changed");
    for (int i = 0; i < 1000 && answered() == 3; ++i) {
        REQUIRE(c->tools().ok());  // lists again once the notification has come on the GET stream
        if (answered() == 3) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    CHECK(answered() == 4);
}

TEST_CASE("/mcp: loopback origins") {
    CHECK(http::is_loopback_origin("http://localhost:5173"));
    CHECK(http::is_loopback_origin("http://127.0.0.1"));
    CHECK(http::is_loopback_origin("http://[::1]:8080"));
    CHECK_FALSE(http::is_loopback_origin("http://evil.example"));
    CHECK_FALSE(http::is_loopback_origin("http://localhost.evil.example"));
    CHECK_FALSE(http::is_loopback_origin("null"));
}
