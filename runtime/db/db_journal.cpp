#include "runtime/db/db_journal.h"

#include <algorithm>
#include <variant>

#include "runtime/db/run_store.h"

namespace tachyon::db {

namespace {

// One statement's worth of lines: what queued up while the last one was
// written, bounded so that a burst of large results does not make one
// statement of hundreds of megabytes.
constexpr size_t batch_max_lines = 1000;
constexpr size_t batch_max_bytes = 4u << 20;

}  // namespace

result<std::unique_ptr<db_journal>> db_journal::open(const std::string& url, std::string run_id, int64_t epoch,
                                                     const journal::run_log* resumed, journal::writer_options options) {
    return open(std::make_shared<connection_pool>(url), std::move(run_id), epoch, resumed, options);
}

db_journal::~db_journal() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    queued_cv_.notify_all();
    // The writer sends what is queued first.
    if (writer_.joinable()) writer_.join();
    if (pool_) pool_->give_back(std::move(conn_));
}

result<std::unique_ptr<db_journal>> db_journal::open(std::shared_ptr<connection_pool> pool, std::string run_id, int64_t epoch,
                                                     const journal::run_log* resumed, journal::writer_options options) {
    auto conn = pool->take();
    if (!conn) return conn.err();
    std::unique_ptr<db_journal> j(new db_journal());
    j->run_id_ = std::move(run_id);
    j->pool_ = std::move(pool);
    j->conn_ = std::move(conn).value();
    // As the file journal's lines reach the page cache: a committed line
    // survives the worker's death at once, and the database server's crash
    // once its WAL is flushed (within three wal_writer_delay, 600 ms by
    // default), without a disk flush per line. The lines that must reach
    // disk are committed synchronously (write_batch).
    if (!options.fsync_each_event)
        if (auto st = j->conn_->exec_script("SET synchronous_commit = off"); !st)
            return make_error(st.err().code, "journal of run '" + j->run_id_ + "': " + st.err().message);
    j->epoch_ = epoch;
    j->options_ = options;
    j->start_ = std::chrono::steady_clock::now();
    if (resumed && !resumed->events.empty()) {
        j->next_seq_ = resumed->events.back().seq + 1;
        j->committed_seq_ = j->next_seq_;
        // The run's clock goes on from its last event, as a resumed file journal's does.
        j->start_ -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double, std::milli>(resumed->events.back().t_ms));
    }
    j->writer_ = std::thread([w = j.get()] { w->write_loop(); });
    return j;
}

int64_t db_journal::n_events() const {
    std::lock_guard lock(mutex_);
    return next_seq_;
}

error db_journal::stopped_error() const {
    if (fenced_.load())
        return make_error(errc::cancelled, "run '" + run_id_ + "': the database refused event " + std::to_string(refused_seq_) + " of lease epoch " +
                                               std::to_string(epoch_) + " (another worker holds the run now); nothing after it is written");
    // Not errc::cancelled, which means fenced to the agent loop.
    const errc code = failed_->code == errc::cancelled ? errc::io_error : failed_->code;
    return make_error(code, failed_->message + "; nothing after it is written (the journal stays a prefix)");
}

result<journal::event> db_journal::append(const journal::event_body& body) {
    std::unique_lock lock(mutex_);
    if (fenced_.load() || failed_) return stopped_error();
    const double t_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    journal::event e{next_seq_, t_ms, body};
    std::string line = journal::to_json_line(e, options_.max_result_bytes);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    const bool to_disk = options_.fsync_each_event || journal::must_reach_disk(body);
    // The run's end waits too: the worker ends the run in the database
    // once the journal has said so, and a write after that is refused.
    bool waits = to_disk || std::holds_alternative<journal::run_end_event>(body);
    if (const auto* s = std::get_if<journal::tool_start_event>(&body); s && !s->read_only) side_effect_calls_.insert(s->call_id);
    if (const auto* c = std::get_if<journal::tool_call_event>(&body)) waits = side_effect_calls_.erase(c->call_id) > 0 || waits;
    // With fsync_each_event every commit flushes already.
    queue_.push_back({e.seq, std::move(line), to_disk && !options_.fsync_each_event});
    ++next_seq_;
    queued_cv_.notify_one();
    if (!waits) return e;
    committed_cv_.wait(lock, [&] { return committed_seq_ > e.seq || fenced_.load() || failed_; });
    if (committed_seq_ > e.seq) return e;
    return stopped_error();
}

status db_journal::flush() {
    std::unique_lock lock(mutex_);
    const int64_t upto = next_seq_;
    committed_cv_.wait(lock, [&] { return committed_seq_ >= upto || fenced_.load() || failed_; });
    // A refused batch takes next_seq_ back to what was committed: a flush
    // that starts after it must still fail.
    if (fenced_.load() || failed_) return stopped_error();
    return {};
}

void db_journal::write_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        queued_cv_.wait(lock, [&] { return !queue_.empty() || closing_; });
        if (queue_.empty()) return;  // closing, and everything is written
        std::deque<queued_line> batch;
        size_t bytes = 0;
        while (!queue_.empty() && (batch.empty() || (batch.size() < batch_max_lines && bytes + queue_.front().line.size() <= batch_max_bytes))) {
            bytes += queue_.front().line.size();
            batch.push_back(std::move(queue_.front()));
            queue_.pop_front();
        }
        lock.unlock();
        auto written = write_batch(batch);
        lock.lock();
        if (written && *written) {
            committed_seq_ = batch.back().seq + 1;
        } else {
            // Nothing after this batch is written: what the database holds
            // stays a prefix of the journal.
            if (!written) failed_ = make_error(written.err().code, "journal of run '" + run_id_ + "': " + written.err().message);
            else {
                refused_seq_ = batch.front().seq;
                fenced_.store(true);
            }
            queue_.clear();
            next_seq_ = committed_seq_;
        }
        committed_cv_.notify_all();
    }
}

result<bool> db_journal::write_batch(const std::deque<queued_line>& batch) {
    // The commit of a line that must reach disk flushes the WAL before it,
    // the earlier lines' with it.
    const bool to_disk = std::any_of(batch.begin(), batch.end(), [](const queued_line& q) { return q.to_disk; });
    if (to_disk)
        if (auto st = conn_->exec_script("SET synchronous_commit = on"); !st) return st.err();
    std::vector<std::string_view> lines;
    lines.reserve(batch.size());
    for (const auto& q : batch) lines.push_back(q.line);
    auto written = append_events(*conn_, run_id_, epoch_, batch.front().seq, lines);
    if (to_disk)
        if (auto st = conn_->exec_script("SET synchronous_commit = off"); !st && written) return st.err();
    return written;
}

result<journal::run_log> journal_of_lines(const std::string& run_id, const std::vector<std::pair<int64_t, std::string>>& lines) {
    std::string text;
    for (const auto& [seq, line] : lines) {
        text += line;
        text += '\n';
    }
    return journal::parse_journal(text, "postgresql:" + run_id);
}

}  // namespace tachyon::db
