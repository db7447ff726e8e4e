#include "runtime/db/worker.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "runtime/db/db_journal.h"
#include "runtime/db/run_store.h"
#include "runtime/db/schema.h"
#include "tests/runtime/db/pg_test_db.h"
#include "tests/runtime/db/worker_fixture.h"

using namespace tachyon;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using std::chrono::milliseconds;
using namespace worker_fixture;

TEST_CASE("worker: a queued run is claimed and run to its verified answer and ended once in the database with its journal there") {
    pg_test::fixture f("worker_run");
    if (f.skipped()) return;
    agents_folder agents;
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "test-agent", k_task, agents.inputs())).ok());
    REQUIRE(f.run(db::enqueue(*f.conn, "run-2", "no-such-agent", k_task, {})).ok());

    auto service = scripted_service(agents.model_path, k_turns);
    db::worker w(*service, worker_opts(f.url(), agents.dir.path.string()));
    auto st = w.run();
    REQUIRE_MESSAGE(st.ok(), st.err().message);
    CHECK(w.stats().claimed == 2);
    CHECK(w.stats().finished == 2);
    CHECK(w.stats().resumed == 0);

    auto row = f.run(db::get_run(*f.conn, "run-1"));
    REQUIRE(row.ok());
    REQUIRE(row->has_value());
    CHECK((*row)->state == "succeeded");
    CHECK((*row)->result_json.find(R"("verified":true)") != std::string::npos);
    CHECK((*row)->result_json.find(R"("root_cause_service":"payments-db")") != std::string::npos);
    CHECK((*row)->result_json.find(R"("journal":"postgresql:run-1")") != std::string::npos);
    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    CHECK(count_type(*lines, "model_turn") == 4);
    CHECK(count_type(*lines, "run_end") == 1);
    auto log = db::journal_of_lines("run-1", *lines);
    REQUIRE(log.ok());
    CHECK(log->state() == "succeeded");
    CHECK(log->warnings.empty());

    // An agent the worker does not have: the run fails with a message naming it.
    auto bad = f.run(db::get_run(*f.conn, "run-2"));
    REQUIRE(bad.ok());
    CHECK((*bad)->state == "failed");
    CHECK((*bad)->result_json.find("agent 'no-such-agent' not found") != std::string::npos);
}

TEST_CASE("worker: a run whose worker died is claimed once its lease expires and resumes from its journal to the same answer") {
    pg_test::fixture f("worker_handover");
    if (f.skipped()) return;
    agents_folder agents;

    // The uninterrupted twin, run by one worker.
    REQUIRE(f.run(db::enqueue(*f.conn, "twin", "test-agent", k_task, agents.inputs())).ok());
    {
        auto service = scripted_service(agents.model_path, k_turns);
        db::worker w(*service, worker_opts(f.url(), agents.dir.path.string()));
        REQUIRE(w.run().ok());
    }
    auto twin_row = f.run(db::get_run(*f.conn, "twin"));
    REQUIRE(twin_row.ok());
    REQUIRE((*twin_row)->state == "succeeded");
    auto twin_lines = db::read_events(*f.conn, "twin");
    REQUIRE(twin_lines.ok());

    // A worker that died after its first turn and that turn's tool result:
    // the journal it left (the twin's lines up to there), under a lease
    // that has expired.
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "test-agent", k_task, agents.inputs())).ok());
    auto dead = f.run(db::claim(*f.conn, "dead-worker", milliseconds(0), 1));
    REQUIRE(dead.ok());
    REQUIRE(dead->size() == 1);
    // Its call may end before the turn that wrote it (early dispatch): the
    // cut is past both the first turn and the first call's result.
    auto first_of = [&](std::string_view type) {
        const std::string needle = "\"type\":\"" + std::string(type) + "\"";
        size_t i = 0;
        while (i < twin_lines->size() && (*twin_lines)[i].second.find(needle) == std::string::npos) ++i;
        return i;
    };
    const size_t cut = std::max(first_of("tool_call"), first_of("model_turn"));
    REQUIRE(cut < twin_lines->size());
    for (size_t i = 0; i <= cut; ++i) {
        std::string line = (*twin_lines)[i].second;
        if (const size_t at = line.find("\"run_id\":\"twin\""); at != std::string::npos) line.replace(at, 15, "\"run_id\":\"run-1\"");
        auto w = db::append_event(*f.conn, "run-1", (*dead)[0].epoch, static_cast<int64_t>(i), line);
        REQUIRE_MESSAGE(w.ok(), w.err().message);
        REQUIRE(*w);
    }

    // Another worker takes it over. Its model plays only what the dead one
    // did not record: were turn 1 generated again, the answers would not match.
    auto service = scripted_service(agents.model_path, {k_turns.begin() + 1, k_turns.end()});
    db::worker w(*service, worker_opts(f.url(), agents.dir.path.string()));
    auto st = w.run();
    REQUIRE_MESSAGE(st.ok(), st.err().message);
    CHECK(w.stats().claimed == 1);
    CHECK(w.stats().resumed == 1);
    CHECK(w.stats().finished == 1);

    auto row = f.run(db::get_run(*f.conn, "run-1"));
    REQUIRE(row.ok());
    CHECK((*row)->state == "succeeded");
    CHECK((*row)->lease_epoch == 2);
    CHECK((*row)->n_claims == 2);
    const std::string twin_answer = (*twin_row)->result_json.substr(0, (*twin_row)->result_json.find(",\"journal\""));
    CHECK((*row)->result_json.substr(0, (*row)->result_json.find(",\"journal\"")) == twin_answer);
    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    CHECK(count_type(*lines, "run_resume") == 1);
    CHECK(count_type(*lines, "model_turn") == 4);  // turn 1 once, from the dead worker
    CHECK(count_type(*lines, "tool_start") == count_type(*twin_lines, "tool_start"));  // no call ran twice
    CHECK(count_type(*lines, "final") == 1);
    CHECK(count_type(*lines, "run_end") == 1);
    auto epochs = f.conn->exec("SELECT epoch, count(*) AS n FROM tachyon.events WHERE run_id = 'run-1' GROUP BY epoch ORDER BY epoch");
    REQUIRE(epochs.ok());
    REQUIRE(epochs->rows.size() == 2);
    CHECK(epochs->get(0, "n") == std::to_string(cut + 1));
}

TEST_CASE("worker: a worker whose run was claimed by another stops it at its next event and does not end it") {
    pg_test::fixture f("worker_fenced");
    if (f.skipped()) return;
    agents_folder agents;
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "test-agent", k_task, agents.inputs())).ok());

    // A model slow enough that the run is still going when its lease is taken.
    auto service = scripted_service(agents.model_path, k_turns, std::chrono::microseconds(5000));
    db::worker w(*service, worker_opts(f.url(), agents.dir.path.string()));
    status st;
    std::thread t([&] { st = w.run(); });
    for (int i = 0; i < 1000; ++i) {
        auto n = f.conn->exec("SELECT count(*) AS n FROM tachyon.events WHERE run_id = 'run-1'");
        if (n.ok() && n->get(0, "n") != "0") break;
        std::this_thread::sleep_for(milliseconds(5));
    }
    // Another worker takes the run, as if this one had stalled past its lease.
    REQUIRE(f.conn->exec("UPDATE tachyon.runs SET lease_expires = clock_timestamp() - interval '1 second' WHERE id = 'run-1'").ok());
    auto stolen = f.run(db::claim(*f.conn, "other-worker", milliseconds(60000), 1));
    REQUIRE(stolen.ok());
    REQUIRE(stolen->size() == 1);
    CHECK((*stolen)[0].epoch == 2);
    t.join();
    REQUIRE_MESSAGE(st.ok(), st.err().message);
    CHECK(w.stats().lost == 1);
    CHECK(w.stats().finished == 0);

    auto row = f.run(db::get_run(*f.conn, "run-1"));
    REQUIRE(row.ok());
    CHECK((*row)->state == "running");  // the other worker's to end
    CHECK((*row)->lease_owner == "other-worker");
    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    CHECK_FALSE(lines->empty());
    CHECK(count_type(*lines, "run_end") == 0);
    CHECK(count_type(*lines, "final") == 0);
    auto epochs = f.conn->exec("SELECT DISTINCT epoch FROM tachyon.events WHERE run_id = 'run-1'");
    REQUIRE(epochs.ok());
    REQUIRE(epochs->rows.size() == 1);
    CHECK(epochs->get(0, "epoch") == "1");
}

TEST_CASE("worker: a worker that takes back a run it still runs (its lease ran out while it was slow) ends it once, under the new claim") {
    pg_test::fixture f("worker_reclaim");
    if (f.skipped()) return;
    agents_folder agents;
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "test-agent", k_task, agents.inputs())).ok());

    auto service = scripted_service(agents.model_path, k_turns, std::chrono::microseconds(5000));
    db::worker_options o = worker_opts(f.url(), agents.dir.path.string());
    o.concurrency = 2;  // a free slot: the worker's next claim may take the run again
    db::worker w(*service, o);
    status st;
    std::thread t([&] { st = w.run(); });
    for (int i = 0; i < 1000; ++i) {
        auto n = f.conn->exec("SELECT count(*) AS n FROM tachyon.events WHERE run_id = 'run-1'");
        if (n.ok() && n->get(0, "n") != "0") break;
        std::this_thread::sleep_for(milliseconds(5));
    }
    // The lease runs out as if the worker had stalled; its own next claim takes the run (epoch 2).
    REQUIRE(f.conn->exec("UPDATE tachyon.runs SET lease_expires = clock_timestamp() - interval '1 second' WHERE id = 'run-1'").ok());
    t.join();
    REQUIRE_MESSAGE(st.ok(), st.err().message);

    auto row = f.run(db::get_run(*f.conn, "run-1"));
    REQUIRE(row.ok());
    CHECK((*row)->lease_epoch == 2);
    CHECK((*row)->state == "succeeded");
    CHECK(w.stats().finished == 1);
    CHECK(w.stats().lost == 1);  // the first claim's run, fenced off
    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    CHECK(count_type(*lines, "run_resume") == 1);
    CHECK(count_type(*lines, "run_end") == 1);
    CHECK(count_type(*lines, "final") == 1);
}
