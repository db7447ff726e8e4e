#include "runtime/db/db_journal.h"

#include "runtime/db/run_store.h"

namespace tachyon::db {

result<std::unique_ptr<db_journal>> db_journal::open(const std::string& url, std::string run_id, int64_t epoch,
                                                     const journal::run_log* resumed, journal::writer_options options) {
    return open(std::make_shared<connection_pool>(url), std::move(run_id), epoch, resumed, options);
}

db_journal::~db_journal() {
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
    // disk are committed synchronously (append).
    if (!options.fsync_each_event)
        if (auto st = j->conn_->exec_script("SET synchronous_commit = off"); !st)
            return make_error(st.err().code, "journal of run '" + j->run_id_ + "': " + st.err().message);
    j->epoch_ = epoch;
    j->options_ = options;
    j->start_ = std::chrono::steady_clock::now();
    if (resumed && !resumed->events.empty()) {
        j->next_seq_ = resumed->events.back().seq + 1;
        // The run's clock goes on from its last event, as a resumed file journal's does.
        j->start_ -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double, std::milli>(resumed->events.back().t_ms));
    }
    return j;
}

int64_t db_journal::n_events() const {
    std::lock_guard lock(mutex_);
    return next_seq_;
}

result<journal::event> db_journal::append(const journal::event_body& body) {
    std::lock_guard lock(mutex_);
    if (fenced_.load())
        return make_error(errc::cancelled, "run '" + run_id_ + "': lease epoch " + std::to_string(epoch_) + " is stale; not written");
    const double t_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    journal::event e{next_seq_, t_ms, body};
    std::string line = journal::to_json_line(e, options_.max_result_bytes);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    // The commit of a line that must reach disk flushes the WAL before it,
    // the earlier lines' with it.
    const bool flush = !options_.fsync_each_event && journal::must_reach_disk(body);
    if (flush)
        if (auto st = conn_->exec_script("SET synchronous_commit = on"); !st)
            return make_error(st.err().code, "journal of run '" + run_id_ + "': " + st.err().message);
    auto written = append_event(*conn_, run_id_, epoch_, e.seq, line);
    if (flush)
        if (auto st = conn_->exec_script("SET synchronous_commit = off"); !st && written)
            return make_error(st.err().code, "journal of run '" + run_id_ + "': " + st.err().message);
    if (!written) return make_error(written.err().code, "journal of run '" + run_id_ + "': " + written.err().message);
    if (!*written) {
        fenced_.store(true);
        return make_error(errc::cancelled, "run '" + run_id_ + "': the database refused event " + std::to_string(e.seq) + " of lease epoch " +
                                               std::to_string(epoch_) + " (another worker holds the run now)");
    }
    ++next_seq_;
    return e;
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
