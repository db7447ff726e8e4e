// One connection to PostgreSQL (libpq). Queries are asynchronous on the
// Asio loop: the query is sent with PQsendQueryParams and its answer read
// with PQconsumeInput whenever the connection's socket is readable (an
// Asio stream_descriptor wait), so a coroutine waiting on the database
// never blocks its thread. exec() is the blocking form, for a thread of its
// own (a journal's writer), for migrations and for tests.
//
// Contract: one query at a time per connection. A connection is used from
// one coroutine (or one thread) at a time; give each concurrent user its
// own connection.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "base/result.h"

typedef struct pg_conn PGconn;

namespace tachyon::db {

// A text parameter or value; nullopt is SQL NULL.
using pg_value = std::optional<std::string>;

// The rows a statement returned (all values as text) and the rows it changed.
struct pg_result {
    std::vector<std::string> columns;
    std::vector<std::vector<pg_value>> rows;
    int64_t affected = 0;  // INSERT/UPDATE/DELETE: rows changed
    // The value of `column` in row `row` ("" for NULL); asserts the column exists.
    std::string get(size_t row, std::string_view column) const;
};

// A notification (NOTIFY channel, 'payload') received on a LISTEN channel.
struct pg_notification {
    std::string channel;
    std::string payload;
};

// "postgresql://user@host:5432/db?..." or "postgres://...", or a key=value
// conninfo string ("host=/var/run/postgresql dbname=x"). Anything else is
// an error naming `what` (the option or variable it came from).
status check_db_url(const std::string& url, const std::string& what);

class pg_connection {
public:
    // Connects (blocking; once, at start) and puts the connection in
    // nonblocking mode for async_exec. Errors name the URL without its
    // password.
    static result<std::unique_ptr<pg_connection>> connect(const std::string& url, boost::asio::any_io_executor ex);
    // A connection for exec() and exec_script() only (no event loop).
    static result<std::unique_ptr<pg_connection>> connect(const std::string& url);
    ~pg_connection();
    pg_connection(const pg_connection&) = delete;
    pg_connection& operator=(const pg_connection&) = delete;

    // Runs one statement and waits for its answer (blocking the thread).
    result<pg_result> exec(const std::string& sql, const std::vector<pg_value>& params = {});
    // Several statements in one text (the simple query protocol, no
    // parameters: migrations); blocking.
    status exec_script(const std::string& sql);
    // The same without blocking: the coroutine waits on the socket.
    boost::asio::awaitable<result<pg_result>> async_exec(std::string sql, std::vector<pg_value> params = {});
    // Notifications that arrived (LISTEN first); waits up to `timeout` when
    // none has, or until interrupt() is called. Empty: none came.
    boost::asio::awaitable<result<std::vector<pg_notification>>> async_wait_notifications(std::chrono::milliseconds timeout);
    // Ends a wait of async_wait_notifications early (from the connection's
    // executor: post it there from another thread).
    void interrupt();

    // The URL without its password, for messages.
    const std::string& name() const { return name_; }
    // False once the connection to the server is lost.
    bool ok() const;
    // Connected and idle: no query in flight, no transaction open (what a
    // pool may hand to its next user).
    bool ready() const;

private:
    struct impl;
    explicit pg_connection(std::unique_ptr<impl> i);
    std::unique_ptr<impl> impl_;
    std::string name_;
};

// Blocking connections (exec() only) to one database, kept for reuse:
// opening one costs the server a process and the caller milliseconds, a
// run's journal far less. Thread-safe.
class connection_pool {
public:
    explicit connection_pool(std::string url) : url_(std::move(url)) {}
    // A kept connection, else a new one.
    result<std::unique_ptr<pg_connection>> take();
    // Kept for the next take(), unless it is broken.
    void give_back(std::unique_ptr<pg_connection> c);

private:
    std::string url_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<pg_connection>> idle_;
};

// The URL with any password replaced by "***".
std::string redact_url(const std::string& url);

// 'text' quoted as an SQL identifier ("name", quotes doubled).
std::string quote_identifier(const std::string& name);

}  // namespace tachyon::db
