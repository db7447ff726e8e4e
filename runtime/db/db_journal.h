// A run's journal in the database: the event sink of a run that a worker
// holds under a lease (every line written with the lease's epoch, refused by
// the database once the epoch is stale), and the journal read back as the
// file reader reads it, for resuming and for answering over HTTP.
//
// Lines are written by a thread of the journal's own, on a connection of its
// own: append hands an ordinary line over and returns at once, and the
// writer sends what has queued up meanwhile as one multi-row INSERT per
// round trip, in order. A line that must reach disk (journal::must_reach_disk,
// or every line with fsync_each_event), the run's end and the journal's close
// wait until every line before them is committed, as the file journal's
// fsync does. A crash loses only a tail of ordinary lines not yet written:
// what the database holds is always a prefix of the journal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

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
    // Closes the journal: waits until every line is written (or refused).
    ~db_journal() override;

    // Stamps the line and queues it for the writer. An ordinary line: the
    // write follows, and an error or a refusal shows at a later append.
    // A line that waits (see above) returns once it is committed; on the
    // server's disk too for the lines that must reach it, else once the
    // server flushes its WAL (asynchronous commit, within a second).
    // Refused with errc::cancelled once the epoch is stale (a write was
    // refused: another worker holds the run); after a failed write every
    // append fails, so that no later line lands after a missing one.
    result<journal::event> append(const journal::event_body& body) override;
    // Waits until every line appended so far is committed; the error that
    // stopped the writer, if one did.
    status flush();
    int64_t n_events() const override;
    std::chrono::steady_clock::time_point start() const override { return start_; }
    std::string location() const override { return "postgresql:" + run_id_; }
    // True once a write was refused: another worker holds the run.
    bool fenced() const { return fenced_.load(); }

private:
    struct queued_line {
        int64_t seq;
        std::string line;
        bool to_disk;  // its commit flushes the WAL (synchronous_commit on)
    };
    db_journal() = default;
    void write_loop();
    // Writes `batch` (consecutive seqs) in one statement; refused: false.
    result<bool> write_batch(const std::deque<queued_line>& batch);
    // The error an append after a refused or failed write returns.
    error stopped_error() const;

    std::shared_ptr<connection_pool> pool_;
    std::unique_ptr<pg_connection> conn_;  // the writer thread's
    std::string run_id_;
    int64_t epoch_ = 0;
    journal::writer_options options_;
    std::chrono::steady_clock::time_point start_;
    std::atomic<bool> fenced_{false};

    mutable std::mutex mutex_;  // guards what follows
    std::condition_variable queued_cv_;     // the writer waits for lines
    std::condition_variable committed_cv_;  // appends wait for commits
    std::deque<queued_line> queue_;
    int64_t next_seq_ = 0;       // the seq the next append gets
    int64_t committed_seq_ = 0;  // every line before it is committed
    int64_t refused_seq_ = -1;   // the first line the database refused
    std::optional<error> failed_;  // a write that failed (not a refusal)
    bool closing_ = false;
    // Calls with side effects started and not yet answered: their result
    // line waits for its commit too, so a worker that dies after such a
    // call leaves its result, not a call that may have run (needs_attention).
    std::set<std::string> side_effect_calls_;
    std::thread writer_;
};

// The journal of run `run_id` from its lines in the database, parsed as a
// journal file is (journal::parse_journal); its path is "postgresql:<id>".
result<journal::run_log> journal_of_lines(const std::string& run_id, const std::vector<std::pair<int64_t, std::string>>& lines);

}  // namespace tachyon::db
