#include "runtime/db/run_directory.h"

#include <doctest/doctest.h>

#include <condition_variable>
#include <future>
#include <set>
#include <thread>

#include "runtime/db/run_store.h"
#include "tests/runtime/db/pg_test_db.h"

using namespace tachyon;
namespace asio = boost::asio;
using std::chrono::milliseconds;

TEST_CASE("run_directory: queues runs and reads any run with its events from a seq on and hears of new events and ends") {
    pg_test::fixture f("directory");
    if (f.skipped()) return;
    std::mutex m;
    std::condition_variable cv;
    std::multiset<std::string> changed;
    auto dir = db::run_directory::open(f.url(), [&](const std::string& id) {
        std::lock_guard lock(m);
        changed.insert(id);
        cv.notify_all();
    });
    REQUIRE_MESSAGE(dir.ok(), dir.err().message);
    // Waits until `id` was reported `n` times (the notification comes within milliseconds).
    auto heard = [&](const std::string& id, size_t n) {
        std::unique_lock lock(m);
        return cv.wait_for(lock, std::chrono::seconds(10), [&] { return changed.count(id) >= n; });
    };

    REQUIRE(f.run((*dir)->enqueue("run-1", "agent-a", "the task", {{"k", "v"}})).ok());
    CHECK(heard("run-1", 1));  // queued
    auto none = f.run((*dir)->snapshot("no-such-run", 0));
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());

    // A worker (another connection) claims it and writes two events.
    auto claimed = f.run(db::claim(*f.conn, "w", milliseconds(60000), 1));
    REQUIRE(claimed.ok());
    REQUIRE(claimed->size() == 1);
    REQUIRE(*db::append_event(*f.conn, "run-1", 1, 0, R"({"seq":0,"t_ms":0,"type":"turn_start","step":1})"));
    REQUIRE(*db::append_event(*f.conn, "run-1", 1, 1, R"({"seq":1,"t_ms":1,"type":"turn_start","step":2})"));
    CHECK(heard("run-1", 4));  // running, and each event

    auto snap = f.run((*dir)->snapshot("run-1", 1));
    REQUIRE(snap.ok());
    REQUIRE(snap->has_value());
    CHECK((*snap)->row.agent == "agent-a");
    CHECK((*snap)->row.state == "running");
    REQUIRE((*snap)->events.size() == 1);
    CHECK((*snap)->events[0].first == 1);

    REQUIRE(*f.run(db::finish(*f.conn, "run-1", 1, "succeeded", R"({"answer":null})")));
    CHECK(heard("run-1", 5));
    auto done = f.run((*dir)->snapshot("run-1", 0));
    REQUIRE(done.ok());
    CHECK((*done)->row.state == "succeeded");
    CHECK((*done)->events.size() == 2);

    // Closed: requests are refused, not left waiting.
    (*dir)->close();
    auto refused = f.run((*dir)->snapshot("run-1", 0));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.err().code == errc::cancelled);
}

TEST_CASE("run_directory: a request waiting on the database does not hold up the others, which take connections of their own up to the cap") {
    pg_test::fixture f("directory_pool");
    if (f.skipped()) return;
    auto dir = db::run_directory::open(f.url(), nullptr, 2);
    REQUIRE_MESSAGE(dir.ok(), dir.err().message);
    for (const std::string id : {"run-a", "run-b", "run-c"}) REQUIRE(f.run(db::enqueue(*f.conn, id, "agent-a", "t", {})).ok());
    CHECK((*dir)->n_connections() == 1);

    // Another transaction holds run-a's row: cancelling it waits for the lock.
    auto locker = db::pg_connection::connect(f.url());
    REQUIRE(locker.ok());
    REQUIRE((*locker)->exec_script("BEGIN").ok());
    REQUIRE((*locker)->exec("SELECT id FROM tachyon.runs WHERE id = 'run-a' FOR UPDATE").ok());
    asio::io_context slow_io;
    std::optional<result<std::optional<std::string>>> slow;
    asio::co_spawn(
        slow_io, [&]() -> asio::awaitable<void> { slow.emplace(co_await (*dir)->request_cancel("run-a")); }, asio::detached);
    std::thread slow_thread([&] { slow_io.run(); });
    // It is in the database, waiting for the lock.
    bool waiting = false;
    for (int i = 0; i < 2000 && !waiting; ++i) {
        auto n = f.conn->exec("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        REQUIRE(n.ok());
        waiting = n->get(0, "n") != "0";
        if (!waiting) std::this_thread::sleep_for(milliseconds(5));
    }
    REQUIRE(waiting);

    // Meanwhile the others are answered, on a second connection.
    auto b = f.run((*dir)->request_cancel("run-b"));
    REQUIRE_MESSAGE(b.ok(), b.err().message);
    CHECK(*b == std::optional<std::string>("cancelled"));
    auto snap = f.run((*dir)->snapshot("run-c", 0));
    REQUIRE(snap.ok());
    REQUIRE(snap->has_value());
    CHECK((*snap)->row.state == "queued");
    auto page = f.run((*dir)->list({}));
    REQUIRE(page.ok());
    CHECK(page->first.size() == 3);
    CHECK((*dir)->n_connections() == 2);
    CHECK_FALSE(slow.has_value());

    REQUIRE((*locker)->exec_script("COMMIT").ok());
    slow_thread.join();
    REQUIRE(slow.has_value());
    REQUIRE_MESSAGE(slow->ok(), slow->err().message);
    CHECK(**slow == std::optional<std::string>("cancelled"));
    CHECK((*dir)->n_connections() == 2);
}
