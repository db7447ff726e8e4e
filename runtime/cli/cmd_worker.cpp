// `tachyon worker --db URL`: claims runs queued in PostgreSQL (by `tachyon
// serve --db`) and runs them under renewed leases, resuming from its
// journal a run whose worker died (runtime/db/worker.h). SIGINT/SIGTERM:
// the runs going are cancelled and their end recorded; a second signal
// exits at once (the leases expire and another worker resumes the runs).
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <iostream>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <optional>

#include "runtime/agent/agent_service.h"
#include "runtime/cli/cli.h"
#include "runtime/db/pg_connection.h"
#include "runtime/db/run_store.h"
#include "runtime/db/schema.h"
#include "runtime/db/worker.h"
#include "runtime/telemetry/tracer.h"

namespace tachyon {
namespace {

// --usage: what the runs take in the database, then exit.
int print_usage(const std::string& url) {
    boost::asio::io_context io;
    auto conn = db::pg_connection::connect(url, io.get_executor());
    if (!conn) {
        std::cerr << "tachyon worker: " << conn.err().message << "\n";
        return 1;
    }
    if (auto m = db::migrate(**conn); !m) {
        std::cerr << "tachyon worker: " << m.err().message << "\n";
        return 1;
    }
    std::optional<result<db::db_usage>> u;
    boost::asio::co_spawn(
        io, [&]() -> boost::asio::awaitable<void> { u.emplace(co_await db::usage(**conn)); }, boost::asio::detached);
    io.run();
    if (!u) {
        std::cerr << "tachyon worker: the usage query did not end\n";
        return 1;
    }
    if (!*u) {
        std::cerr << "tachyon worker: " << u->err().message << "\n";
        return 1;
    }
    const db::db_usage& s = u->value();
    std::printf("runs %lld, events %lld, runs table %lld bytes, events table %lld bytes, %.0f bytes per run\n",
                static_cast<long long>(s.n_runs), static_cast<long long>(s.n_events), static_cast<long long>(s.runs_bytes),
                static_cast<long long>(s.events_bytes), s.bytes_per_run());
    return 0;
}

int worker_command(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon worker: " << m << "\n";
        return 1;
    };
    db::worker_options o;
    o.db_url = args.get_or("db", "");
    if (o.db_url.empty()) return fail("--db: required (postgresql://user@host:5432/dbname)");
    if (auto st = db::check_db_url(o.db_url, "--db"); !st) return fail(st.err().message);
    if (args.flag("usage")) return print_usage(o.db_url);
    auto concurrency = args.get_int("concurrency");
    auto lease = args.get_int("lease-ms");
    auto poll = args.get_int("poll-ms");
    auto threads = args.get_int("threads");
    auto ctx = args.get_int("ctx");
    if (!concurrency || *concurrency < 1 || *concurrency > 256) return fail("--concurrency: expected an integer in [1, 256]");
    if (!lease || *lease < 30) return fail("--lease-ms: expected an integer >= 30 (the lease is renewed every third of it)");
    if (!poll || *poll < 1) return fail("--poll-ms: expected a positive integer");
    if (!threads || *threads < 0) return fail("--threads: expected an integer >= 0 (0: one per hardware thread)");
    if (!ctx || *ctx < 256) return fail("--ctx: expected an integer >= 256");
    o.agents_dir = args.get_or("agents", "agents");
    o.concurrency = static_cast<int>(*concurrency);
    o.lease = std::chrono::milliseconds(*lease);
    o.poll = std::chrono::milliseconds(*poll);
    o.owner = args.get_or("owner", "");
    o.exit_when_idle = args.flag("exit-when-idle");

    // Tracing, as for serve: each run's spans, continuing the traceparent it was queued with.
    auto tracer = telemetry::tracer_from_env(args.get_or("otlp-endpoint", ""));
    if (!tracer) return fail(tracer.err().message);

    service_options svc;
    svc.tracer = *tracer;
    svc.engine.n_threads = static_cast<int>(*threads);
    svc.engine.n_ctx = static_cast<int>(*ctx);
    svc.engine.kv_f16 = !args.flag("kv-f32");
    // A journal line is one round trip to the database, on the run's
    // thread: one event loop thread per concurrent run keeps the others going.
    svc.n_io_threads = o.concurrency;
    agent_service service(svc);
    db::worker w(service, o);

    boost::asio::io_context signals_io;
    boost::asio::signal_set signals(signals_io, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code ec, int) {
        if (ec) return;
        std::fprintf(stderr, "tachyon worker: stopping (cancelling the runs going)\n");
        w.stop();
        signals.async_wait([](boost::system::error_code e, int) {
            if (!e) std::_Exit(130);
        });
    });
    std::thread signal_thread([&] { signals_io.run(); });
    std::fprintf(stderr, "tachyon worker %s: claiming runs from %s (agents: %s, concurrency %d, lease %lld ms)\n", w.owner().c_str(),
                 db::redact_url(o.db_url).c_str(), o.agents_dir.c_str(), o.concurrency, static_cast<long long>(o.lease.count()));
    const status st = w.run();
    signals_io.stop();
    signal_thread.join();
    if (*tracer) (*tracer)->flush(std::chrono::seconds(2));
    const db::worker_stats s = w.stats();
    if (st || s.claimed > 0)
        std::fprintf(stderr, "tachyon worker: %d claimed (%d resumed), %d ended here, %d lost to another worker\n", s.claimed, s.resumed,
                     s.finished, s.lost);
    if (!st) return fail(st.err().message);
    return 0;
}

}  // namespace

cli::command_spec make_worker_command() {
    cli::command_spec c;
    c.name = "worker";
    c.summary = "run agent runs queued in PostgreSQL (by `tachyon serve --db`), under leases";
    c.description = "Claims queued runs (FOR UPDATE SKIP LOCKED) up to --concurrency at a time, each under a lease it renews\n"
                    "every third of --lease-ms. A run whose lease expired (its worker died) is claimed by another worker and\n"
                    "resumed from its journal in the database. Every journal event is written under the lease's epoch and\n"
                    "refused once another worker holds the run (fencing). Agents are found by name in --agents.\n"
                    "The schema is created or migrated at start (README, \"Runs in PostgreSQL\").";
    c.options = {
        {"db", 0, cli::option_kind::value, "URL", "", "PostgreSQL database (postgresql://user@host:5432/dbname)", true},
        {"agents", 0, cli::option_kind::value, "DIR", "agents", "folder of agent files (<name>.json)"},
        {"concurrency", 0, cli::option_kind::value, "N", "2", "runs at a time"},
        {"lease-ms", 0, cli::option_kind::value, "MS", "10000", "lease of a claimed run; another worker takes it this long after this one dies"},
        {"poll-ms", 0, cli::option_kind::value, "MS", "1000", "how often to look for runs whose lease expired"},
        {"owner", 0, cli::option_kind::value, "NAME", "", "this worker's name in the runs' lease_owner (default <host>:<pid>)"},
        {"exit-when-idle", 0, cli::option_kind::flag, "", "", "stop once no run is left to claim and none is going"},
        {"usage", 0, cli::option_kind::flag, "", "", "print what the runs take in the database (bytes per run) and exit"},
        {"threads", 't', cli::option_kind::value, "N", "0", "inference threads per model (0: one per hardware thread; a call too small to pay for the fan-out runs on one)"},
        {"ctx", 'c', cli::option_kind::value, "N", "32768", "KV positions per model, all runs together"},
        {"kv-f32", 0, cli::option_kind::flag, "", "", "hold the KV cache in f32 (default fp16: half the memory and the bytes attention reads)"},
        {"otlp-endpoint", 0, cli::option_kind::value, "URL", "", "export the runs' spans as OTLP/HTTP JSON to URL/v1/traces (else OTEL_EXPORTER_OTLP_ENDPOINT)"},
    };
    c.run = worker_command;
    return c;
}

}  // namespace tachyon
