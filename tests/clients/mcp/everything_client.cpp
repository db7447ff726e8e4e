// tachyon's MCP client (tools/mcp, and the agent side: mcp_servers in an
// agent file) against the reference server of the MCP project,
// @modelcontextprotocol/server-everything, over stdio: echo, structured
// content checked against the tool's outputSchema, a long-running tool with
// progress notifications, and a cancelled call.
// usage (run_everything.sh): MCP_EVERYTHING="node /path/to/dist/index.js" everything_client
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "runtime/agent/agent_def.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/constrain/json_schema.h"
#include "tools/mcp/mcp_client.h"

using namespace tachyon;

namespace {

std::vector<std::string> server_command() {
    const char* env = std::getenv("MCP_EVERYTHING");
    REQUIRE_MESSAGE(env != nullptr, "MCP_EVERYTHING names the server's command (node .../dist/index.js)");
    std::vector<std::string> argv;
    std::istringstream words(env);
    for (std::string w; words >> w;) argv.push_back(w);
    argv.push_back("stdio");
    return argv;
}

std::shared_ptr<tools::mcp::client> connect() {
    tools::mcp::server_config c;
    c.name = "everything";
    c.command = server_command();
    c.request_timeout = std::chrono::milliseconds(20000);
    auto validate = [](std::string_view schema_json, std::string_view instance) -> status {
        auto schema = json_schema::parse(schema_json, "structuredContent", "field");
        if (!schema) return schema.err();
        return schema->validate(instance);
    };
    auto made = tools::mcp::client::connect(c, validate);
    REQUIRE_MESSAGE(made.ok(), made.err().message);
    return *made;
}

}  // namespace

TEST_CASE("server-everything: initialize, tools/list with normalised schemas, echo") {
    auto c = connect();
    CHECK(c->protocol_version() == "2025-11-25");
    auto tools = c->tools();
    REQUIRE_MESSAGE(tools.ok(), tools.err().message);
    bool echo = false, structured = false, long_running = false;
    for (const auto& t : *tools) {
        echo |= t.name == "echo";
        structured |= t.name == "get-structured-content" && !t.output_schema.empty();
        long_running |= t.name == "trigger-long-running-operation";
        if (t.name == "echo") {
            CHECK(t.read_only);
            CHECK(t.input_schema.find("\"message\"") != std::string::npos);
        }
    }
    CHECK(echo);
    CHECK(structured);
    CHECK(long_running);
    auto r = c->call_tool("echo", R"({"message":"hello from tachyon"})");
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    CHECK_FALSE(r->is_error);
    CHECK(r->text.find("hello from tachyon") != std::string::npos);
    c->close();
}

TEST_CASE("server-everything: structuredContent comes back checked against the outputSchema") {
    auto c = connect();
    auto r = c->call_tool("get-structured-content", R"({"location":"Chicago"})");
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    CHECK_FALSE(r->is_error);
    CHECK(r->structured.find("\"temperature\"") != std::string::npos);
    CHECK(r->structured.find("\"conditions\"") != std::string::npos);
    // An argument the tool refuses: an error result or a JSON-RPC error, never a hang.
    auto bad = c->call_tool("get-structured-content", R"({"location":"Atlantis"})");
    CHECK((!bad.ok() || bad->is_error));
}

TEST_CASE("server-everything: a long-running tool reports progress, a cancelled one stops at once") {
    auto c = connect();
    std::vector<double> seen;
    std::optional<double> total;
    auto r = c->call_tool("trigger-long-running-operation", R"({"duration":0.4,"steps":4})", nullptr,
                          [&](double p, std::optional<double> t, std::string_view) {
                              seen.push_back(p);
                              total = t;
                          });
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    CHECK(r->text.find("Long running operation completed") != std::string::npos);
    CHECK(seen == std::vector<double>{1, 2, 3, 4});
    CHECK(total == 4);

    std::atomic<bool> cancel{false};
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel = true;
    });
    auto cut = c->call_tool("trigger-long-running-operation", R"({"duration":30,"steps":30})", &cancel);
    stopper.join();
    REQUIRE_FALSE(cut.ok());
    CHECK(cut.err().code == errc::cancelled);
    CHECK(c->ping().ok());  // the session goes on
}

TEST_CASE("server-everything: as an agent's mcp_servers entry, its tools join the agent's tools and run") {
    agent_definition agent;
    agent.file = "everything-agent.json";
    agent.name = "everything-agent";
    agent_mcp_server server;
    server.name = "everything";
    server.command = server_command();
    server.tools = {"echo", "get-sum"};
    agent.mcp_servers.push_back(server);
    mcp_sessions sessions;
    auto tools = sessions.tools_of(agent);
    REQUIRE_MESSAGE(tools.ok(), tools.err().message);
    REQUIRE(tools->size() == 2);
    CHECK((*tools)[0]->name() == "echo");
    CHECK((*tools)[1]->name() == "get-sum");
    auto sum = (*tools)[1]->invoke(R"({"a":2,"b":40})", {});
    REQUIRE_MESSAGE(sum.ok(), sum.err().message);
    CHECK(sum->find("42") != std::string::npos);
}
