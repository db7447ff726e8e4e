// Runs in the database (schema.h): queued by `serve --db`, claimed by
// `tachyon worker` processes under leases, their journal events written
// under the lease's epoch.
//
// Leases: a claim takes a queued run, or a running one whose lease has
// expired (its worker died or stalled), with FOR UPDATE SKIP LOCKED, so two
// workers claiming at once never take the same run. Each claim adds one to
// the run's lease_epoch and sets lease_expires; the worker renews the lease
// well before it expires. Fencing: every event insert, renewal and end of
// the run names the epoch it was claimed with, and the database refuses it
// when the run's epoch has moved on (another worker claimed it): a worker
// that stalled past its lease cannot write into the journal of the worker
// that took over, and a run ends exactly once.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "base/result.h"
#include "runtime/agent/agent_run_replay.h"
#include "runtime/db/pg_connection.h"

namespace tachyon::db {

struct claimed_run {
    std::string id;
    std::string agent;  // the agent's name (<agents dir>/<agent>.json)
    std::string task;
    std::map<std::string, std::string> inputs;
    int64_t epoch = 0;     // the lease epoch this claim holds
    int64_t n_events = 0;  // events already in its journal (> 0: resume it)
    int n_claims = 0;      // claims so far, this one included
    // A parked run a serve node sent back to the queue (request_resume):
    // the decisions to journal as it resumes (maybe none). They stay in
    // the database until the run ends, so that the claim after a worker
    // that died before journaling them finds them again.
    bool resume_requested = false;
    std::vector<call_decision> decisions;
    bool cancel_requested = false;  // a serve node asked for it: the run is to end cancelled
};

struct run_row {
    std::string id;
    std::string agent;
    std::string task;
    std::string state;        // queued, running, or the run's end state
    std::string lease_owner;  // empty when none
    int64_t lease_epoch = 0;
    std::string result_json;  // "null" until the run ends
    int64_t created = 0;      // seconds since the epoch
    int n_claims = 0;
    int64_t n_events = 0;  // list_runs only
};

// A page of runs, newest first (created_at, then id).
struct run_page_query {
    std::string state;  // empty: any
    int limit = 100;
    std::string after;  // the id of the last run of the previous page; empty: from the newest
};

// What the runs take in the database.
struct db_usage {
    int64_t n_runs = 0;
    int64_t n_events = 0;
    int64_t runs_bytes = 0;    // tachyon.runs with its indexes and TOAST
    int64_t events_bytes = 0;  // tachyon.events with its indexes and TOAST
    double bytes_per_run() const { return n_runs ? static_cast<double>(runs_bytes + events_bytes) / n_runs : 0; }
};

// The inputs as the JSON object stored in tachyon.runs.inputs, and back
// (errors name the run).
std::string inputs_json(const std::map<std::string, std::string>& inputs);
result<std::map<std::string, std::string>> parse_inputs_json(const std::string& json, const std::string& run_id);

// The decisions as the JSON array stored in tachyon.runs.decisions, and back.
std::string decisions_json(const std::vector<call_decision>& decisions);
result<std::vector<call_decision>> parse_decisions_json(const std::string& json, const std::string& run_id);

// Adds a queued run. Fails (errc::invalid_argument) when the id is taken.
// `traceparent`: the queueing request's trace context, which the worker's
// spans of the run continue; empty: none (the run starts a trace of its own).
boost::asio::awaitable<status> enqueue(pg_connection& conn, const std::string& id, const std::string& agent, const std::string& task,
                                       const std::map<std::string, std::string>& inputs, const std::string& traceparent = {});
// Claims up to `max_runs` runs for `owner`, oldest first: queued ones and
// running ones whose lease expired.
boost::asio::awaitable<result<std::vector<claimed_run>>> claim(pg_connection& conn, const std::string& owner,
                                                               std::chrono::milliseconds lease, int max_runs);
// Extends the lease of a run held at `epoch`; false: the lease is lost
// (another worker claimed the run, or it ended). `cancel_requested`, when
// given, is set when a serve node asked for the run to be cancelled.
boost::asio::awaitable<result<bool>> renew(pg_connection& conn, const std::string& id, int64_t epoch, std::chrono::milliseconds lease,
                                           bool* cancel_requested = nullptr);
// Ends a run held at `epoch` in `state` with `result_json`; false: refused
// (the epoch is stale, or the run ended already).
boost::asio::awaitable<result<bool>> finish(pg_connection& conn, const std::string& id, int64_t epoch, const std::string& state,
                                            const std::string& result_json);
// Sends a parked run (needs_attention, awaiting_approval) back to the
// queue with `decisions`, for a worker to resume. Fenced like a worker's
// writes: only while the run is still parked at `epoch` (the lease epoch
// its journal was read at); false: it is not (another node decided first,
// or it is no longer parked).
boost::asio::awaitable<result<bool>> request_resume(pg_connection& conn, const std::string& id, int64_t epoch,
                                                    const std::vector<call_decision>& decisions);
// Asks for a queued or running run to be cancelled: its worker hears of it
// (NOTIFY tachyon_runs '<id> cancel', and at its next renewal) and ends it
// cancelled, journaled; a queued run no worker has started yet ends
// cancelled at once. The run's state after it; nullopt: the run was not
// queued or running (nothing to cancel).
boost::asio::awaitable<result<std::optional<std::string>>> request_cancel(pg_connection& conn, const std::string& id);
// A page of runs (n_events counted), and whether more follow it.
boost::asio::awaitable<result<std::pair<std::vector<run_row>, bool>>> list_runs(pg_connection& conn, const run_page_query& q);
boost::asio::awaitable<result<std::optional<run_row>>> get_run(pg_connection& conn, const std::string& id);
// The run's journal lines with seq >= from, in order.
boost::asio::awaitable<result<std::vector<std::pair<int64_t, std::string>>>> events_since(pg_connection& conn, const std::string& id,
                                                                                          int64_t from);
boost::asio::awaitable<result<db_usage>> usage(pg_connection& conn);

// Blocking forms, for the journal's writer thread (db_journal.h) and for
// tests.
// Writes one journal line of run `id` under lease `epoch`; false: refused,
// the epoch is stale (fenced).
result<bool> append_event(pg_connection& conn, const std::string& id, int64_t epoch, int64_t seq, const std::string& line);
// Writes consecutive journal lines of run `id`, seq `first_seq` on, in one
// statement (one round trip, one commit); false: refused, none written.
result<bool> append_events(pg_connection& conn, const std::string& id, int64_t epoch, int64_t first_seq,
                           const std::vector<std::string_view>& lines);
result<std::vector<std::pair<int64_t, std::string>>> read_events(pg_connection& conn, const std::string& id);

}  // namespace tachyon::db
