#include "runtime/db/pg_connection.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "tests/runtime/db/pg_test_db.h"

using namespace tachyon;
namespace asio = boost::asio;

TEST_CASE("pg_connection: a URL that is not PostgreSQL's is refused naming the option and passwords never reach a message") {
    auto st = db::check_db_url("mysql://root@localhost/x", "--db");
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message.find("--db 'mysql://root@localhost/x'") != std::string::npos);
    CHECK(st.err().message.find("expected a PostgreSQL URL") != std::string::npos);
    CHECK(db::check_db_url("postgresql://u@h:5432/d", "--db").ok());
    CHECK(db::check_db_url("host=/var/run/postgresql dbname=x", "--db").ok());
    CHECK(db::redact_url("postgresql://me:s3cret@db:5432/runs") == "postgresql://me:***@db:5432/runs");
    CHECK(db::redact_url("host=db password=s3cret dbname=x") == "host=db password=*** dbname=x");
    auto bad = db::pg_connection::connect("postgresql://me:s3cret@127.0.0.1:1/none");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("cannot connect") != std::string::npos);
    CHECK(bad.err().message.find("s3cret") == std::string::npos);
}

TEST_CASE("pg_connection: queries run on the event loop and errors name the statement's problem and notifications arrive") {
    pg_test::database d("conn");
    if (d.skipped()) return;
    asio::io_context io;
    auto c = db::pg_connection::connect(d.url(), io.get_executor());
    REQUIRE_MESSAGE(c.ok(), c.err().message);
    auto& conn = **c;
    auto r = pg_test::block_on(io, conn.async_exec("SELECT $1::int + 1 AS n, NULL::text AS nothing", {"41"}));
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    CHECK(r->get(0, "n") == "42");
    REQUIRE(r->rows[0][1] == std::nullopt);

    auto bad = pg_test::block_on(io, conn.async_exec("SELECT * FROM no_such_table"));
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("no_such_table") != std::string::npos);
    CHECK(bad.err().message.find("SQLSTATE 42P01") != std::string::npos);
    // The connection is still good after an error.
    CHECK(pg_test::block_on(io, conn.async_exec("SELECT 1")).ok());

    REQUIRE(pg_test::block_on(io, conn.async_exec("LISTEN test_channel")).ok());
    auto none = pg_test::block_on(io, conn.async_wait_notifications(std::chrono::milliseconds(1)));
    REQUIRE(none.ok());
    CHECK(none->empty());
    auto other = db::pg_connection::connect(d.url());
    REQUIRE(other.ok());
    REQUIRE((*other)->exec("SELECT pg_notify('test_channel', 'run-7')").ok());
    auto got = pg_test::block_on(io, conn.async_wait_notifications(std::chrono::seconds(10)));
    REQUIRE(got.ok());
    REQUIRE(got->size() == 1);
    CHECK((*got)[0].channel == "test_channel");
    CHECK((*got)[0].payload == "run-7");
}

TEST_CASE("pg_connection: a pool gives a connection back to the next taker and drops one whose server process is gone") {
    pg_test::database d("pool");
    if (d.skipped()) return;
    db::connection_pool pool(d.url());
    auto pid_of = [](db::pg_connection& c) {
        auto r = c.exec("SELECT pg_backend_pid() AS pid");
        REQUIRE_MESSAGE(r.ok(), r.err().message);
        return r->get(0, "pid");
    };
    auto first = pool.take();
    REQUIRE_MESSAGE(first.ok(), first.err().message);
    const std::string pid = pid_of(**first);
    pool.give_back(std::move(first).value());
    auto again = pool.take();
    REQUIRE(again.ok());
    CHECK(pid_of(**again) == pid);

    // Its server process ends (a restart, an administrator): not kept.
    auto admin = db::pg_connection::connect(d.url());
    REQUIRE(admin.ok());
    REQUIRE((*admin)->exec("SELECT pg_terminate_backend($1::int)", {pid}).ok());
    for (int i = 0; i < 100 && (*again)->exec("SELECT 1").ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK_FALSE((*again)->ok());
    pool.give_back(std::move(again).value());
    auto fresh = pool.take();
    REQUIRE(fresh.ok());
    CHECK(pid_of(**fresh) != pid);
}
