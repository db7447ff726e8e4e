// tachyon as an MCP server (revision 2025-11-25; 2025-06-18 and 2025-03-26
// are answered too): the JSON-RPC side of `tachyon mcp serve`, apart from the
// transport. It offers tools of two kinds:
//  - tools (built-ins made from their settings, or any tools::tool), called
//    with their own schema; a failure is a result with isError the caller's
//    model reads;
//  - agents, each a tool whose call ({"task": ..., "inputs"...}) runs the
//    agent to a verified answer on the agent service: a progress
//    notification per model turn when the caller gave a progressToken,
//    notifications/cancelled cancels the run, and the answer comes back as
//    text and, for an agent with an output schema, as structuredContent.
// Calls run on workers (the server's own, or a pool the transport shares
// between sessions), so that a cancellation can arrive while they do.
// A tools/call continues the trace context the caller put in
// params._meta.traceparent (MCP semantic conventions of OpenTelemetry):
// with a tracer, as a server span "tools/call <tool>" the agent's run (or
// the tool's own outgoing calls) is a child of; without one, the run's
// spans continue the caller's trace directly.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/agent/agent_def.h"
#include "runtime/agent/agent_service.h"
#include "runtime/telemetry/tracer.h"
#include "tools/core/tool.h"

namespace boost::asio {
class thread_pool;
}

namespace tachyon {

struct mcp_server_options {
    std::vector<std::shared_ptr<tools::tool>> tools;
    std::vector<std::shared_ptr<const agent_definition>> agents;
    agent_service* service = nullptr;  // runs the agents; required when `agents` is not empty
    int n_workers = 4;                 // calls at once, on the server's own workers
    // Set: calls run here instead (shared by many servers, one per HTTP
    // session); outlives the server. n_workers is then unused.
    boost::asio::thread_pool* pool = nullptr;
    std::string journal_dir;           // agent runs' journals; empty: none
    // Set: the agents' path inputs must resolve inside one of these
    // directories (check_run_inputs' confinement), as for a remote caller.
    std::optional<input_confinement> confinement;
    // The transport may tell of tool list changes (notifications/tools/list_changed):
    // initialize offers the tools capability's listChanged.
    bool tools_list_changed = false;
    // Set: each tools/call is exported as a server span (null: none).
    std::shared_ptr<telemetry::tracer> tracer;
};

class mcp_server {
public:
    // Sends one message to the client; called from any thread, one call at a time.
    using sender = std::function<void(std::string)>;

    // Fails when two tools (or agents) share a name, or an agent has no service.
    static result<std::unique_ptr<mcp_server>> make(mcp_server_options options, sender send);
    ~mcp_server();  // cancels the calls still running and waits for them

    // Handles one message (a line of stdio, a POST body). Answers through the sender.
    void handle(std::string_view message);
    // The same, but what answers this message (its response, and the
    // progress notifications of a tools/call) goes to `reply` instead: an
    // HTTP transport streams them on the POST that carried the request.
    // `reply` is called from any thread, one call at a time, until the
    // response; it must stay callable until then (or the server's shutdown).
    void handle(std::string_view message, sender reply);
    // Cancels every running call and waits for them to answer.
    void shutdown();

private:
    struct impl;
    explicit mcp_server(std::unique_ptr<impl> i);
    std::unique_ptr<impl> impl_;
};

// The inputSchema an agent is offered with: "task" and its declared inputs.
std::string agent_tool_schema(const agent_definition& agent);

}  // namespace tachyon
