#include "runtime/db/pg_connection.h"

#include <libpq-fe.h>

#include <cstdint>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/assert.h"

namespace tachyon::db {
namespace asio = boost::asio;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string pq_message(PGconn* conn) {
    std::string m = conn ? PQerrorMessage(conn) : "out of memory";
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return m;
}

// The rows of one finished statement, or its error. SQLSTATE 40001/40P01
// (serialization, deadlock) and the rest are all errors here: the callers
// decide what to retry.
result<pg_result> take_result(PGresult* r, const std::string& sql) {
    struct clear_at_exit {
        PGresult* r;
        ~clear_at_exit() { PQclear(r); }
    } clear{r};
    if (r == nullptr) return make_error(errc::io_error, "postgresql: no answer to '" + sql.substr(0, 60) + "'");
    const ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        std::string m = PQresultErrorMessage(r);
        while (!m.empty() && m.back() == '\n') m.pop_back();
        const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        return make_error(errc::io_error, "postgresql: " + m + (state ? " (SQLSTATE " + std::string(state) + ")" : ""));
    }
    pg_result out;
    const int n_fields = PQnfields(r);
    for (int c = 0; c < n_fields; ++c) out.columns.emplace_back(PQfname(r, c));
    const int n_rows = PQntuples(r);
    out.rows.reserve(static_cast<size_t>(n_rows));
    for (int i = 0; i < n_rows; ++i) {
        std::vector<pg_value> row;
        row.reserve(static_cast<size_t>(n_fields));
        for (int c = 0; c < n_fields; ++c) {
            if (PQgetisnull(r, i, c)) row.emplace_back(std::nullopt);
            else row.emplace_back(std::string(PQgetvalue(r, i, c), static_cast<size_t>(PQgetlength(r, i, c))));
        }
        out.rows.push_back(std::move(row));
    }
    const char* tuples = PQcmdTuples(r);
    if (tuples && *tuples) out.affected = std::stoll(tuples);
    return out;
}

}  // namespace

std::string pg_result::get(size_t row, std::string_view column) const {
    TACHYON_ASSERT(row < rows.size(), "pg_result::get: row out of range");
    for (size_t c = 0; c < columns.size(); ++c)
        if (columns[c] == column) return rows[row][c].value_or(std::string());
    TACHYON_ASSERT(false, "pg_result::get: no column " + std::string(column));
    return {};
}

std::string redact_url(const std::string& url) {
    // postgresql://user:secret@host/db -> postgresql://user:***@host/db
    const size_t scheme = url.find("://");
    if (scheme != std::string::npos) {
        const size_t at = url.find('@', scheme + 3);
        const size_t colon = url.find(':', scheme + 3);
        if (at != std::string::npos && colon != std::string::npos && colon < at)
            return url.substr(0, colon + 1) + "***" + url.substr(at);
        return url;
    }
    // key=value form: password=... -> password=***
    const size_t pw = url.find("password=");
    if (pw == std::string::npos) return url;
    const size_t end = url.find(' ', pw);
    return url.substr(0, pw) + "password=***" + (end == std::string::npos ? "" : url.substr(end));
}

std::string quote_identifier(const std::string& name) {
    std::string out = "\"";
    for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

status check_db_url(const std::string& url, const std::string& what) {
    if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) return {};
    if (url.find('=') != std::string::npos && url.find("://") == std::string::npos) return {};
    return make_error(errc::invalid_argument, what + " '" + redact_url(url) +
                                                  "': expected a PostgreSQL URL (postgresql://user@host:5432/dbname) "
                                                  "or key=value connection settings");
}

struct pg_connection::impl {
    PGconn* conn = nullptr;
    // Absent on a blocking-only connection.
    std::optional<asio::posix::stream_descriptor> socket;
    std::optional<asio::steady_timer> timer;
    bool in_notify_wait = false;  // interrupt() ends only a wait for notifications, never a query
    uint64_t notify_wait_id = 0;  // which wait the deadline timer belongs to
    ~impl() {
        // The descriptor belongs to libpq: Asio lets go of it, PQfinish closes it.
        if (socket && socket->is_open()) socket->release();
        if (conn) PQfinish(conn);
    }
    // Waits until the socket is readable (or writable); false on an error or interrupt.
    asio::awaitable<bool> wait(asio::posix::stream_descriptor::wait_type type) {
        TACHYON_ASSERT(socket.has_value(), "pg_connection: an async query on a blocking-only connection");
        auto [ec] = co_await socket->async_wait(type, use_tuple);
        co_return !ec;
    }
};

namespace {

result<PGconn*> open_conn(const std::string& url) {
    if (auto st = check_db_url(url, "database"); !st) return st.err();
    PGconn* conn = PQconnectdb(url.c_str());
    if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
        error e = make_error(errc::io_error, "database '" + redact_url(url) + "': cannot connect: " + pq_message(conn));
        if (conn) PQfinish(conn);
        return e;
    }
    // Notices (NOTICE: relation already exists) are not errors: not printed.
    PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
    return conn;
}

}  // namespace

result<std::unique_ptr<pg_connection>> pg_connection::connect(const std::string& url) {
    auto conn = open_conn(url);
    if (!conn) return conn.err();
    auto i = std::make_unique<impl>();
    i->conn = *conn;
    std::unique_ptr<pg_connection> c(new pg_connection(std::move(i)));
    c->name_ = redact_url(url);
    return c;
}

pg_connection::pg_connection(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
pg_connection::~pg_connection() = default;

result<std::unique_ptr<pg_connection>> pg_connection::connect(const std::string& url, asio::any_io_executor ex) {
    auto conn = open_conn(url);
    if (!conn) return conn.err();
    auto i = std::make_unique<impl>();
    i->conn = *conn;
    i->socket.emplace(ex);
    i->timer.emplace(ex);
    if (PQsetnonblocking(i->conn, 1) != 0)
        return make_error(errc::io_error, "database '" + redact_url(url) + "': " + pq_message(i->conn));
    const int fd = PQsocket(i->conn);
    boost::system::error_code ec;
    i->socket->assign(fd, ec);
    if (ec) return make_error(errc::io_error, "database '" + redact_url(url) + "': " + ec.message());
    std::unique_ptr<pg_connection> c(new pg_connection(std::move(i)));
    c->name_ = redact_url(url);
    return c;
}

result<pg_result> pg_connection::exec(const std::string& sql, const std::vector<pg_value>& params) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    // PQexecParams blocks whatever the connection's mode.
    PGresult* r = PQexecParams(impl_->conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
    if (r == nullptr) return make_error(errc::io_error, "database '" + name_ + "': " + pq_message(impl_->conn));
    return take_result(r, sql);
}

status pg_connection::exec_script(const std::string& sql) {
    PGresult* r = PQexec(impl_->conn, sql.c_str());
    if (r == nullptr) return make_error(errc::io_error, "database '" + name_ + "': " + pq_message(impl_->conn));
    auto taken = take_result(r, sql);
    if (!taken) return taken.err();
    return {};
}

asio::awaitable<result<pg_result>> pg_connection::async_exec(std::string sql, std::vector<pg_value> params) {
    PGconn* conn = impl_->conn;
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    if (!PQsendQueryParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0))
        co_return make_error(errc::io_error, "database '" + name_ + "': " + pq_message(conn));
    // The query may not fit the socket's buffer at once: flush as it drains.
    for (;;) {
        const int f = PQflush(conn);
        if (f == 0) break;
        if (f < 0 || !co_await impl_->wait(asio::posix::stream_descriptor::wait_write))
            co_return make_error(errc::io_error, "database '" + name_ + "': sending a query failed: " + pq_message(conn));
    }
    // Its answer, read as the bytes come; then every result of it (one
    // statement gives one, and a null ends them).
    std::optional<result<pg_result>> first;
    for (;;) {
        while (PQisBusy(conn)) {
            if (!co_await impl_->wait(asio::posix::stream_descriptor::wait_read))
                co_return make_error(errc::io_error, "database '" + name_ + "': waiting for an answer failed");
            if (!PQconsumeInput(conn)) co_return make_error(errc::io_error, "database '" + name_ + "': " + pq_message(conn));
        }
        PGresult* r = PQgetResult(conn);
        if (r == nullptr) break;
        auto taken = take_result(r, sql);
        if (!first || (first->ok() && !taken.ok())) first = std::move(taken);
    }
    if (!first) co_return make_error(errc::io_error, "database '" + name_ + "': no answer");
    co_return std::move(*first);
}

asio::awaitable<result<std::vector<pg_notification>>> pg_connection::async_wait_notifications(std::chrono::milliseconds timeout) {
    PGconn* conn = impl_->conn;
    std::vector<pg_notification> out;
    auto collect = [&] {
        while (PGnotify* n = PQnotifies(conn)) {
            out.push_back({n->relname ? n->relname : "", n->extra ? n->extra : ""});
            PQfreemem(n);
        }
    };
    if (!PQconsumeInput(conn)) co_return make_error(errc::io_error, "database '" + name_ + "': " + pq_message(conn));
    collect();
    if (!out.empty()) co_return out;
    // The timer ends the socket wait: a wait with a deadline, on one thread.
    // A deadline whose handler was already queued when the socket became
    // readable runs after this wait ended: it must not cancel what waits on
    // the socket next (a query's answer).
    const uint64_t wait_id = ++impl_->notify_wait_id;
    impl_->timer->expires_after(timeout);
    impl_->timer->async_wait([this, wait_id](boost::system::error_code ec) {
        if (!ec && impl_->in_notify_wait && impl_->notify_wait_id == wait_id) impl_->socket->cancel();
    });
    impl_->in_notify_wait = true;
    const bool readable = co_await impl_->wait(asio::posix::stream_descriptor::wait_read);
    impl_->in_notify_wait = false;
    impl_->timer->cancel();
    if (readable) {
        if (!PQconsumeInput(conn)) co_return make_error(errc::io_error, "database '" + name_ + "': " + pq_message(conn));
        collect();
    }
    co_return out;
}

bool pg_connection::ok() const { return PQstatus(impl_->conn) == CONNECTION_OK; }

bool pg_connection::ready() const { return ok() && PQtransactionStatus(impl_->conn) == PQTRANS_IDLE; }

result<std::unique_ptr<pg_connection>> connection_pool::take() {
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            auto c = std::move(idle_.back());
            idle_.pop_back();
            return c;
        }
    }
    return pg_connection::connect(url_);
}

void connection_pool::give_back(std::unique_ptr<pg_connection> c) {
    if (!c || !c->ready()) return;
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(c));
}

void pg_connection::interrupt() {
    if (!impl_->socket || !impl_->in_notify_wait) return;
    impl_->timer->cancel();
    impl_->socket->cancel();
}

}  // namespace tachyon::db
