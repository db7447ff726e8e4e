#include "runtime/db/run_store.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "runtime/db/schema.h"
#include "tests/runtime/db/pg_test_db.h"

using namespace tachyon;
namespace asio = boost::asio;
using std::chrono::milliseconds;

TEST_CASE("run_store: a queued run is claimed once with its task and inputs under epoch 1") {
    pg_test::fixture f("store_claim");
    if (f.skipped()) return;
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "incident-analyst", "find it", {{"incident_dir", "/data/x"}, {"q", "a \"b\""}})).ok());
    auto taken = f.run(db::enqueue(*f.conn, "run-1", "other", "again", {}));
    REQUIRE_FALSE(taken.ok());
    CHECK(taken.err().message == "run id 'run-1': taken");

    auto c = f.run(db::claim(*f.conn, "worker-a", milliseconds(60000), 4));
    REQUIRE_MESSAGE(c.ok(), c.err().message);
    REQUIRE(c->size() == 1);
    const db::claimed_run& r = (*c)[0];
    CHECK(r.id == "run-1");
    CHECK(r.agent == "incident-analyst");
    CHECK(r.task == "find it");
    CHECK(r.inputs == std::map<std::string, std::string>{{"incident_dir", "/data/x"}, {"q", "a \"b\""}});
    CHECK(r.epoch == 1);
    CHECK(r.n_events == 0);
    CHECK(r.n_claims == 1);
    // Held under a live lease: nobody else gets it.
    auto again = f.run(db::claim(*f.conn, "worker-b", milliseconds(60000), 4));
    REQUIRE(again.ok());
    CHECK(again->empty());
    auto row = f.run(db::get_run(*f.conn, "run-1"));
    REQUIRE(row.ok());
    REQUIRE(row->has_value());
    CHECK((*row)->state == "running");
    CHECK((*row)->lease_owner == "worker-a");
}

TEST_CASE("run_store: a claim skips a run another worker has locked instead of waiting for it (SKIP LOCKED)") {
    pg_test::fixture f("store_skip");
    if (f.skipped()) return;
    REQUIRE(f.run(db::enqueue(*f.conn, "run-a", "x", "t", {})).ok());
    REQUIRE(f.run(db::enqueue(*f.conn, "run-b", "x", "t", {})).ok());
    // Another worker is in the middle of claiming run-a (its row locked).
    auto other = db::pg_connection::connect(f.d.url());
    REQUIRE(other.ok());
    REQUIRE((*other)->exec_script("BEGIN").ok());
    REQUIRE((*other)->exec("SELECT id FROM tachyon.runs WHERE id = 'run-a' FOR UPDATE").ok());
    // A claim that waited for the lock would fail here.
    REQUIRE(f.conn->exec_script("SET lock_timeout = '2s'").ok());
    auto c = f.run(db::claim(*f.conn, "worker-b", milliseconds(60000), 2));
    REQUIRE_MESSAGE(c.ok(), c.err().message);
    REQUIRE(c->size() == 1);
    CHECK((*c)[0].id == "run-b");
    REQUIRE((*other)->exec_script("ROLLBACK").ok());
}

TEST_CASE("run_store: two workers claiming 60 runs at once never get the same run and get them all") {
    pg_test::fixture f("store_two");
    if (f.skipped()) return;
    for (int i = 0; i < 60; ++i) REQUIRE(f.run(db::enqueue(*f.conn, "run-" + std::to_string(i), "x", "t", {})).ok());
    std::vector<std::string> got[2];
    std::string errors[2];
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w)
        workers.emplace_back([&, w] {
            asio::io_context io;
            auto c = db::pg_connection::connect(f.d.url(), io.get_executor());
            if (!c) {
                errors[w] = c.err().message;
                return;
            }
            for (;;) {
                auto claimed = pg_test::block_on(io, db::claim(**c, "worker-" + std::to_string(w), milliseconds(60000), 1 + w));
                if (!claimed) {
                    errors[w] = claimed.err().message;
                    return;
                }
                if (claimed->empty()) return;
                for (const auto& r : *claimed) got[w].push_back(r.id);
            }
        });
    for (auto& t : workers) t.join();
    CHECK_MESSAGE(errors[0].empty(), errors[0]);
    CHECK_MESSAGE(errors[1].empty(), errors[1]);
    std::set<std::string> all(got[0].begin(), got[0].end());
    for (const auto& id : got[1]) CHECK_MESSAGE(all.insert(id).second, "run " << id << " went to both workers");
    CHECK(all.size() == 60);
    CHECK(got[0].size() + got[1].size() == 60);
}

TEST_CASE("run_store: once the lease expires another worker claims the run at the next epoch and the stale epoch's writes are refused") {
    pg_test::fixture f("store_fence");
    if (f.skipped()) return;
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "x", "t", {})).ok());
    // A lease of 0 ms: expired the moment it is taken, as if its worker died.
    auto first = f.run(db::claim(*f.conn, "worker-a", milliseconds(0), 1));
    REQUIRE(first.ok());
    REQUIRE(first->size() == 1);
    CHECK((*first)[0].epoch == 1);
    auto w1 = db::append_event(*f.conn, "run-1", 1, 0, R"({"seq":0,"t_ms":0,"type":"turn_start","step":1})");
    REQUIRE_MESSAGE(w1.ok(), w1.err().message);
    CHECK(*w1);

    auto second = f.run(db::claim(*f.conn, "worker-b", milliseconds(60000), 1));
    REQUIRE(second.ok());
    REQUIRE(second->size() == 1);
    CHECK((*second)[0].epoch == 2);
    CHECK((*second)[0].n_events == 1);  // it resumes from the journal
    CHECK((*second)[0].n_claims == 2);

    // Worker a, stalled past its lease, comes back: refused everywhere.
    auto stale = db::append_event(*f.conn, "run-1", 1, 1, R"({"seq":1,"t_ms":1,"type":"turn_start","step":2})");
    REQUIRE(stale.ok());
    CHECK_FALSE(*stale);
    auto renewed = f.run(db::renew(*f.conn, "run-1", 1, milliseconds(60000)));
    REQUIRE(renewed.ok());
    CHECK_FALSE(*renewed);
    auto ended_stale = f.run(db::finish(*f.conn, "run-1", 1, "succeeded", "{}"));
    REQUIRE(ended_stale.ok());
    CHECK_FALSE(*ended_stale);

    // Worker b writes, renews and ends the run, once.
    auto w2 = db::append_event(*f.conn, "run-1", 2, 1, R"({"seq":1,"t_ms":1,"type":"turn_start","step":2})");
    REQUIRE(w2.ok());
    CHECK(*w2);
    CHECK(*f.run(db::renew(*f.conn, "run-1", 2, milliseconds(60000))));
    CHECK(*f.run(db::finish(*f.conn, "run-1", 2, "succeeded", R"({"answer":1})")));
    CHECK_FALSE(*f.run(db::finish(*f.conn, "run-1", 2, "failed", "{}")));
    auto row = f.run(db::get_run(*f.conn, "run-1"));
    REQUIRE(row.ok());
    CHECK((*row)->state == "succeeded");
    CHECK((*row)->result_json == R"({"answer":1})");
    // An ended run is not claimed again, and its journal takes no more lines.
    CHECK(f.run(db::claim(*f.conn, "worker-c", milliseconds(60000), 1))->empty());
    CHECK_FALSE(*db::append_event(*f.conn, "run-1", 2, 2, R"({"seq":2,"t_ms":2,"type":"turn_start","step":3})"));
    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    REQUIRE(lines->size() == 2);
    CHECK((*lines)[1].second == R"({"seq":1,"t_ms":1,"type":"turn_start","step":2})");

    auto u = f.run(db::usage(*f.conn));
    REQUIRE(u.ok());
    CHECK(u->n_runs == 1);
    CHECK(u->n_events == 2);
    CHECK(u->events_bytes > 0);
    CHECK(u->bytes_per_run() > 0);
}

TEST_CASE("run_store: a parked run goes back to the queue only at the epoch it was read at, with its decisions for the next claim") {
    pg_test::fixture f("store_resume");
    if (f.skipped()) return;
    const std::vector<call_decision> approve = {{"call_1_0", "approve", "ok \"then\""}};
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "a", "t", {})).ok());
    CHECK_FALSE(*f.run(db::request_resume(*f.conn, "run-1", 0, approve)));  // queued: nothing to decide
    auto first = f.run(db::claim(*f.conn, "w1", milliseconds(60000), 1));
    REQUIRE(first.ok());
    REQUIRE(first->size() == 1);
    CHECK_FALSE((*first)[0].resume_requested);
    CHECK_FALSE(*f.run(db::request_resume(*f.conn, "run-1", 1, approve)));  // running
    REQUIRE(*f.run(db::finish(*f.conn, "run-1", 1, "awaiting_approval", "{}")));

    CHECK_FALSE(*f.run(db::request_resume(*f.conn, "run-1", 0, approve)));  // read at another epoch
    CHECK(*f.run(db::request_resume(*f.conn, "run-1", 1, approve)));
    CHECK_FALSE(*f.run(db::request_resume(*f.conn, "run-1", 1, approve)));  // a second node, too late
    auto again = f.run(db::claim(*f.conn, "w2", milliseconds(60000), 1));
    REQUIRE(again.ok());
    REQUIRE(again->size() == 1);
    const db::claimed_run& c = (*again)[0];
    CHECK(c.epoch == 2);
    CHECK(c.resume_requested);
    REQUIRE(c.decisions.size() == 1);
    CHECK(c.decisions[0].call_id == "call_1_0");
    CHECK(c.decisions[0].action == "approve");
    CHECK(c.decisions[0].reason == "ok \"then\"");
    // Ended: the decisions are spent.
    REQUIRE(*f.run(db::finish(*f.conn, "run-1", 2, "succeeded", "{}")));
    CHECK(f.conn->exec("SELECT decisions IS NULL AS spent FROM tachyon.runs WHERE id = 'run-1'")->get(0, "spent") == "t");
}

TEST_CASE("run_store: cancelling ends a queued run at once and marks a running one for its worker, ended ones unchanged") {
    pg_test::fixture f("store_cancel");
    if (f.skipped()) return;
    REQUIRE(f.run(db::enqueue(*f.conn, "queued", "a", "t", {})).ok());
    auto q = f.run(db::request_cancel(*f.conn, "queued"));
    REQUIRE(q.ok());
    CHECK(*q == std::optional<std::string>("cancelled"));
    CHECK(f.run(db::claim(*f.conn, "w", milliseconds(60000), 4))->empty());

    REQUIRE(f.run(db::enqueue(*f.conn, "running", "a", "t", {})).ok());
    REQUIRE(f.run(db::claim(*f.conn, "w", milliseconds(60000), 1))->size() == 1);
    auto r = f.run(db::request_cancel(*f.conn, "running"));
    REQUIRE(r.ok());
    CHECK(*r == std::optional<std::string>("running"));
    bool asked = false;
    CHECK(*f.run(db::renew(*f.conn, "running", 1, milliseconds(60000), &asked)));
    CHECK(asked);
    REQUIRE(*f.run(db::finish(*f.conn, "running", 1, "cancelled", "{}")));
    CHECK_FALSE(f.run(db::request_cancel(*f.conn, "running"))->has_value());
    CHECK_FALSE(f.run(db::request_cancel(*f.conn, "no-such-run"))->has_value());
}

TEST_CASE("run_store: a run queued with the request's traceparent keeps it for its worker's spans, and without one the column is NULL") {
    pg_test::fixture f("store_traceparent");
    if (f.skipped()) return;
    const std::string tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    REQUIRE(f.run(db::enqueue(*f.conn, "traced", "a", "t", {}, tp)).ok());
    REQUIRE(f.run(db::enqueue(*f.conn, "untraced", "a", "t", {})).ok());
    auto r = f.conn->exec("SELECT id, traceparent FROM tachyon.runs ORDER BY id");
    REQUIRE_MESSAGE(r.ok(), r.err().message);
    REQUIRE(r->rows.size() == 2);
    CHECK(r->get(0, "id") == "traced");
    CHECK(r->rows[0][1] == std::optional<std::string>(tp));
    CHECK(r->get(1, "id") == "untraced");
    CHECK_FALSE(r->rows[1][1].has_value());
}
