// A run's journal in the database: the event sink of a run that a worker
// holds under a lease (every line written with the lease's epoch, refused by
// the database once the epoch is stale), and the journal read back as the
// file reader reads it, for resuming and for answering over HTTP.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "runtime/db/pg_connection.h"
#include "runtime/journal/journal.h"

namespace tachyon::db {

class db_journal final : public journal::event_sink {
public:
    // The journal of run `run_id` held at lease `epoch`, on a connection of
    // its own. `resumed`: the run's events read back (seq and the run's
    // clock go on after them); null for a new run.
    static result<std::unique_ptr<db_journal>> open(const std::string& url, std::string run_id, int64_t epoch,
                                                    const journal::run_log* resumed, journal::writer_options options = {});
    // The same on a connection of `pool`, given back when the journal closes.
    static result<std::unique_ptr<db_journal>> open(std::shared_ptr<connection_pool> pool, std::string run_id, int64_t epoch,
                                                    const journal::run_log* resumed, journal::writer_options options = {});
    ~db_journal() override;

    // One round trip: the line is in the database (committed) when it
    // returns; on the server's disk too for the lines that must reach it
    // (journal::must_reach_disk) or with fsync_each_event, else once the
    // server flushes its WAL (asynchronous commit, within a second).
    // Refused with errc::cancelled once the epoch is stale.
    result<journal::event> append(const journal::event_body& body) override;
    int64_t n_events() const override;
    std::chrono::steady_clock::time_point start() const override { return start_; }
    std::string location() const override { return "postgresql:" + run_id_; }
    // True once a write was refused: another worker holds the run.
    bool fenced() const { return fenced_.load(); }

private:
    db_journal() = default;
    std::shared_ptr<connection_pool> pool_;
    std::unique_ptr<pg_connection> conn_;
    std::string run_id_;
    int64_t epoch_ = 0;
    journal::writer_options options_;
    std::chrono::steady_clock::time_point start_;
    int64_t next_seq_ = 0;
    std::atomic<bool> fenced_{false};
    mutable std::mutex mutex_;
};

// The journal of run `run_id` from its lines in the database, parsed as a
// journal file is (journal::parse_journal); its path is "postgresql:<id>".
result<journal::run_log> journal_of_lines(const std::string& run_id, const std::vector<std::pair<int64_t, std::string>>& lines);

}  // namespace tachyon::db
