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

    auto get = send(port, bhttp::verb::get, {}, {{"MCP-Session-Id", id}});
    CHECK(get.status == 405);
    CHECK(std::string(get.raw[bhttp::field::allow]) == "POST, DELETE");

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

TEST_CASE("/mcp: loopback origins") {
    CHECK(http::is_loopback_origin("http://localhost:5173"));
    CHECK(http::is_loopback_origin("http://127.0.0.1"));
    CHECK(http::is_loopback_origin("http://[::1]:8080"));
    CHECK_FALSE(http::is_loopback_origin("http://evil.example"));
    CHECK_FALSE(http::is_loopback_origin("http://localhost.evil.example"));
    CHECK_FALSE(http::is_loopback_origin("null"));
}
