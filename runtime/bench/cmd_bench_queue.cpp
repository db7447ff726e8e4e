// `tachyon bench queue --db URL --runs N --workers W AGENT.json`: the cost of
// runs in PostgreSQL. The same N runs of the agent (incidents of --seeds,
// taken in turn) go once through the file-journal default (in this
// process, W x --concurrency at a time, journals in a temporary folder) and
// once through the database: queued there, then claimed and run by W
// in-process workers (db::worker, --concurrency each) until none is left.
// Prints runs/s of each, their ratio, and the database's size per run (its
// tables' pg_total_relation_size grown by the batch, over N). No tool
// latency: what differs is the journal and the queue.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "runtime/agent/agent_service.h"
#include "runtime/bench/eval_support.h"
#include "runtime/cli/cli.h"
#include "runtime/db/pg_connection.h"
#include "runtime/db/run_store.h"
#include "runtime/db/schema.h"
#include "runtime/db/worker.h"

namespace tachyon {
namespace {
namespace asio = boost::asio;
namespace fs = std::filesystem;

template <class T>
T queue_bench_wait(asio::io_context& io, asio::awaitable<T> op) {
    std::optional<T> out;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { out.emplace(co_await std::move(op)); },
        [&](std::exception_ptr e) {
            if (e) out.emplace(make_error(errc::internal, "bench queue: a database query ended with an exception"));
        });
    io.restart();
    io.run();
    return std::move(*out);
}

// The same engine settings in both passes: one event loop thread per run
// in flight, as `tachyon worker` has (a journal line there is one round
// trip on the run's thread).
service_options queue_bench_service(int threads, int in_flight) {
    service_options so;
    so.engine.n_threads = threads;
    so.engine.n_ctx = std::max(16384, in_flight * 6144);
    so.n_io_threads = in_flight;
    so.n_tool_threads = std::max(4, in_flight * 2);
    return so;
}

int bench_queue(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon bench queue: " << m << "\n";
        return 1;
    };
    const std::string url = args.get_or("db", "");
    if (url.empty()) return fail("--db: required (postgresql://user@host:5432/dbname)");
    if (auto st = db::check_db_url(url, "--db"); !st) return fail(st.err().message);
    auto n_runs = args.get_int("runs");
    auto n_workers = args.get_int("workers");
    if (!n_runs || *n_runs < 1 || *n_runs > 1000000) return fail("--runs: expected an integer in [1, 1000000]");
    if (!n_workers || *n_workers < 1 || *n_workers > 64) return fail("--workers: expected an integer in [1, 64]");
    auto setup = parse_eval_setup(args);
    if (!setup) return fail(setup.err().message);
    const int workers = static_cast<int>(*n_workers);
    const int in_flight = workers * setup->concurrency;
    const fs::path agent_file = fs::absolute(*args.positional(0));

    asio::io_context io;
    auto conn = db::pg_connection::connect(url, io.get_executor());
    if (!conn) return fail(conn.err().message);
    if (auto m = db::migrate(**conn); !m) return fail(m.err().message);

    auto workspace = make_eval_workspace();
    if (!workspace) return fail(workspace.err().message);
    auto incidents = prepare_incidents(setup->world, *workspace, setup->first_seed, setup->last_seed);
    for (const auto& in : incidents)
        if (!in.error.empty()) return fail("seed " + std::to_string(in.seed) + ": " + in.error);
    std::vector<eval_input> inputs;
    for (int64_t i = 0; i < *n_runs; ++i) inputs.push_back(incidents[static_cast<size_t>(i) % incidents.size()]);
    std::fprintf(stderr, "%lld runs of %s on %zu incidents, %d at a time\n", static_cast<long long>(*n_runs), agent_file.c_str(),
                 incidents.size(), in_flight);

    // Pass 1: the file-journal default.
    double file_ms = 0;
    size_t file_verified = 0;
    {
        agent_service service(queue_bench_service(setup->threads, in_flight));
        eval_run_options o;
        o.concurrency = in_flight;
        o.journal_dir = (*workspace / "runs").string();
        auto cases = run_cases(service, setup->agent, inputs, o, nullptr, &file_ms);
        for (const auto& c : cases) file_verified += c.outcome.verified ? 1 : 0;
    }
    std::fprintf(stderr, "file journal: %.1f s\n", file_ms / 1000);

    // Pass 2: queued in the database, then run by the workers.
    auto before = queue_bench_wait(io, db::usage(**conn));
    if (!before) return fail(before.err().message);
    const std::string prefix = "bench-" + journal::make_run_id() + "-";
    const auto q0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < inputs.size(); ++i) {
        auto st = queue_bench_wait(io, db::enqueue(**conn, prefix + std::to_string(i), agent_file.stem().string(), inputs[i].incident.task,
                                                   {{"incident_dir", inputs[i].incident.incident_dir}}));
        if (!st) return fail(st.err().message);
    }
    const double enqueue_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - q0).count();
    double db_ms = 0;
    {
        agent_service service(queue_bench_service(setup->threads, in_flight));
        std::vector<std::unique_ptr<db::worker>> ws;
        for (int k = 0; k < workers; ++k) {
            db::worker_options wo;
            wo.db_url = url;
            wo.agents_dir = agent_file.parent_path().string();
            wo.concurrency = setup->concurrency;
            wo.poll = std::chrono::milliseconds(50);
            wo.owner = "bench-" + std::to_string(k);
            wo.exit_when_idle = true;
            ws.push_back(std::make_unique<db::worker>(service, wo));
        }
        std::vector<status> ends(ws.size());
        std::vector<std::thread> threads;
        const auto t0 = std::chrono::steady_clock::now();
        for (size_t k = 0; k < ws.size(); ++k) threads.emplace_back([&ws, &ends, k] { ends[k] = ws[k]->run(); });
        for (auto& t : threads) t.join();
        db_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        for (const auto& st : ends)
            if (!st) return fail(st.err().message);
    }
    auto after = queue_bench_wait(io, db::usage(**conn));
    if (!after) return fail(after.err().message);
    auto states = (*conn)->exec("SELECT count(*) FILTER (WHERE state = 'succeeded') AS succeeded,"
                                " count(*) FILTER (WHERE result->>'verified' = 'true') AS verified, count(*) AS n,"
                                " sum(n_claims) AS claims FROM tachyon.runs WHERE starts_with(id, $1)",
                                {prefix});
    if (!states) return fail(states.err().message);
    std::error_code ec;
    fs::remove_all(*workspace, ec);

    const double n = static_cast<double>(*n_runs);
    const double file_rate = n / (file_ms / 1000), db_rate = n / (db_ms / 1000);
    const int64_t grown = (after->runs_bytes + after->events_bytes) - (before->runs_bytes + before->events_bytes);
    std::printf("file journal: %lld runs in %.2f s, %.1f runs/s, %zu verified\n", static_cast<long long>(*n_runs), file_ms / 1000, file_rate,
                file_verified);
    std::printf("database:     %lld runs in %.2f s, %.1f runs/s, %s verified, %s claims (queued in %.2f s, not counted)\n",
                static_cast<long long>(*n_runs), db_ms / 1000, db_rate, states->get(0, "verified").c_str(), states->get(0, "claims").c_str(),
                enqueue_ms / 1000);
    std::printf("database / file: %.3f\n", db_rate / file_rate);
    std::printf("database size: %.0f bytes per run (%lld events, tables grew by %lld bytes; now %lld runs, %lld bytes)\n", grown / n,
                static_cast<long long>(after->n_events - before->n_events), static_cast<long long>(grown),
                static_cast<long long>(after->n_runs), static_cast<long long>(after->runs_bytes + after->events_bytes));
    return 0;
}

}  // namespace

cli::command_spec make_bench_queue_command() {
    cli::command_spec c;
    c.name = "bench queue";
    c.summary = "runs/s through workers on PostgreSQL against the file-journal default, and the database's size per run";
    c.positionals = {{"AGENT.json", "agent definition file (its tools read {incident_dir}); workers find it by name in its folder"}};
    c.options = {
        {"db", 0, cli::option_kind::value, "URL", "", "PostgreSQL database (postgresql://user@host:5432/dbname)", true},
        {"runs", 'n', cli::option_kind::value, "N", "1000", "runs in each pass"},
        {"workers", 'w', cli::option_kind::value, "W", "2", "in-process workers claiming from the database"},
        {"concurrency", 'c', cli::option_kind::value, "C", "1", "runs at a time per worker (the file pass runs W x C at a time)"},
        {"seeds", 0, cli::option_kind::value, "A-B", "1000000-1000031", "incidents, taken in turn"},
        {"world", 0, cli::option_kind::value, "PATH", "", "incident-world program (default: beside this tachyon)"},
        {"threads", 't', cli::option_kind::value, "N", "1", "inference threads"},
    };
    c.run = bench_queue;
    return c;
}

}  // namespace tachyon
