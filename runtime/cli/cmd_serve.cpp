// `tachyon serve`: the HTTP API (runtime/serve/http_server.h) over one or more
// models and the agent files of a folder, until SIGINT/SIGTERM, then a
// graceful shutdown.
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "runtime/agent/agent_service.h"
#include "runtime/cli/cli.h"
#include "runtime/mcp/mcp_offer.h"
#include "runtime/serve/http_mcp.h"
#include "runtime/serve/http_server.h"

namespace tachyon {
namespace {

result<std::string> read_api_key(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return make_error(errc::io_error, "--api-key-file " + path + ": cannot read");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string key = ss.str();
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.front()))) key.erase(key.begin());
    if (key.size() < 16) return make_error(errc::invalid_argument, "--api-key-file " + path + ": expected a key of at least 16 characters");
    return key;
}

int serve_command(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon serve: " << m << "\n";
        return 1;
    };
    http::server_options so;
    so.host = args.get_or("host", "127.0.0.1");
    auto port = args.get_int("port");
    if (!port || *port < 0 || *port > 65535) return fail("--port must be an integer in [0, 65535]");
    so.port = static_cast<uint16_t>(*port);
    if (args.has("api-key-file")) {
        auto key = read_api_key(*args.get("api-key-file"));
        if (!key) return fail(key.err().message);
        so.api_key = *key;
    }
    auto threads = args.get_int("threads");
    auto ctx = args.get_int("ctx");
    auto max_requests = args.get_int("max-requests");
    auto max_runs = args.get_int("max-runs");
    auto max_body = args.get_int("max-body");
    auto io_threads = args.get_int("io-threads");
    if (!threads || *threads < 0) return fail("--threads: expected an integer >= 0 (0: one per hardware thread)");
    if (!ctx || *ctx < 256) return fail("--ctx must be an integer >= 256");
    if (!max_requests || *max_requests < 1) return fail("--max-requests must be a positive integer");
    if (!max_runs || *max_runs < 1) return fail("--max-runs must be a positive integer");
    if (!max_body || *max_body < 1024) return fail("--max-body must be an integer >= 1024");
    if (!io_threads || *io_threads < 1) return fail("--io-threads must be a positive integer");
    so.max_chat_requests = static_cast<int>(*max_requests);
    so.body_limit = static_cast<size_t>(*max_body);
    so.n_threads = static_cast<int>(*io_threads);

    // Tracing, when OTEL_EXPORTER_OTLP_ENDPOINT or --otlp-endpoint names a collector.
    auto tracer = telemetry::tracer_from_env(args.get_or("otlp-endpoint", ""));
    if (!tracer) return fail(tracer.err().message);
    so.tracer = *tracer;

    service_options svc;
    svc.tracer = *tracer;
    svc.engine.n_threads = static_cast<int>(*threads);
    svc.engine.n_ctx = static_cast<int>(*ctx);
    svc.engine.kv_f16 = !args.flag("kv-f32");

    // A front end for a cluster: a --model that is a remote model object, or
    // --remote URL. Chat completions for its id and every agent run go there.
    std::vector<std::string> model_args = args.get_all("model");
    std::shared_ptr<const remote::remote_model> remote_model;
    for (auto it = model_args.begin(); it != model_args.end();) {
        if (!remote::looks_like_remote_model(*it)) {
            ++it;
            continue;
        }
        if (remote_model) return fail("--model: one remote model at most (got a second object)");
        auto m = remote::parse_remote_model(*it, "--model");
        if (!m) return fail(m.err().message);
        remote_model = std::make_shared<const remote::remote_model>(std::move(m).value());
        it = model_args.erase(it);
    }
    if (args.has("remote")) {
        if (remote_model) return fail("--remote: a remote model is already given with --model");
        auto m = remote::remote_model_from_url(*args.get("remote"), args.get_or("remote-model", ""));
        if (!m) return fail(m.err().message);
        if (args.has("remote-tools")) {
            const std::string mode = *args.get("remote-tools");
            if (mode != "server" && mode != "text") return fail("--remote-tools: expected server or text, got '" + mode + "'");
            m->tools = mode == "server" ? remote::tool_mode::server : remote::tool_mode::text;
        }
        remote_model = std::make_shared<const remote::remote_model>(std::move(m).value());
    }
    svc.remote = remote_model;
    agent_service service(svc);
    if (remote_model) {
        so.remote = remote_model;
        so.remote_id = remote_model->name;
    }

    // One host per model file, shared by chat completions and agent runs.
    std::vector<http::metrics::model_entry> models;
    std::vector<std::string> paths;
    std::set<std::string> ids;
    if (model_args.empty() && !remote_model) model_args.push_back(args.get_or("model", ""));
    for (const auto& path : model_args) {
        const std::string id = std::filesystem::path(path).stem().string();
        if (!ids.insert(id).second) return fail("--model " + path + ": another model has the id '" + id + "' (the file stem)");
        if (!std::filesystem::exists(path)) return fail("--model " + path + ": no such file");
        auto host = service.host(path);
        if (!host) return fail("--model " + path + ": " + host.err().message);
        models.push_back({id, *host});
        paths.push_back(path);
    }

    http::metrics stats;
    stats.set_tracer(*tracer);
    http::run_registry_options ro;
    ro.agents_dir = args.get_or("agents", "agents");
    ro.journal_dir = args.get_or("journal-dir", "runs");
    ro.max_active = static_cast<int>(*max_runs);
    ro.model_paths = paths;
    for (const auto& root : args.get_all("data-root")) {
        std::error_code ec;
        const auto real = std::filesystem::canonical(root, ec);
        if (ec || !std::filesystem::is_directory(real, ec)) return fail("--data-root " + root + ": not an existing directory");
        ro.data_roots.push_back(real.string());
    }
    ro.db_url = args.get_or("db", "");
    http::run_registry runs(service, ro, &stats);
    if (auto st = runs.open_database(); !st) return fail("--db: " + st.err().message);

    // --mcp: /mcp offers every agent of --agents and the --mcp-tools, whose
    // files are the first --data-root's; path inputs are confined as for runs.
    std::unique_ptr<http::mcp_endpoint> mcp;
    if (args.flag("mcp")) {
        // The default folder may be absent (no agents); one named with --agents must be there.
        const bool has_agents = args.has("agents") || std::filesystem::is_directory(ro.agents_dir);
        auto agents = load_offered_agents(has_agents ? ro.agents_dir : std::string(), {});
        if (!agents) return fail("--mcp: " + agents.err().message);
        http::mcp_endpoint_options mo;
        for (auto& a : *agents) {
            auto copy = std::make_shared<agent_definition>(*a);
            std::error_code ec;
            const auto model = std::filesystem::weakly_canonical(copy->model, ec);
            for (const auto& path : paths)  // an agent on a served model shares its host
                if (!copy->remote && !ec && std::filesystem::weakly_canonical(path, ec) == model) copy->model = path;
            mo.server.agents.push_back(std::move(copy));
        }
        auto tools = make_offered_tools(split_tool_names(args.get_or("mcp-tools", "")), ro.data_roots.empty() ? "" : ro.data_roots.front(), {},
                                        "--mcp-tools");
        if (!tools) return fail(tools.err().message);
        mo.server.tools = std::move(tools).value();
        mo.server.service = &service;
        mo.server.journal_dir = ro.journal_dir;
        mo.server.confinement = input_confinement{ro.data_roots};
        mo.stats = &stats;
        mo.server.tracer = *tracer;  // each tools/call a server span
        auto made = http::mcp_endpoint::make(std::move(mo));
        if (!made) return fail("--mcp: " + made.err().message);
        mcp = std::move(made).value();
        so.mcp = mcp.get();
    }

    http::server server(so, models, stats, &runs);
    if (auto st = server.start(); !st) return fail(st.err().message);
    std::string names;
    for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.id;
    if (remote_model) names += (names.empty() ? "" : ", ") + remote_model->name + " (remote: " + remote_model->url + ")";
    std::string roots;
    for (const auto& r : ro.data_roots) roots += (roots.empty() ? "" : ", ") + r;
    std::printf("tachyon serve: listening on http://%s:%u (models: %s; agents: %s; data roots: %s)\n", so.host.c_str(), server.port(),
                names.c_str(), ro.agents_dir.c_str(), roots.empty() ? "none, path inputs refused" : roots.c_str());
    std::fflush(stdout);

    // SIGINT/SIGTERM: graceful shutdown; a second signal exits at once.
    boost::asio::io_context signals_io;
    boost::asio::signal_set signals(signals_io, SIGINT, SIGTERM);
    std::thread stopper;  // shutdown blocks until the deadline: not on the signal loop
    signals.async_wait([&](boost::system::error_code ec, int) {
        if (ec) return;
        std::fprintf(stderr, "tachyon serve: shutting down (finishing requests in flight)\n");
        signals.async_wait([](boost::system::error_code e, int) {
            if (!e) std::_Exit(130);
        });
        stopper = std::thread([&] {
            server.shutdown();
            boost::asio::post(signals_io, [&] { signals.cancel(); });
        });
    });
    signals_io.run();  // returns once the second wait is cancelled
    if (stopper.joinable()) stopper.join();
    std::fprintf(stderr, "tachyon serve: stopped\n");
    return 0;
}

}  // namespace

cli::command_spec make_serve_command() {
    cli::command_spec c;
    c.name = "serve";
    c.summary = "serve the OpenAI-compatible chat API and agent runs over HTTP";
    c.description = "POST /v1/chat/completions, GET /v1/models, POST /v1/runs, GET /v1/runs/{id}[/events], POST /v1/runs/{id}/cancel,\n"
                    "GET /healthz, GET /metrics, and /mcp (MCP over Streamable HTTP) with --mcp. The model id is the file stem of --model. A non-loopback --host needs --api-key-file.\n"
                    "Run inputs must be declared by the agent file; path inputs must lie inside a --data-root.\n"
                    "With --remote (or a --model object) tachyon fronts another OpenAI-compatible server: chat completions for its\n"
                    "model are passed on, and agent runs generate their turns there (README, \"Remote backends\").\n"
                    "With --db, POST /v1/runs queues runs in PostgreSQL for `tachyon worker`s, and GET /v1/runs/{id}[/events]\n"
                    "answers any run from there (README, \"Runs in PostgreSQL\").";
    c.options = {
        {"host", 0, cli::option_kind::value, "ADDR", "127.0.0.1", "address to listen on"},
        {"port", 'p', cli::option_kind::value, "N", "8080", "port (0: any free port, printed at start)"},
        {"model", 'm', cli::option_kind::multi, "PATH", "examples/incident/model/incident-analyst.gguf",
         "GGUF model to serve, or a remote model object ('{\"url\": \"http://host:8000/v1\", \"name\": \"qwen2.5-7b\"}')"},
        {"remote", 0, cli::option_kind::value, "URL", "", "front end for an OpenAI-compatible server (http://host:8000/v1): chat and runs go there"},
        {"remote-model", 0, cli::option_kind::value, "NAME", "", "with --remote: the model name the server serves"},
        {"remote-tools", 0, cli::option_kind::value, "MODE", "server", "with --remote: tool calls by the server (server) or parsed from text (text)"},
        {"agents", 0, cli::option_kind::value, "DIR", "agents", "folder of agent files (<name>.json) for /v1/runs"},
        {"api-key-file", 0, cli::option_kind::value, "FILE", "", "file holding the API key clients send as 'Authorization: Bearer KEY'"},
        {"journal-dir", 0, cli::option_kind::value, "DIR", "runs", "where run journals are written"},
        {"mcp", 0, cli::option_kind::flag, "", "", "serve MCP (Streamable HTTP) on /mcp: every agent of --agents as a tool, and --mcp-tools"},
        {"mcp-tools", 0, cli::option_kind::value, "NAME,...", "", "with --mcp: built-in tools offered on /mcp, reading the first --data-root"},
        {"otlp-endpoint", 0, cli::option_kind::value, "URL", "", "export spans of runs and chat completions as OTLP/HTTP JSON to URL/v1/traces (else OTEL_EXPORTER_OTLP_ENDPOINT)"},
        {"db", 0, cli::option_kind::value, "URL", "",
         "PostgreSQL database (postgresql://user@host/db): POST /v1/runs queues runs for `tachyon worker`s, runs are read from there"},
        {"data-root", 0, cli::option_kind::multi, "DIR", "",
         "directory that path inputs of runs must resolve inside (none: path inputs are refused)"},
        {"threads", 't', cli::option_kind::value, "N", "0", "inference threads per model (0: one per hardware thread; a call too small to pay for the fan-out runs on one)"},
        {"ctx", 'c', cli::option_kind::value, "N", "32768", "KV positions per model, all requests together"},
        {"kv-f32", 0, cli::option_kind::flag, "", "", "hold the KV cache in f32 (default fp16: half the memory and the bytes attention reads)"},
        {"io-threads", 0, cli::option_kind::value, "N", "1", "HTTP event loop threads"},
        {"max-requests", 0, cli::option_kind::value, "N", "128", "chat completions in flight (more: 429)"},
        {"max-runs", 0, cli::option_kind::value, "N", "8", "agent runs in progress (more: 429)"},
        {"max-body", 0, cli::option_kind::value, "BYTES", "1048576", "largest request body (more: 413)"},
    };
    c.run = serve_command;
    return c;
}

}  // namespace tachyon
