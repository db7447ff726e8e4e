#include "runtime/mcp/mcp_server.h"

#include <doctest/doctest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "runtime/agent/tool_catalog.h"
#include "tests/runtime/scripted_model.h"
#include "tools/mcp/mcp_client.h"
#include "tests/runtime/mcp/waiting_tool.h"
#include "tests/runtime/telemetry/otlp_receiver.h"

using namespace tachyon;

namespace {

// Connects tachyon's own MCP client to a server in this process: what one
// sends, the other handles.
class loopback final : public tools::mcp::transport {
public:
    explicit loopback(mcp_server_options o) : options_(std::move(o)) {}
    status open(tools::mcp::transport_handlers h) override {
        handlers_ = std::move(h);
        auto s = mcp_server::make(options_, [this](std::string m) { handlers_.message(m); });
        if (!s) return s.err();
        server_ = std::move(s).value();
        return {};
    }
    status send(std::string_view m) override {
        server_->handle(m);
        return {};
    }
    void close() override { server_.reset(); }
    ~loopback() override { close(); }

private:
    mcp_server_options options_;
    tools::mcp::transport_handlers handlers_;
    std::unique_ptr<mcp_server> server_;
};

using mcp_test::waiting_tool;

struct temp_dir {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("tachyon_mcp_server_" + std::to_string(::getpid()));
    temp_dir() {
        std::filesystem::create_directories(path);
        std::ofstream(path / "notes.txt") << "the answer is 42\n";
    }
    ~temp_dir() { std::filesystem::remove_all(path); }
};

std::shared_ptr<tools::mcp::client> connect(const mcp_server_options& o) {
    tools::mcp::server_config c;
    c.name = "tachyon";
    c.request_timeout = std::chrono::milliseconds(5000);
    auto made = tools::mcp::client::connect(c, [o] { return std::make_unique<loopback>(o); });
    REQUIRE_MESSAGE(made.ok(), made.err().message);
    return *made;
}

}  // namespace

TEST_CASE("mcp serve: built-in tools are listed with their schemas and called, a bad call is an isError result") {
    temp_dir d;
    auto made = make_builtin_tools({{"read_file", {{"roots", d.path.string()}}}});
    REQUIRE(made.ok());
    mcp_server_options o;
    o.tools = *made;
    auto c = connect(o);
    CHECK(c->protocol_version() == "2025-11-25");
    auto tools = c->tools();
    REQUIRE(tools.ok());
    REQUIRE(tools->size() == 1);
    CHECK((*tools)[0].name == "read_file");
    CHECK((*tools)[0].read_only);
    CHECK((*tools)[0].input_schema.find("\"path\"") != std::string::npos);

    auto r = c->call_tool("read_file", R"({"path":")" + (d.path / "notes.txt").string() + R"("})");
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    CHECK_FALSE(r->is_error);
    CHECK(r->text.find("the answer is 42") != std::string::npos);

    auto bad = c->call_tool("read_file", R"({"path": 7})");
    REQUIRE(bad.ok());
    CHECK(bad->is_error);  // the schema's words, for the caller's model
    CHECK(bad->text.find("read_file") != std::string::npos);

    auto unknown = c->call_tool("read_file", R"({"path":"/etc/passwd"})");
    REQUIRE(unknown.ok());
    CHECK(unknown->is_error);
}

TEST_CASE("mcp serve: notifications/cancelled cancels a running call") {
    auto wait = std::make_shared<waiting_tool>();
    mcp_server_options o;
    o.tools = {wait};
    auto c = connect(o);
    std::atomic<bool> cancel{false};
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        cancel = true;
    });
    auto r = c->call_tool("wait", "{}", &cancel);
    stopper.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::cancelled);
    for (int i = 0; i < 200 && !wait->saw_cancel; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(wait->saw_cancel);  // the server's call saw it
}

// Runs a real agent on the agent service: it crashed (generate_remote
// reached on a local model) while the turn picked its generator with a
// conditional expression of two co_awaits, which g++ 12 evaluates both of.
TEST_CASE("mcp serve: an agent is a tool whose call runs it to an answer, with progress per turn and structuredContent") {
    auto agent = std::make_shared<agent_definition>();
    agent->file = "echo-agent.json";
    agent->name = "summarise";
    agent->description = "Summarises.";
    agent->instructions = "Summarise {topic}.";
    agent->model = "scripted.gguf";
    agent->chat_format = "chatml";
    agent->declares_inputs = true;
    agent->inputs["topic"] = {agent_input_type::string, "what to summarise"};
    agent->output_schema = R"({"type":"object","properties":{"status":{"type":"string"}},"required":["status"]})";

    service_options so;
    agent_service service(so);
    auto tok = scripted::chatml_tokenizer();
    auto m = std::make_unique<scripted::model>(tok, std::vector<std::string>{R"({"status": "summarised"})"});
    m->set_fallback(tok.find_token("<|im_end|>"));
    engine_options eo;
    eo.n_threads = 1;  // a scripted model has no weights to size the team by
    service.add_host(agent->model, model_host::create(std::move(m), tok, chat_format::chatml, eo));

    mcp_server_options o;
    o.agents = {agent};
    o.service = &service;
    auto c = connect(o);
    auto tools = c->tools();
    REQUIRE(tools.ok());
    REQUIRE(tools->size() == 1);
    CHECK((*tools)[0].name == "summarise");
    CHECK((*tools)[0].input_schema.find("\"required\":[\"task\",\"topic\"]") != std::string::npos);
    CHECK((*tools)[0].output_schema == agent->output_schema);

    int turns = 0;
    auto r = c->call_tool("summarise", R"({"task": "go", "topic": "mcp"})", nullptr,
                          [&](double p, std::optional<double>, std::string_view msg) {
                              ++turns;
                              CHECK(p == 1);
                              CHECK(msg == "turn 1 done");
                          });
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    CHECK_FALSE(r->is_error);
    CHECK(r->structured == R"({"status":"summarised"})");
    CHECK(turns == 1);

    auto missing = c->call_tool("summarise", R"({"task": "go"})");
    REQUIRE(missing.ok());
    CHECK(missing->is_error);
    CHECK(missing->text.find("topic") != std::string::npos);
}

namespace {
// Remembers the traceparent its call was given.
class trace_probe_tool final : public tools::tool {
public:
    std::string_view name() const override { return "trace_probe"; }
    std::string_view description() const override { return "Tells the trace context of its call."; }
    std::string_view parameters_schema() const override { return R"({"type":"object","properties":{}})"; }
    result<std::string> invoke(std::string_view, const tools::call_context& ctx) override {
        seen = std::string(ctx.traceparent);
        return std::string("ok");
    }
    std::string seen;
};
}  // namespace

TEST_CASE("mcp serve: a call continues the caller's params._meta.traceparent, as a server span when traced") {
    const std::string caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto probe = std::make_shared<trace_probe_tool>();
    mcp_server_options o;
    o.tools = {probe};
    {
        // No tracer: what the call does continues the caller's context itself.
        auto c = connect(o);
        REQUIRE(c->call_tool("trace_probe", "{}", nullptr, {}, caller).ok());
        CHECK(probe->seen == caller);
        REQUIRE(c->call_tool("trace_probe", "{}", nullptr, {}, "00-garbage\r\nX-Evil: 1").ok());
        CHECK(probe->seen.empty());  // a malformed one goes nowhere
    }
    otlp_test::receiver rx;
    telemetry::otel_config config;
    config.traces_url = rx.traces_url();
    config.service_name = "mcp-server-test";
    auto tracer = telemetry::tracer::create(config);
    REQUIRE(tracer.ok());
    o.tracer = *tracer;
    auto c = connect(o);
    auto r = c->call_tool("trace_probe", "{}", nullptr, {}, caller);
    REQUIRE(r.ok());
    CHECK_FALSE(r->is_error);
    REQUIRE((*tracer)->flush(std::chrono::seconds(5)));
    const auto spans = otlp_test::all_spans(rx.requests());
    REQUIRE(spans.size() == 1);
    const auto& s = spans[0];
    CHECK(s.name == "tools/call trace_probe");
    CHECK(s.kind == 2);  // server
    CHECK(s.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(s.parent_span_id == "00f067aa0ba902b7");
    CHECK(s.str("mcp.method.name") == "tools/call");
    CHECK(s.str("gen_ai.tool.name") == "trace_probe");
    CHECK(s.str("gen_ai.operation.name") == "execute_tool");
    CHECK(s.has("jsonrpc.request.id"));
    CHECK_FALSE(s.has("error.type"));
    // The tool's own outgoing calls are children of the server span.
    CHECK(probe->seen == "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.span_id + "-01");
}

TEST_CASE("mcp serve: two tools of one name, and agents without a service, are refused") {
    auto wait = std::make_shared<waiting_tool>();
    mcp_server_options o;
    o.tools = {wait, wait};
    auto twice = mcp_server::make(o, [](std::string) {});
    REQUIRE_FALSE(twice.ok());
    CHECK(twice.err().message == "mcp serve: tool 'wait' is offered twice");
    mcp_server_options no_service;
    no_service.agents = {std::make_shared<agent_definition>()};
    CHECK_FALSE(mcp_server::make(no_service, [](std::string) {}).ok());
}

TEST_CASE("mcp serve: a request id still in use by a running call is refused, answers go to the reply of their request") {
    auto wait = std::make_shared<waiting_tool>();
    mcp_server_options o;
    o.tools = {wait};
    std::vector<std::string> to_server;
    std::mutex m;
    auto server = mcp_server::make(o, [&](std::string msg) {
        std::lock_guard lock(m);
        to_server.push_back(std::move(msg));
    });
    REQUIRE(server.ok());
    std::vector<std::string> replies;
    auto reply = [&](std::string msg) {
        std::lock_guard lock(m);
        replies.push_back(std::move(msg));
    };
    const std::string call = R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"wait"}})";
    (*server)->handle(call, reply);
    for (int i = 0; i < 1000 && !wait->started.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    (*server)->handle(call, reply);  // the same id again
    (*server)->handle(R"({"jsonrpc":"2.0","id":10,"method":"ping"})", reply);
    (*server)->shutdown();
    std::lock_guard lock(m);
    CHECK(to_server.empty());  // nothing went to the server-wide sender
    REQUIRE(replies.size() == 2);
    CHECK(replies[0].find("already in use") != std::string::npos);
    CHECK(replies[1] == R"({"jsonrpc":"2.0","id":10,"result":{}})");
}

TEST_CASE("mcp serve: with a confinement, an agent's path input outside the roots is an isError result naming it") {
    temp_dir d;
    auto agent = std::make_shared<agent_definition>();
    agent->file = "reader.json";
    agent->name = "reader";
    agent->model = "never-loaded.gguf";
    agent->declares_inputs = true;
    agent->inputs["dir"] = {agent_input_type::directory, "where to read"};
    agent_service service(service_options{});
    mcp_server_options o;
    o.agents = {agent};
    o.service = &service;
    o.confinement = input_confinement{{d.path.string()}};
    auto c = connect(o);
    auto r = c->call_tool("reader", R"({"task":"read","dir":"/etc"})");
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    CHECK(r->is_error);
    CHECK(r->text.find("inputs.dir") != std::string::npos);
}
