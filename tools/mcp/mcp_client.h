// An MCP client session with one server (MCP revision 2025-11-25): the
// lifecycle (initialize with version negotiation, notifications/initialized,
// ping), tools/list with cursors (listed again after
// notifications/tools/list_changed) and tools/call.
//
// Every request has a timeout; a progress notification for it extends the
// timeout by `request_timeout` again, up to `max_request_time` after it was
// sent. A request that times out or whose caller cancels is abandoned with
// notifications/cancelled. A server that exits fails what is outstanding at
// once; the next request starts it again, after a backoff that doubles with
// each failed start. Answers with an id nobody waits for, and lines that are
// not JSON-RPC, are logged and dropped (the request they should have
// answered times out, naming the server).
//
// Thread-safe: calls may come from many threads at once and block their
// caller (the runtime's tool pool) until answered.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tools/mcp/transport.h"

namespace tachyon::tools::mcp {

// Protocol revisions this client speaks, newest first; it offers the first.
const std::vector<std::string>& supported_protocol_versions();

struct server_config {
    std::string name;                        // names the server in every message
    // stdio: argv of the server process, its extra environment and cwd.
    std::vector<std::string> command;
    std::map<std::string, std::string> env;
    std::string cwd;
    // Streamable HTTP (instead of command): the endpoint, headers sent with
    // every request, and the environment variable holding a bearer token.
    std::string url;
    std::map<std::string, std::string> headers;
    std::string bearer_env;
    // The tools to use (empty: all the server lists), and tools to treat as
    // read-only (may run speculatively) beside those it annotates readOnlyHint.
    std::vector<std::string> tools;
    std::set<std::string> read_only;
    // Tool → arguments whose values are grounded (x-grounded) for the decoder.
    std::map<std::string, std::set<std::string>> grounded;
    std::chrono::milliseconds request_timeout{30000};
    std::chrono::milliseconds max_request_time{300000};  // progress extends a request up to this
    std::chrono::milliseconds shutdown_grace{2000};       // each stage of stopping a stdio server
    size_t max_output_bytes = 64 * 1024;  // text of a tool result the model reads; more is cut with a note
};

// A tool as the server lists it, its inputSchema normalised (mcp_schema.h).
struct remote_tool {
    std::string name;
    std::string description;
    std::string input_schema;   // minified JSON Schema, type object
    std::string output_schema;  // minified; empty when the tool declares none
    bool read_only = false;     // annotations.readOnlyHint, or listed in server_config::read_only
    bool idempotent = false;    // annotations.idempotentHint
};

// What tools/call returned.
struct call_result {
    bool is_error = false;   // isError: the tool failed; `text` says why, for the model
    std::string text;        // the content as the model reads it, cut to max_output_bytes
    std::string structured;  // structuredContent, minified; empty when absent
};

// Checks structuredContent against a tool's outputSchema (the runtime
// supplies its JSON Schema validator): ok, or an error saying what differs.
using output_validator = std::function<status(std::string_view schema_json, std::string_view instance_json)>;

// Called on the transport's thread for each progress notification of a call.
using progress_callback = std::function<void(double progress, std::optional<double> total, std::string_view message)>;

// Makes the transport a session (re)starts with.
using transport_factory = std::function<std::unique_ptr<transport>()>;

class client {
public:
    // Starts the server (stdio: `command`; Streamable HTTP: `url`),
    // initializes the session and lists its tools.
    static result<std::shared_ptr<client>> connect(server_config config, output_validator validate = {});
    // With a transport of the caller's making (tests, other transports).
    static result<std::shared_ptr<client>> connect(server_config config, transport_factory make_transport,
                                                   output_validator validate = {});
    ~client();  // close()

    const std::string& name() const { return config_.name; }
    const server_config& config() const { return config_; }
    // The revision agreed in initialize.
    std::string protocol_version() const;
    // The server's tools (config.tools of them, in that order, when given);
    // listed again first when the server said its list changed.
    result<std::vector<remote_tool>> tools();
    // One tools/call. `cancel` is polled while waiting; `traceparent` (the
    // caller's span, W3C) goes with the request where the transport can carry it.
    result<call_result> call_tool(std::string_view tool, std::string_view arguments_json, const std::atomic<bool>* cancel = nullptr,
                                  progress_callback on_progress = {}, std::string_view traceparent = {});
    status ping();
    // Ends the session and the server; later calls fail. Idempotent.
    void close();
    // Times the server was started (1 after connect; more after restarts).
    int n_starts() const;

private:
    struct state;
    client(server_config config, transport_factory make, output_validator validate);
    result<std::string> request(std::string_view method, std::string params_json, const std::atomic<bool>* cancel,
                                progress_callback on_progress, bool may_restart = true, bool retried = false,
                                std::string_view traceparent = {});
    status start_session();
    status ensure_running();
    result<std::vector<remote_tool>> list_tools();

    server_config config_;
    transport_factory make_transport_;
    output_validator validate_;
    std::shared_ptr<state> state_;
};

}  // namespace tachyon::tools::mcp
