#include "runtime/db/run_directory.h"

#include <doctest/doctest.h>

#include <condition_variable>
#include <set>

#include "runtime/db/run_store.h"
#include "tests/runtime/db/pg_test_db.h"

using namespace tachyon;
using std::chrono::milliseconds;

TEST_CASE("run_directory: queues runs and reads any run with its events from a seq on and hears of new events and ends") {
    pg_test::database d("directory");
    if (d.url().empty()) {
        MESSAGE(d.skip_message());
        return;
    }
    std::mutex m;
    std::condition_variable cv;
    std::multiset<std::string> changed;
    auto dir = db::run_directory::open(d.url(), [&](const std::string& id) {
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

    REQUIRE((*dir)->enqueue("run-1", "agent-a", "the task", {{"k", "v"}}).ok());
    CHECK(heard("run-1", 1));  // queued
    auto none = (*dir)->snapshot("no-such-run", 0);
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());

    // A worker (another connection) claims it and writes two events.
    boost::asio::io_context io;
    auto w = db::pg_connection::connect(d.url(), io.get_executor());
    REQUIRE(w.ok());
    auto claimed = pg_test::block_on(io, db::claim(**w, "w", milliseconds(60000), 1));
    REQUIRE(claimed.ok());
    REQUIRE(claimed->size() == 1);
    REQUIRE(*db::append_event(**w, "run-1", 1, 0, R"({"seq":0,"t_ms":0,"type":"turn_start","step":1})"));
    REQUIRE(*db::append_event(**w, "run-1", 1, 1, R"({"seq":1,"t_ms":1,"type":"turn_start","step":2})"));
    CHECK(heard("run-1", 4));  // running, and each event

    auto snap = (*dir)->snapshot("run-1", 1);
    REQUIRE(snap.ok());
    REQUIRE(snap->has_value());
    CHECK((*snap)->row.agent == "agent-a");
    CHECK((*snap)->row.state == "running");
    REQUIRE((*snap)->events.size() == 1);
    CHECK((*snap)->events[0].first == 1);

    REQUIRE(*pg_test::block_on(io, db::finish(**w, "run-1", 1, "succeeded", R"({"answer":null})")));
    CHECK(heard("run-1", 5));
    auto done = (*dir)->snapshot("run-1", 0);
    REQUIRE(done.ok());
    CHECK((*done)->row.state == "succeeded");
    CHECK((*done)->events.size() == 2);
}
