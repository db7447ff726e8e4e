// Test support: a PostgreSQL database of the test's own, created on the
// server TACHYON_TEST_PG names (key=value settings or a postgresql:// URL
// of any database there; default: the local server's socket) and dropped
// when the test ends. When no server answers, `url` stays empty and the
// test says it is skipped (`tachyon.sh test` starts one).
#pragma once

#include <unistd.h>

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "runtime/db/pg_connection.h"
#include "runtime/db/schema.h"

namespace pg_test {

// Runs `op` on `io` to its end and gives its value.
// (co_spawn's own completion would need a default-constructible T.)
template <class T>
T block_on(boost::asio::io_context& io, boost::asio::awaitable<T> op) {
    std::optional<T> out;
    std::exception_ptr failed;
    boost::asio::co_spawn(
        io, [&]() -> boost::asio::awaitable<void> { out.emplace(co_await std::move(op)); }, [&](std::exception_ptr e) { failed = e; });
    io.restart();
    io.run();
    if (failed) std::rethrow_exception(failed);
    return std::move(*out);
}

inline std::string server_settings() {
    const char* env = std::getenv("TACHYON_TEST_PG");
    return env && *env ? env : "host=/var/run/postgresql dbname=postgres";
}

// The settings with the database replaced by `name`.
inline std::string with_database(const std::string& settings, const std::string& name) {
    if (settings.rfind("postgresql://", 0) == 0 || settings.rfind("postgres://", 0) == 0) {
        const size_t host = settings.find("://") + 3;
        const size_t slash = settings.find('/', host);
        const size_t query = settings.find('?', host);
        const std::string base = settings.substr(0, slash != std::string::npos ? slash : (query != std::string::npos ? query : settings.size()));
        return base + "/" + name + (query != std::string::npos ? settings.substr(query) : "");
    }
    return settings + " dbname=" + name;  // a later key wins
}

class database {
public:
    explicit database(const std::string& tag) {
        static std::atomic<int> n{0};
        name_ = "tachyon_test_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
        auto admin = tachyon::db::pg_connection::connect(server_settings());
        if (!admin) {
            why_ = admin.err().message;
            return;
        }
        admin_ = std::move(admin).value();
        (void)admin_->exec_script("DROP DATABASE IF EXISTS " + tachyon::db::quote_identifier(name_));
        if (auto st = admin_->exec_script("CREATE DATABASE " + tachyon::db::quote_identifier(name_)); !st) {
            why_ = st.err().message;
            return;
        }
        url_ = with_database(server_settings(), name_);
    }
    ~database() {
        if (!url_.empty()) (void)admin_->exec_script("DROP DATABASE IF EXISTS " + tachyon::db::quote_identifier(name_) + " WITH (FORCE)");
    }
    // Empty when there is no server to test against.
    const std::string& url() const { return url_; }
    // Why not, for the skip message.
    std::string skip_message() const { return "skipped: no PostgreSQL server (TACHYON_TEST_PG=" + server_settings() + "): " + why_; }
    // No server: says so in the test's output and is true (the test returns).
    bool skipped() const {
        if (!url_.empty()) return false;
        MESSAGE(skip_message());
        return true;
    }

private:
    std::unique_ptr<tachyon::db::pg_connection> admin_;
    std::string name_;
    std::string url_;
    std::string why_;
};

// A connection to `d` on `io` with the schema migrated: most tests start there.
inline tachyon::result<std::unique_ptr<tachyon::db::pg_connection>> migrated(const database& d, boost::asio::io_context& io) {
    auto c = tachyon::db::pg_connection::connect(d.url(), io.get_executor());
    if (!c) return c.err();
    if (auto m = tachyon::db::migrate(**c); !m) return m.err();
    return c;
}

// What most database tests start from: a database of their own, migrated,
// and a connection to it on `io`. Without a server, skipped() says so and
// is true: the test returns.
struct fixture {
    database d;
    boost::asio::io_context io;
    std::unique_ptr<tachyon::db::pg_connection> conn;
    explicit fixture(const std::string& tag) : d(tag) {
        if (d.url().empty()) return;
        auto c = migrated(d, io);
        REQUIRE_MESSAGE(c.ok(), c.err().message);
        conn = std::move(c).value();
    }
    bool skipped() const { return d.skipped(); }
    const std::string& url() const { return d.url(); }
    // Runs `op` on `io` to its end.
    template <class T>
    T run(boost::asio::awaitable<T> op) { return block_on(io, std::move(op)); }
};

}  // namespace pg_test
