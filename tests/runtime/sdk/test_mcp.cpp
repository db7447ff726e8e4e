#include "tachyon/mcp.h"

#include <doctest/doctest.h>

#include "tachyon/agent.h"
#include "tachyon/runtime.h"
#include "tests/runtime/sdk/sdk_fixture.h"

using namespace tachyon::sdk;
using sdk_fixture::call;

namespace {

mcp_server fake_server() {
    mcp_server m;
    m.name = "fake";
    m.command = {"/usr/bin/python3", std::string(TACHYON_SOURCE_DIR) + "/tests/tools/mcp/fake_mcp_server.py", "normal"};
    m.tools = {"echo"};
    return m;
}

}  // namespace

TEST_CASE("sdk: an agent_spec's MCP server lends its tools to a run") {
    sdk_fixture::model_dir dir;
    sdk_fixture::scripted_host model({call("echo", R"({"text": "hi from mcp"})"), R"({"status": "ok"})"});
    agent_spec spec;
    spec.name = "mcp-user";
    spec.instructions = "Echo.";
    spec.model = dir.model_file();
    spec.chat_format = "chatml";
    spec.output_schema = R"({"type":"object","properties":{"status":{"type":"string"}},"required":["status"]})";
    spec.mcp_servers = {fake_server()};
    auto a = agent::build(spec);
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    runtime rt;
    runtime_access::add_model(rt, dir.model_file(), model.host);
    run_result r = rt.run(*a, "say hi");
    CHECK(r.state == run_state::succeeded);
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].name == "echo");
    CHECK(r.calls[0].ok);
    CHECK(r.calls[0].result == "hi from mcp");
    // The model was shown the server's tool with its schema.
    CHECK(model.transcript().find(R"("name": "echo", "description": "Echo the text back.")") != std::string::npos);
}

TEST_CASE("sdk: a bad mcp_server is named with the agent and the field") {
    sdk_fixture::model_dir dir;
    agent_spec spec;
    spec.name = "bad";
    spec.instructions = "x";
    spec.model = dir.model_file();
    auto error_of = [&](mcp_server m) {
        spec.mcp_servers = {m};
        auto a = agent::build(spec);
        REQUIRE_FALSE(a.ok());
        return a.error().message;
    };
    mcp_server both = fake_server();
    both.url = "http://127.0.0.1:9/mcp";
    CHECK(error_of(both).find("agent 'bad': mcp_servers[0]: give exactly one of command (stdio) or url") != std::string::npos);
    mcp_server nameless = fake_server();
    nameless.name.clear();
    CHECK(error_of(nameless).find("agent 'bad': mcp_servers[0].name: must not be empty") != std::string::npos);
    mcp_server https;
    https.name = "r";
    https.url = "https://example.org/mcp";
    CHECK(error_of(https).find("mcp_servers[0].url: url 'https://example.org/mcp': expected http://") != std::string::npos);
}
