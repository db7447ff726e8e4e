// The runs in the database as `tachyon serve --db` sees them: it queues
// runs there (workers claim them), reads any run's state and journal
// whichever process ran it, and hears of new events and state changes
// through LISTEN/NOTIFY (the triggers of schema.h) on a thread of its own.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "base/result.h"
#include "runtime/db/pg_connection.h"
#include "runtime/db/run_store.h"

namespace tachyon::db {

struct run_snapshot {
    run_row row;
    std::vector<std::pair<int64_t, std::string>> events;  // journal lines with seq >= the one asked for
};

class run_directory {
public:
    // Connects (two connections: requests, and notifications), migrates
    // the schema and starts listening. `changed` is called on the
    // listener's thread with the id of a run that has new events or a new
    // state; it must not block for long.
    static result<std::unique_ptr<run_directory>> open(const std::string& url, std::function<void(const std::string& id)> changed);
    ~run_directory();
    run_directory(const run_directory&) = delete;
    run_directory& operator=(const run_directory&) = delete;

    // Blocking (one round trip on the request connection; callers take
    // turns). Errors name the database.
    status enqueue(const std::string& id, const std::string& agent, const std::string& task,
                   const std::map<std::string, std::string>& inputs);
    // The run and its events from `from_seq`; nullopt: no such run.
    result<std::optional<run_snapshot>> snapshot(const std::string& id, int64_t from_seq);
    // request_resume, request_cancel and list_runs of run_store.h.
    result<bool> request_resume(const std::string& id, int64_t epoch, const std::vector<call_decision>& decisions);
    result<std::optional<std::string>> request_cancel(const std::string& id);
    result<std::pair<std::vector<run_row>, bool>> list(const run_page_query& q);
    const std::string& name() const { return name_; }

private:
    run_directory() = default;
    template <class T>
    T block_on(boost::asio::awaitable<T> op);

    std::string name_;
    std::mutex request_mutex_;
    boost::asio::io_context request_io_;  // run by the caller, under request_mutex_
    std::unique_ptr<pg_connection> requests_;
    boost::asio::io_context listen_io_;
    std::unique_ptr<pg_connection> listener_;
    std::function<void(const std::string&)> changed_;
    std::thread listen_thread_;
    bool stopping_ = false;  // read on the listener's thread only
};

}  // namespace tachyon::db
