// Agent runs over HTTP (POST /v1/runs and friends): starts runs of agent
// files found by name on the agent service, keeps each run's events in
// memory as the journal writes them (the same lines and sequence ids, so an
// SSE client can resume with Last-Event-ID, before or after a restart), and
// answers for finished runs no longer in memory (another process's, or
// dropped) from their journal files. Thread-safe; nothing here knows HTTP.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "runtime/agent/agent_service.h"
#include "runtime/common/async_flag.h"
#include "runtime/db/run_directory.h"
#include "runtime/serve/http_metrics.h"
#include "runtime/journal/journal.h"

namespace tachyon::http {

// One run: its state and events. The agent loop calls the observer methods
// on its strand; readers call the rest from any thread.
class run_record : public run_observer {
public:
    run_record(std::string id, std::string agent, metrics* m);
    // A run read back from its journal: finished, in its last state
    // ("interrupted" when the journal has no run_end).
    static std::shared_ptr<run_record> from_journal(const journal::run_log& log);
    // A run resumed from `log`: its recorded events first (the same seq, so
    // an SSE client resumes with Last-Event-ID), then the new ones; running.
    static std::shared_ptr<run_record> resumed(const journal::run_log& log, metrics* m);

    const std::string& id() const { return id_; }
    // {"id", "object": "run", "agent", "state", "created", "n_events",
    //  "pending": [{"call_id", "name", "arguments", "reason", "message"}],
    //  "result": {...} | null}
    std::string status_json() const;
    std::string state() const;
    bool finished() const;
    int64_t created() const;
    // Sets the cancel flag the agent loop watches (a run in the database is
    // cancelled through run_registry::async_cancel).
    void cancel();

    // Events with seq >= from (each one journal JSON line, without '\n').
    // When there are none and the run is still going, `wake` is kept and
    // called once (from any thread) when the next event arrives or the run
    // ends; it must only post.
    void read_events(int64_t from, std::vector<std::pair<int64_t, std::string>>& out, bool& done, std::function<void()> wake);

    // Agent loop side: every journal event, as written (seq included).
    void on_event(const journal::event& e) override;
    void on_tool_end(const run_tool_call& c) override;  // metrics
    void finished(const run_outcome& outcome);

    std::shared_ptr<std::atomic<bool>> cancel_flag() const { return cancel_; }

    // A run as the database holds it (serve --db): its state and result,
    // and journal lines of which the record keeps those it lacks; `ended`:
    // the run is over (readers are told so). Wakes waiting readers.
    void update_from_db(const std::string& state, const std::string& result_json, const std::string& pending_json,
                        const std::vector<std::pair<int64_t, std::string>>& lines, bool ended);
    // The seq of the next event it expects.
    int64_t next_seq() const;

private:

    std::string id_;
    std::string agent_;
    int64_t created_ = 0;
    metrics* metrics_;
    std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
    mutable std::mutex mutex_;
    std::string state_ = "running";
    std::string result_json_ = "null";
    std::string pending_json_ = "[]";  // the calls a parked run waits on
    std::vector<std::pair<int64_t, std::string>> events_;  // (seq, journal line), seq increasing
    std::vector<std::function<void()>> waiters_;
    bool done_ = false;
};

struct run_registry_options {
    std::string agents_dir = "agents";  // <name>.json
    std::string journal_dir = "runs";
    int max_active = 8;                 // more: errc::resource_exhausted (429)
    int max_finished = 1000;            // finished runs kept in memory, oldest dropped first (journals stay on disk)
    // Model files the server already serves: an agent on the same file
    // (compared after canonicalisation) shares that host's engine.
    std::vector<std::string> model_paths;
    // Directories path inputs of runs must resolve inside (check_run_inputs);
    // none: runs with path inputs are refused.
    std::vector<std::string> data_roots;
    // Set (serve --db): runs are queued in this PostgreSQL database for
    // `tachyon worker`s, and every run is answered from there.
    std::string db_url;
};

class run_registry {
public:
    run_registry(agent_service& service, run_registry_options options, metrics* m);
    ~run_registry();
    // With options.db_url: connects, migrates the schema and listens for
    // the runs' events. Call once before serving.
    status open_database();
    // Ends the database's thread once its requests in flight have answered
    // (later ones are refused). The server calls it when it stops, while the
    // executors those answers go back to still exist.
    void close_database();

    // What the HTTP API calls: start, resume, find and list_json below, as
    // awaitables. With a database they wait on it without blocking the
    // caller's thread (requests run concurrently, each on a connection of
    // the directory's pool); without one they are the calls below.
    boost::asio::awaitable<result<std::shared_ptr<run_record>>> async_start(std::string body, std::string traceparent = {});
    boost::asio::awaitable<result<std::shared_ptr<run_record>>> async_resume(std::string id, std::vector<call_decision> decisions);
    boost::asio::awaitable<std::shared_ptr<run_record>> async_find(std::string id) const;
    boost::asio::awaitable<result<std::string>> async_list_json(std::string query) const;
    // POST /v1/runs/{id}/cancel: the run's cancel flag; with a database, its
    // worker is asked through the database (run_store.h, request_cancel)
    // and the record reads the run's state after it.
    boost::asio::awaitable<void> async_cancel(std::shared_ptr<run_record> run);

    // Parses {"agent", "task", "inputs"} and starts the run. Errors: 400 for a
    // bad body or inputs the agent does not declare or that point outside the
    // data roots (errc::invalid_argument), 404 for an unknown agent
    // (errc::not_found), 429 when max_active runs are going. `traceparent`:
    // the request's W3C trace context, which the run's spans continue.
    // With a database: async_start only (this refuses, errc::unsupported).
    result<std::shared_ptr<run_record>> start(std::string_view body, std::string traceparent = {});
    // Continues run `id` from its journal (POST /v1/runs/{id}/resume; with a
    // decision from parse_decision: /decide, /approve, /reject). Errors: 404
    // for an unknown run (errc::not_found), 409 when it is running here
    // (errc::unsupported: see running()), 400 when it ended for good or the
    // decision names no call it waits on (errc::invalid_argument), 429 when
    // max_active runs are going. With a database (async_resume only): a
    // parked run goes back to the queue with the decisions, which the
    // worker that claims it journals as it resumes it (state "queued" until
    // then); 409 when it is queued or running, or another request resumed
    // it first.
    result<std::shared_ptr<run_record>> resume(std::string_view id, std::vector<call_decision> decisions);
    // The decision in a request body: {"call_id", "action": "retry"|"skip"}
    // for `verb` "decide", {"call_id", "reason"?} for "approve" and "reject".
    static result<call_decision> parse_decision(std::string_view body, std::string_view verb);
    // True while run `id` is going in this server.
    bool running(std::string_view id) const;
    // A run in memory, else one whose journal is in journal_dir (`id` must
    // be a run id: letters, digits, '-', '_', nothing that names a path);
    // null when neither. With a database (async_find only): the run as the
    // database holds it, kept current while someone holds the record.
    std::shared_ptr<run_record> find(std::string_view id) const;
    std::vector<std::shared_ptr<run_record>> list() const;
    // GET /v1/runs?limit=&after=&state=: {"object": "list", "data": [run...],
    // "first_id", "last_id", "has_more"}, newest first; `after` is the
    // last_id of the previous page. With a database (async_list_json only),
    // its runs (any node's); else the runs in memory. Errors (400) name the
    // parameter.
    result<std::string> list_json(std::string_view query) const;
    run_state_counts counts() const;
    int n_active() const { return active_.load(); }

    void cancel_all();
    // Waits (sleeping; not on an I/O thread) until no run is active; false on timeout.
    bool wait_idle(std::chrono::milliseconds timeout) const;

private:
    // A run request from a POST /v1/runs body: its agent loaded, its inputs
    // checked; `name` is the agent's.
    struct start_request {
        std::string name;
        run_request req;
    };
    result<start_request> parse_start(std::string_view body) const;
    static result<db::run_page_query> parse_list_query(std::string_view query);
    // Starts `req` for `record` on the service; the record is in runs_.
    void launch(run_request req, const std::shared_ptr<run_record>& record);
    // serve --db: a run read from the database, kept current by its
    // notifications while someone holds it; null when there is none.
    boost::asio::awaitable<std::shared_ptr<run_record>> find_in_db(std::string id) const;
    // Reads what is new of a watched run and hands it to its record; on
    // the directory's thread. One refresh of a run at a time, so that the
    // record sees the run's states in order: asked while one goes, it makes
    // that one read again and waits for it.
    boost::asio::awaitable<void> refresh_from_db(std::string id) const;
    // The same from any executor: done when the record has read the run as
    // it is now.
    boost::asio::awaitable<void> refresh_in_db(std::string id) const;
    // The calls a parked run waits on ([] for any other state), from its journal.
    boost::asio::awaitable<std::string> pending_in_db(const db::run_row& row) const;
    boost::asio::awaitable<result<std::shared_ptr<run_record>>> resume_in_db(std::string id, std::vector<call_decision> decisions);
    std::unique_ptr<db::run_directory> db_;
    struct db_watch {
        std::weak_ptr<run_record> record;
        bool busy = false;   // a refresh is reading it
        bool again = false;  // something changed while it read
        // Set when the refresh going ends; on the directory's thread.
        std::shared_ptr<async_flag> done;
    };
    // Wakes those waiting on w's refresh (from any thread).
    void release_waiters(db_watch& w) const;
    mutable std::mutex db_mutex_;  // guards watched_
    mutable std::map<std::string, db_watch> watched_;
    std::atomic<bool> db_open_{false};  // db_ is set: notifications may use it

    agent_service& service_;
    run_registry_options options_;
    metrics* metrics_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<run_record>, std::less<>> runs_;
    std::deque<std::string> finished_;  // ids of finished runs, oldest first
    std::atomic<int> active_{0};
};

}  // namespace tachyon::http
