// The runs in the database as `tachyon serve --db` sees them: it queues
// runs there (workers claim them), reads any run's state and journal
// whichever process ran it, and hears of new events and state changes
// through LISTEN/NOTIFY (the triggers of schema.h).
//
// Every request is an awaitable: the caller (an HTTP session coroutine)
// co_awaits it and resumes on its own executor, its thread never blocked on
// the database. The queries themselves run on the directory's own thread,
// each on a connection of a small pool: one query at a time per connection,
// so concurrent requests each take one, a new one when none is idle, up to
// a cap, then wait for one to come back.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

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
    // Connects (one request connection, and one for notifications),
    // migrates the schema and starts listening. `changed` is called on the
    // directory's thread with the id of a run that has new events or a new
    // state; it must not block (post or spawn the work). `max_connections`:
    // the request connections' cap.
    static result<std::unique_ptr<run_directory>> open(const std::string& url, std::function<void(const std::string& id)> changed,
                                                       int max_connections = 8);
    // close(), then the connections go.
    ~run_directory();
    run_directory(const run_directory&) = delete;
    run_directory& operator=(const run_directory&) = delete;

    // Stops listening, refuses new requests (errc::cancelled) and waits for
    // those in flight and for the work spawned on executor() to end.
    // From any thread but the directory's; idempotent.
    void close();

    // One round trip each (snapshot: two) on a connection of the pool.
    // Errors name the database.
    boost::asio::awaitable<status> enqueue(std::string id, std::string agent, std::string task, std::map<std::string, std::string> inputs,
                                           std::string traceparent = {});
    // The run and its events from `from_seq`; nullopt: no such run.
    boost::asio::awaitable<result<std::optional<run_snapshot>>> snapshot(std::string id, int64_t from_seq);
    // request_resume, request_cancel and list_runs of run_store.h.
    boost::asio::awaitable<result<bool>> request_resume(std::string id, int64_t epoch, std::vector<call_decision> decisions);
    boost::asio::awaitable<result<std::optional<std::string>>> request_cancel(std::string id);
    boost::asio::awaitable<result<std::pair<std::vector<run_row>, bool>>> list(run_page_query q);

    // The directory's thread, where `changed` is called: work it spawns
    // here is waited for by close().
    boost::asio::any_io_executor executor() { return io_.get_executor(); }
    const std::string& name() const { return name_; }
    // Request connections open now (idle or in use).
    int n_connections() const { return n_open_.load(); }

private:
    run_directory() = default;
    // Runs `op` on the directory's thread with a connection of the pool
    // and gives its value back on the caller's executor.
    template <class T>
    boost::asio::awaitable<T> on_pool(std::function<boost::asio::awaitable<T>(pg_connection&)> op);
    // The pool, used on the directory's thread only.
    boost::asio::awaitable<result<pg_connection*>> take();
    void give_back(pg_connection* c);

    std::string url_;
    std::string name_;
    int max_connections_ = 8;
    boost::asio::io_context io_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    std::vector<std::unique_ptr<pg_connection>> connections_;    // every request connection
    std::vector<pg_connection*> idle_;                           // those not in use
    std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;  // requests waiting for one, first come first served
    std::atomic<int> n_open_{0};
    std::unique_ptr<pg_connection> listener_;
    std::function<void(const std::string&)> changed_;
    std::thread thread_;
    bool stopping_ = false;  // read and set on the directory's thread only
    std::atomic<bool> closed_{false};  // close() ran: requests are refused before they reach the thread
};

}  // namespace tachyon::db
