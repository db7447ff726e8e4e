// tachyon's MCP client (tools/mcp) as the client under test of the MCP
// project's conformance suite (@modelcontextprotocol/conformance, client
// mode). The suite starts a server for one scenario, then runs this program
// with the server's URL as its last argument and the scenario's name in
// MCP_CONFORMANCE_SCENARIO; the server records what the client did and
// judges it. Each scenario expects a few steps of the client:
//  - initialize: initialize, then list the tools;
//  - tools_call: call add_numbers with two numbers (its fixture server
//    fails every client with the pinned SDK: run_conformance_client.sh);
//  - sse-retry: call test_reconnection, whose event stream the server closes
//    before the answer; the client resumes it with GET and Last-Event-ID
//    after the SSE retry delay and gets the answer there.
// Exit status 0 when every step worked, 1 otherwise (the error on stderr).
// usage (run_conformance_client.sh): conformance_client URL
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/mcp/mcp_client.h"

using namespace tachyon;

namespace {

int conformance_fail(const std::string& why) {
    std::fprintf(stderr, "conformance client: %s\n", why.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return conformance_fail("usage: conformance_client URL (MCP_CONFORMANCE_SCENARIO names the scenario)");
    const char* scenario_env = std::getenv("MCP_CONFORMANCE_SCENARIO");
    const std::string scenario = scenario_env != nullptr ? scenario_env : "initialize";
    tools::mcp::server_config config;
    config.name = "conformance";
    config.url = argv[argc - 1];
    config.request_timeout = std::chrono::milliseconds(10000);
    auto client = tools::mcp::client::connect(config);  // initialize, notifications/initialized, tools/list
    if (!client) return conformance_fail(client.err().message);

    std::string tool, arguments;
    if (scenario == "tools_call") tool = "add_numbers", arguments = R"({"a":5,"b":3})";
    else if (scenario == "sse-retry") tool = "test_reconnection", arguments = "{}";
    else if (scenario != "initialize") return conformance_fail("scenario '" + scenario + "' is not one this client takes part in");
    if (!tool.empty()) {
        auto r = (*client)->call_tool(tool, arguments);
        if (!r) return conformance_fail(tool + ": " + r.err().message);
        if (r->is_error) return conformance_fail(tool + " answered an error: " + r->text);
        std::printf("%s: %s\n", tool.c_str(), r->text.c_str());
    }
    (*client)->close();
    return 0;
}
