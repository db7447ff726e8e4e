#include "runtime/db/worker.h"

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <variant>
#include <vector>

#include "base/log.h"
#include "runtime/agent/agent_run_replay.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/common/json_util.h"
#include "runtime/db/db_journal.h"
#include "runtime/db/run_store.h"
#include "runtime/db/schema.h"

namespace tachyon::db {
namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

// {"answer", "verified", "steps", "error", "journal"}: what GET /v1/runs/{id}
// answers as "result", the same as for a run in one process.
std::string result_json(std::string_view answer, bool verified, int64_t steps, std::string_view error, std::string_view journal) {
    return "{\"answer\":" + (answer.empty() ? std::string("null") : std::string(answer)) + ",\"verified\":" + (verified ? "true" : "false") +
           ",\"steps\":" + std::to_string(steps) + ",\"error\":" + (error.empty() ? std::string("null") : json::quote(error)) +
           ",\"journal\":" + (journal.empty() ? std::string("null") : json::quote(journal)) + "}";
}

// The run as its journal tells it, for a run that ended there while its
// worker died before the database heard of it.
std::string result_of_log(const journal::run_log& log) {
    const journal::final_event* fin = log.final_answer();
    const journal::run_end_event* end = log.end();
    return result_json(fin ? fin->answer_json : std::string(), fin && fin->verified, fin ? fin->steps : 0, end ? end->error : std::string(),
                       log.path.string());
}

bool valid_agent_name(const std::string& name) {
    if (name.empty() || name.size() > 128 || name.front() == '.') return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.')) return false;
    return true;
}

// The decisions of a resume that its worker did not journal before it died
// (it journals run_resume, then each decision): those after the run's last
// run_end, where it parked, are in the journal already.
std::vector<call_decision> unjournaled_decisions(const journal::run_log& log, const std::vector<call_decision>& decisions) {
    size_t from = 0;
    for (size_t i = 0; i < log.events.size(); ++i)
        if (std::holds_alternative<journal::run_end_event>(log.events[i].body)) from = i + 1;
    std::set<std::string> journaled;
    for (size_t i = from; i < log.events.size(); ++i)
        if (const auto* d = std::get_if<journal::decision_event>(&log.events[i].body)) journaled.insert(d->call_id);
    std::vector<call_decision> out;
    for (const auto& d : decisions)
        if (!journaled.count(d.call_id)) out.push_back(d);
    return out;
}

// The W3C traceparent the run was queued with (schema version 4), for its
// spans to continue; empty when it had none, or cannot be read (the run
// then gets a trace of its own).
asio::awaitable<std::string> queued_traceparent(pg_connection& conn, const std::string& run_id) {
    // Locals: see run_store.cpp on GCC 12 and temporaries inside co_await.
    std::string sql = "SELECT coalesce(traceparent, '') AS traceparent FROM tachyon.runs WHERE id = $1";
    std::vector<pg_value> params;
    params.emplace_back(run_id);
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    std::string traceparent;
    if (r && !r->rows.empty() && r->rows[0].size() == 1 && r->rows[0][0]) traceparent = *r->rows[0][0];
    co_return traceparent;
}

std::string default_owner() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
    return std::string(host) + ":" + std::to_string(::getpid());
}

}  // namespace

struct worker::impl {
    struct active_run {
        claimed_run claim;
        std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
        clock_type::time_point renewed = clock_type::now();
    };
    struct ended_run {
        std::string id;
        int64_t epoch = 0;  // of the claim that ran it
        run_outcome outcome;
    };

    agent_service& service;
    worker_options options;
    asio::io_context io;
    std::unique_ptr<pg_connection> conn;
    // The runs' journal connections, one per run going, reused by the next.
    std::shared_ptr<connection_pool> journals;
    std::map<std::string, active_run> active;  // used on the loop's thread only
    std::mutex mutex;                          // guards ended and stats
    std::vector<ended_run> ended;
    worker_stats counts;
    std::atomic<bool> stopping{false};
    std::atomic<bool> woken{false};

    impl(agent_service& s, worker_options o) : service(s), options(std::move(o)) {
        if (options.owner.empty()) options.owner = default_owner();
        journals = std::make_shared<connection_pool>(options.db_url);
    }

    // Ends the loop's wait early: a run ended, or stop() was called.
    void wake() {
        woken.store(true);
        asio::post(io, [this] {
            if (conn) conn->interrupt();
        });
    }

    void count(int worker_stats::*field) {
        std::lock_guard lock(mutex);
        ++(counts.*field);
    }

    asio::awaitable<status> loop();
    asio::awaitable<void> start_run(claimed_run c);
    asio::awaitable<status> settle_ended();
    asio::awaitable<status> renew_leases();
    asio::awaitable<void> drain();
    void cancel_if_asked(const std::vector<pg_notification>& notes);
    result<run_request> request_for(const claimed_run& c, const journal::run_log* log, std::vector<call_decision> decisions) const;
};

// NOTIFY tachyon_runs '<id> cancel' (request_cancel): a serve node asks for
// a run this worker holds to end.
void worker::impl::cancel_if_asked(const std::vector<pg_notification>& notes) {
    constexpr std::string_view suffix = " cancel";
    for (const auto& n : notes) {
        const std::string_view p = n.payload;
        if (p.size() <= suffix.size() || p.substr(p.size() - suffix.size()) != suffix) continue;
        auto it = active.find(std::string(p.substr(0, p.size() - suffix.size())));
        if (it == active.end()) continue;
        TACHYON_LOG(info, "worker " << options.owner << ": run " << it->first << ": cancel requested");
        it->second.cancel->store(true);
    }
}

result<run_request> worker::impl::request_for(const claimed_run& c, const journal::run_log* log, std::vector<call_decision> decisions) const {
    run_request req;
    if (log) {
        auto resumed = resume_request(*log, std::move(decisions));
        if (!resumed) return resumed.err();
        req = std::move(resumed).value();
    } else {
        if (!valid_agent_name(c.agent))
            return make_error(errc::invalid_argument, "run '" + c.id + "': agent '" + c.agent + "': expected an agent name (letters, digits, '_', '-', '.')");
        const std::string file = std::filesystem::absolute(std::filesystem::path(options.agents_dir) / (c.agent + ".json")).string();
        std::error_code ec;
        if (!std::filesystem::exists(file, ec))
            return make_error(errc::not_found, "run '" + c.id + "': agent '" + c.agent + "' not found (no " + file + ")");
        auto agent = load_agent_file(file, builtin_tool_names());
        if (!agent) return make_error(agent.err().code, "run '" + c.id + "': " + agent.err().message);
        req.agent = std::make_shared<agent_definition>(std::move(agent).value());
        req.task = c.task;
        req.inputs = c.inputs;
        req.run_id = c.id;
    }
    req.journal_dir.clear();
    // Every event of this run goes to the database under this claim's epoch.
    req.open_journal = [pool = journals, epoch = c.epoch](const std::string& run_id, const journal::run_log* resumed)
        -> result<std::unique_ptr<journal::event_sink>> {
        auto j = db_journal::open(pool, run_id, epoch, resumed);
        if (!j) return j.err();
        return std::unique_ptr<journal::event_sink>(std::move(j).value());
    };
    return req;
}

asio::awaitable<void> worker::impl::start_run(claimed_run c) {
    count(&worker_stats::claimed);
    std::optional<journal::run_log> log;
    std::vector<call_decision> decisions;
    if (c.n_events > 0) {
        // Claimed after its lease expired: its worker died or stalled. The
        // run goes on from its journal, unless the journal says it ended.
        count(&worker_stats::resumed);
        auto lines = co_await events_since(*conn, c.id, 0);
        auto parsed = lines ? journal_of_lines(c.id, *lines) : result<journal::run_log>(lines.err());
        if (!parsed) {
            TACHYON_LOG(error, __func__ << ": run " << c.id << ": " << parsed.err().message);
            auto f = co_await finish(*conn, c.id, c.epoch, "failed", result_json({}, false, 0, parsed.err().message, {}));
            if (f && *f) count(&worker_stats::finished);
            co_return;
        }
        log = std::move(parsed).value();
        const std::string state = log->state();
        // A parked run a serve node sent back to the queue goes on with the
        // person's decisions (journaled as it resumes). The node checked
        // them against this journal; one that no longer fits leaves the run
        // parked as it was.
        bool parked_resume = false;
        if (state != "interrupted" && c.resume_requested) {
            auto fits = check_resumable(*log, c.id, c.decisions);
            if (!fits) TACHYON_LOG(warn, "worker " << options.owner << ": " << fits.err().message << "; the run stays " << state);
            parked_resume = fits.ok();
        }
        if (state != "interrupted" && !parked_resume) {
            auto f = co_await finish(*conn, c.id, c.epoch, state, result_of_log(*log));
            if (f && *f) count(&worker_stats::finished);
            co_return;
        }
        if (parked_resume) decisions = c.decisions;
        // Its last worker died resuming it with a person's decisions (the
        // database keeps them until the run ends): those its journal does
        // not hold yet go with this resume, so that no one decides twice.
        else if (c.resume_requested) decisions = unjournaled_decisions(*log, c.decisions);
    }
    auto req = request_for(c, log ? &*log : nullptr, std::move(decisions));
    if (!req) {
        TACHYON_LOG(error, __func__ << ": " << req.err().message);
        auto f = co_await finish(*conn, c.id, c.epoch, "failed", result_json({}, false, 0, req.err().message, {}));
        if (f && *f) count(&worker_stats::finished);
        co_return;
    }
    req->traceparent = co_await queued_traceparent(*conn, c.id);
    active_run a;
    a.claim = c;
    auto cancel = a.cancel;
    // Asked for before this claim (or while its previous worker held it):
    // the run ends at its first step, cancelled in its journal.
    if (c.cancel_requested) cancel->store(true);
    // This worker may still run the claim before (its lease ran out while
    // the loop was slow, and the claim took the run back): the new epoch
    // fenced that one off, and it stops; its outcome is not this claim's.
    if (auto it = active.find(c.id); it != active.end()) {
        it->second.cancel->store(true);
        active.erase(it);
    }
    active.emplace(c.id, std::move(a));
    TACHYON_LOG(info, "worker " << options.owner << ": run " << c.id << (log ? " resumed" : " started") << " (lease epoch " << c.epoch << ")");
    service.start(std::move(req).value(), nullptr, cancel, [this, id = c.id, epoch = c.epoch](run_outcome out) {
        {
            std::lock_guard lock(mutex);
            ended.push_back({id, epoch, std::move(out)});
        }
        wake();
    });
}

asio::awaitable<status> worker::impl::settle_ended() {
    std::vector<ended_run> done;
    {
        std::lock_guard lock(mutex);
        done.swap(ended);
    }
    for (auto& e : done) {
        auto it = active.find(e.id);
        // the end of a claim superseded by a later one of this worker
        if (it == active.end() || it->second.claim.epoch != e.epoch) {
            count(&worker_stats::lost);
            TACHYON_LOG(info, "worker " << options.owner << ": run " << e.id << " (lease epoch " << e.epoch << ") lost its lease");
            continue;
        }
        const int64_t epoch = e.epoch;
        active.erase(it);
        const run_outcome& o = e.outcome;
        // Refused when the lease went to another worker: that one ends it.
        auto f = co_await finish(*conn, e.id, epoch, o.state, result_json(o.answer, o.verified, o.steps, o.error, o.journal_path));
        if (!f) co_return f.err();
        count(*f ? &worker_stats::finished : &worker_stats::lost);
        TACHYON_LOG(info, "worker " << options.owner << ": run " << e.id << (*f ? " ended " + o.state : std::string(" lost its lease")));
    }
    co_return status{};
}

asio::awaitable<status> worker::impl::renew_leases() {
    const auto now = clock_type::now();
    for (auto& [id, a] : active) {
        if (now - a.renewed < options.lease / 3) continue;
        bool cancel_requested = false;
        auto r = co_await renew(*conn, id, a.claim.epoch, options.lease, &cancel_requested);
        if (!r) co_return r.err();
        a.renewed = now;
        // A notification missed (the listener reconnected, or it came
        // while the loop was busy): the renewal tells it too.
        if (cancel_requested) a.cancel->store(true);
        if (!*r) {
            // Another worker holds the run: it stops here (its journal
            // writes are refused already).
            TACHYON_LOG(warn, "worker " << options.owner << ": run " << id << ": lease lost; stopping it");
            a.cancel->store(true);
        }
    }
    co_return status{};
}

// Cancels what runs and waits for it to end (recorded when the database answers).
asio::awaitable<void> worker::impl::drain() {
    for (auto& [id, a] : active) a.cancel->store(true);
    asio::steady_timer t(io);
    while (!active.empty()) {
        if (auto st = co_await settle_ended(); !st) {
            // The database is gone: the runs' leases expire and another worker resumes them.
            std::lock_guard lock(mutex);
            for (const auto& e : ended)
                if (auto it = active.find(e.id); it != active.end() && it->second.claim.epoch == e.epoch) active.erase(it);
            ended.clear();
        }
        if (active.empty()) break;
        t.expires_after(std::chrono::milliseconds(20));
        co_await t.async_wait(asio::use_awaitable);
    }
}

asio::awaitable<status> worker::impl::loop() {
    std::string listen = "LISTEN tachyon_runs";  // a local: see run_store.cpp on GCC 12
    if (auto r = co_await conn->async_exec(std::move(listen)); !r) co_return r.err();
    const auto tick = std::min(options.poll, std::max(std::chrono::milliseconds(10), options.lease / 3));
    while (!stopping.load()) {
        if (auto st = co_await settle_ended(); !st) {
            co_await drain();
            co_return st;
        }
        if (auto st = co_await renew_leases(); !st) {
            co_await drain();
            co_return st;
        }
        const int free = options.concurrency - static_cast<int>(active.size());
        size_t n_claimed = 0;
        if (free > 0) {
            auto claimed = co_await claim(*conn, options.owner, options.lease, free);
            if (!claimed) {
                co_await drain();
                co_return claimed.err();
            }
            n_claimed = claimed->size();
            for (auto& c : *claimed) co_await start_run(std::move(c));
        }
        if (options.exit_when_idle && n_claimed == 0 && active.empty()) {
            std::lock_guard lock(mutex);
            if (ended.empty()) break;
        }
        if (n_claimed > 0 && static_cast<int>(active.size()) < options.concurrency) continue;  // more may be waiting
        if (woken.exchange(false)) continue;
        auto n = co_await conn->async_wait_notifications(tick);
        if (!n) {
            co_await drain();
            co_return n.err();
        }
        cancel_if_asked(*n);
        woken.store(false);
    }
    co_await drain();
    co_return status{};
}

worker::worker(agent_service& service, worker_options options) : impl_(std::make_unique<impl>(service, std::move(options))) {}
worker::~worker() = default;

status worker::run() {
    impl& w = *impl_;
    if (w.options.concurrency < 1) return make_error(errc::invalid_argument, "--concurrency: expected a positive integer");
    if (w.options.lease < std::chrono::milliseconds(30))
        return make_error(errc::invalid_argument, "--lease-ms: expected at least 30 (the lease is renewed every third of it)");
    auto c = pg_connection::connect(w.options.db_url, w.io.get_executor());
    if (!c) return c.err();
    w.conn = std::move(c).value();
    if (auto m = migrate(*w.conn); !m) return m.err();
    status out;
    asio::co_spawn(w.io, w.loop(), [&out](std::exception_ptr e, status st) {
        if (e) {
            out = make_error(errc::internal, "worker: internal error in its loop");
            return;
        }
        out = std::move(st);
    });
    w.io.run();
    w.conn.reset();
    return out;
}

void worker::stop() {
    impl_->stopping.store(true);
    impl_->wake();
}

worker_stats worker::stats() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->counts;
}

const std::string& worker::owner() const { return impl_->options.owner; }

}  // namespace tachyon::db
