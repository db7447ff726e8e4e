// `tachyon mcp serve [--agents DIR | AGENT_FILE...] [--tools NAME,...] [--root DIR]`:
// tachyon as an MCP server on stdio (runtime/mcp/): built-in tools, made as
// `tachyon tool` makes them, and every agent as a tool whose call runs it to
// a verified answer. Messages are lines on stdin/stdout; logs go to stderr.
// The end of stdin, SIGTERM or SIGINT cancels the calls still running and
// exits with status 0.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "runtime/agent/agent_service.h"
#include "runtime/cli/cli.h"
#include "runtime/mcp/mcp_offer.h"
#include "runtime/mcp/mcp_stdio.h"

namespace tachyon {
namespace {

constexpr int mcp_exit_failed = 1;
constexpr int mcp_exit_usage = 2;

int mcp_complain(int code, const std::string& message) {
    std::cerr << "tachyon mcp serve: " << message << "\n";
    return code;
}

// The write end of the stop pipe: the signal handler's only business.
// A process has one set of signal handlers, hence one slot.
int mcp_stop_write_fd = -1;

extern "C" void on_mcp_stop_signal(int) {
    if (mcp_stop_write_fd >= 0) (void)!::write(mcp_stop_write_fd, "x", 1);
}

int mcp_serve_command(const cli::parsed_args& args) {
    std::string root;
    if (auto r = args.get("root")) {
        std::error_code ec;
        const auto real = std::filesystem::canonical(*r, ec);
        if (ec || !std::filesystem::is_directory(real, ec)) return mcp_complain(mcp_exit_usage, "--root " + *r + ": not an existing directory");
        root = real.string();
    }
    auto threads = args.get_int("threads");
    auto ctx = args.get_int("ctx");
    auto workers = args.get_int("max-calls");
    if (!threads || *threads < 0) return mcp_complain(mcp_exit_usage, "--threads: expected an integer >= 0 (0: one per hardware thread)");
    if (!ctx || *ctx < 256) return mcp_complain(mcp_exit_usage, "--ctx must be an integer >= 256");
    if (!workers || *workers < 1) return mcp_complain(mcp_exit_usage, "--max-calls must be a positive integer");

    auto settings = cli::key_values(args.get_all("settings"), "settings");
    if (!settings) return mcp_complain(mcp_exit_usage, settings.err().message);
    auto tools = make_offered_tools(split_tool_names(args.get_or("tools", "")), root, *settings, "--tools");
    if (!tools) return mcp_complain(mcp_exit_usage, tools.err().message);
    auto agents = load_offered_agents(args.get_or("agents", ""), args.positionals());
    if (!agents) return mcp_complain(mcp_exit_failed, agents.err().message);
    if (tools->empty() && agents->empty())
        return mcp_complain(mcp_exit_usage, "nothing to serve: give --tools NAME,..., --agents DIR or AGENT_FILE...");

    // Tracing, when OTEL_EXPORTER_OTLP_ENDPOINT or --otlp-endpoint names a collector: each call's span, continuing params._meta.traceparent.
    auto tracer = telemetry::tracer_from_env(args.get_or("otlp-endpoint", ""));
    if (!tracer) return mcp_complain(mcp_exit_usage, tracer.err().message);

    service_options so;
    so.tracer = *tracer;
    so.engine.n_threads = static_cast<int>(*threads);
    so.engine.n_ctx = static_cast<int>(*ctx);
    so.engine.kv_f16 = !args.flag("kv-f32");
    agent_service service(so);
    // Models load now, so that a bad one fails here rather than at the first call.
    for (const auto& a : *agents) {
        if (a->remote) continue;
        if (auto h = service.host(a->model, a->chat_format); !h) return mcp_complain(mcp_exit_failed, a->file + ": model " + a->model + ": " + h.err().message);
    }

    mcp_server_options o;
    o.tools = std::move(tools).value();
    o.agents = std::move(agents).value();
    o.service = &service;
    o.n_workers = static_cast<int>(*workers);
    o.journal_dir = args.get_or("journal-dir", "runs");
    o.tracer = *tracer;
    if (!root.empty()) o.confinement = input_confinement{{root}};

    int stop[2];
    if (::pipe(stop) != 0) return mcp_complain(mcp_exit_failed, "cannot make a pipe");
    ::fcntl(stop[1], F_SETFL, ::fcntl(stop[1], F_GETFL) | O_NONBLOCK);
    mcp_stop_write_fd = stop[1];
    struct sigaction sa {};
    sa.sa_handler = on_mcp_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a client gone is a failed write, not a killed server

    std::fprintf(stderr, "tachyon mcp serve: %zu tools and %zu agents on stdio%s%s\n", o.tools.size(), o.agents.size(),
                 root.empty() ? "" : ", root ", root.c_str());
    mcp_stdio_options io;
    io.stop_fd = stop[0];
    const status st = serve_mcp_stdio(std::move(o), io);
    mcp_stop_write_fd = -1;
    ::close(stop[0]);
    ::close(stop[1]);
    if (*tracer) (*tracer)->flush(std::chrono::seconds(2));
    if (!st) return mcp_complain(mcp_exit_failed, st.err().message);
    std::fprintf(stderr, "tachyon mcp serve: stopped\n");
    return 0;
}

}  // namespace

cli::command_spec make_mcp_serve_command() {
    cli::command_spec c;
    c.name = "mcp serve";
    c.summary = "serve built-in tools and agents as an MCP server over stdio";
    c.description =
        "Speaks MCP (revision 2025-11-25; 2025-06-18 and 2025-03-26 too) as newline-delimited JSON-RPC on stdin/stdout; logs go to "
        "stderr. Offers the built-in tools of --tools, made as `tachyon tool` makes them (--root DIR: their files are DIR's; "
        "--settings NAME=JSON adds settings), and every agent of --agents DIR and AGENT_FILE... as a tool whose call "
        "({\"task\": ..., inputs...}) runs it to a verified answer, with a progress notification per model turn and the answer "
        "as structuredContent. With --root, agents' path inputs must lie inside it. The end of stdin, SIGTERM or SIGINT cancels "
        "running calls and exits. Example: tachyon mcp serve --agents agents --tools read_file --root /srv/incidents";
    c.positionals = {{"AGENT_FILE...", "agent files to offer as tools", false}};
    c.options = {
        {"agents", 0, cli::option_kind::value, "DIR", "", "offer every agent file (*.json) of DIR"},
        {"tools", 0, cli::option_kind::value, "NAME,...", "", "built-in tools to offer (see tachyon tool --list)"},
        {"root", 0, cli::option_kind::value, "DIR", "", "the directory the file and log tools read, and agents' path inputs must lie in"},
        {"settings", 's', cli::option_kind::multi, "NAME=JSON", "", "more settings of tool NAME, as an agent file gives them"},
        {"journal-dir", 0, cli::option_kind::value, "DIR", "runs", "where agent runs' journals are written"},
        {"max-calls", 0, cli::option_kind::value, "N", "4", "tool and agent calls running at once"},
        {"threads", 't', cli::option_kind::value, "N", "0", "inference threads per model (0: one per hardware thread; a call too small to pay for the fan-out runs on one)"},
        {"ctx", 'c', cli::option_kind::value, "N", "16384", "KV positions per model"},
        {"kv-f32", 0, cli::option_kind::flag, "", "", "hold the KV cache in f32 (default fp16: half the memory and the bytes attention reads)"},
        {"otlp-endpoint", 0, cli::option_kind::value, "URL", "", "export spans of calls and runs as OTLP/HTTP JSON to URL/v1/traces (else OTEL_EXPORTER_OTLP_ENDPOINT)"},
    };
    c.run = mcp_serve_command;
    return c;
}

}  // namespace tachyon
