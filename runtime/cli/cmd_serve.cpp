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
    if (!threads || *threads < 1) return fail("--threads must be a positive integer");
    if (!ctx || *ctx < 256) return fail("--ctx must be an integer >= 256");
    if (!max_requests || *max_requests < 1) return fail("--max-requests must be a positive integer");
    if (!max_runs || *max_runs < 1) return fail("--max-runs must be a positive integer");
    if (!max_body || *max_body < 1024) return fail("--max-body must be an integer >= 1024");
    if (!io_threads || *io_threads < 1) return fail("--io-threads must be a positive integer");
    so.max_chat_requests = static_cast<int>(*max_requests);
    so.body_limit = static_cast<size_t>(*max_body);
    so.n_threads = static_cast<int>(*io_threads);

    service_options svc;
    svc.engine.n_threads = static_cast<int>(*threads);
    svc.engine.n_ctx = static_cast<int>(*ctx);
    agent_service service(svc);

    // One host per model file, shared by chat completions and agent runs.
    std::vector<http::metrics::model_entry> models;
    std::vector<std::string> paths;
    std::set<std::string> ids;
    std::vector<std::string> model_args = args.get_all("model");
    if (model_args.empty()) model_args.push_back(args.get_or("model", ""));
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
    http::run_registry runs(service, ro, &stats);

    http::server server(so, models, stats, &runs);
    if (auto st = server.start(); !st) return fail(st.err().message);
    std::string names;
    for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.id;
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
                    "GET /healthz, GET /metrics. The model id is the file stem of --model. A non-loopback --host needs --api-key-file.\n"
                    "Run inputs must be declared by the agent file; path inputs must lie inside a --data-root.";
    c.options = {
        {"host", 0, cli::option_kind::value, "ADDR", "127.0.0.1", "address to listen on"},
        {"port", 'p', cli::option_kind::value, "N", "8080", "port (0: any free port, printed at start)"},
        {"model", 'm', cli::option_kind::multi, "PATH", "examples/incident/model/incident-analyst.gguf", "GGUF model to serve"},
        {"agents", 0, cli::option_kind::value, "DIR", "agents", "folder of agent files (<name>.json) for /v1/runs"},
        {"api-key-file", 0, cli::option_kind::value, "FILE", "", "file holding the API key clients send as 'Authorization: Bearer KEY'"},
        {"journal-dir", 0, cli::option_kind::value, "DIR", "runs", "where run journals are written"},
        {"data-root", 0, cli::option_kind::multi, "DIR", "",
         "directory that path inputs of runs must resolve inside (none: path inputs are refused)"},
        {"threads", 't', cli::option_kind::value, "N", "1", "inference threads per model"},
        {"ctx", 'c', cli::option_kind::value, "N", "32768", "KV positions per model, all requests together"},
        {"io-threads", 0, cli::option_kind::value, "N", "1", "HTTP event loop threads"},
        {"max-requests", 0, cli::option_kind::value, "N", "128", "chat completions in flight (more: 429)"},
        {"max-runs", 0, cli::option_kind::value, "N", "8", "agent runs in progress (more: 429)"},
        {"max-body", 0, cli::option_kind::value, "BYTES", "1048576", "largest request body (more: 413)"},
    };
    c.run = serve_command;
    return c;
}

}  // namespace tachyon
