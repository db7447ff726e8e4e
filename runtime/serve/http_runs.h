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

#include "runtime/agent/agent_service.h"
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

    const std::string& id() const { return id_; }
    // {"id", "object": "run", "agent", "state", "created", "result": {...} | null}
    std::string status_json() const;
    std::string state() const;
    bool finished() const;
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

private:

    std::string id_;
    std::string agent_;
    int64_t created_ = 0;
    metrics* metrics_;
    std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
    mutable std::mutex mutex_;
    std::string state_ = "running";
    std::string result_json_ = "null";
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
};

class run_registry {
public:
    run_registry(agent_service& service, run_registry_options options, metrics* m);

    // Parses {"agent", "task", "inputs"} and starts the run. Errors: 400 for a
    // bad body or inputs the agent does not declare or that point outside the
    // data roots (errc::invalid_argument), 404 for an unknown agent
    // (errc::not_found), 429 when max_active runs are going.
    result<std::shared_ptr<run_record>> start(std::string_view body);
    // A run in memory, else one whose journal is in journal_dir (`id` must
    // be a run id: letters, digits, '-', '_', nothing that names a path);
    // null when neither.
    std::shared_ptr<run_record> find(std::string_view id) const;
    std::vector<std::shared_ptr<run_record>> list() const;
    run_state_counts counts() const;
    int n_active() const { return active_.load(); }

    void cancel_all();
    // Waits (sleeping; not on an I/O thread) until no run is active; false on timeout.
    bool wait_idle(std::chrono::milliseconds timeout) const;

private:
    agent_service& service_;
    run_registry_options options_;
    metrics* metrics_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<run_record>, std::less<>> runs_;
    std::deque<std::string> finished_;  // ids of finished runs, oldest first
    std::atomic<int> active_{0};
};

}  // namespace tachyon::http
