#include "runtime/db/db_journal.h"

#include <doctest/doctest.h>

#include "runtime/db/run_store.h"
#include "runtime/db/schema.h"
#include "tests/runtime/db/pg_test_db.h"

using namespace tachyon;
namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

journal::run_start_event start_of(const std::string& id) {
    journal::run_start_event e;
    e.run_id = id;
    e.agent = "a";
    e.agent_file = "/agents/a.json";
    e.model = "m.gguf";
    e.inputs = {{"k", "v"}};
    e.task = "t";
    e.started_at = "2026-12-02T03:00:00.000Z";
    return e;
}

// Run "run-1" queued, claimed by "w" under `lease`, and its journal opened at that claim's epoch.
result<std::unique_ptr<db::db_journal>> claimed_journal(pg_test::fixture& f, milliseconds lease) {
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "a", "t", {})).ok());
    auto claimed = f.run(db::claim(*f.conn, "w", lease, 1));
    REQUIRE(claimed.ok());
    REQUIRE(claimed->size() == 1);
    auto j = db::db_journal::open(f.url(), "run-1", (*claimed)[0].epoch, nullptr);
    REQUIRE_MESSAGE(j.ok(), j.err().message);
    return j;
}

}  // namespace

TEST_CASE("db_journal: the lines in the database are the file journal's and read back as a journal") {
    pg_test::fixture f("journal");
    if (f.skipped()) return;
    auto j = claimed_journal(f, milliseconds(60000));
    CHECK((*j)->location() == "postgresql:run-1");
    auto e0 = (*j)->append(start_of("run-1"));
    REQUIRE_MESSAGE(e0.ok(), e0.err().message);
    auto e1 = (*j)->append(journal::turn_start_event{1});
    REQUIRE(e1.ok());
    CHECK(e1->seq == 1);
    CHECK((*j)->n_events() == 2);
    // Ordinary lines: written by the journal's writer, all of them once flush returns.
    REQUIRE((*j)->flush().ok());

    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    REQUIRE(lines->size() == 2);
    std::string file_line = journal::to_json_line(*e0, journal::writer_options{}.max_result_bytes);
    file_line.pop_back();
    CHECK((*lines)[0].second == file_line);

    auto log = db::journal_of_lines("run-1", *lines);
    REQUIRE_MESSAGE(log.ok(), log.err().message);
    CHECK(log->run_id() == "run-1");
    CHECK(log->state() == "interrupted");
    CHECK(log->warnings.empty());
    REQUIRE(log->start() != nullptr);
    CHECK(log->start()->inputs == std::map<std::string, std::string>{{"k", "v"}});

    // A resumed journal goes on after the events it was given.
    j->reset();
    auto resumed = db::db_journal::open(f.url(), "run-1", 1, &*log);  // the first claim's epoch
    REQUIRE(resumed.ok());
    CHECK((*resumed)->n_events() == 2);
    auto e2 = (*resumed)->append(journal::run_resume_event{"2026-12-02T03:00:01.000Z", 2, ""});
    REQUIRE(e2.ok());
    CHECK(e2->seq == 2);
}

TEST_CASE("db_journal: once another worker claims the run the old lease's writes are refused with errc::cancelled and none lands") {
    pg_test::fixture f("journal_fence");
    if (f.skipped()) return;
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "a", "t", {})).ok());
    auto first = f.run(db::claim(*f.conn, "w1", milliseconds(0), 1));
    REQUIRE(first.ok());
    REQUIRE(first->size() == 1);
    auto j = db::db_journal::open(f.url(), "run-1", (*first)[0].epoch, nullptr);
    REQUIRE(j.ok());
    REQUIRE((*j)->append(start_of("run-1")).ok());
    REQUIRE((*j)->flush().ok());
    CHECK_FALSE((*j)->fenced());

    auto second = f.run(db::claim(*f.conn, "w2", milliseconds(60000), 1));
    REQUIRE(second.ok());
    REQUIRE(second->size() == 1);

    // An ordinary line does not wait for its write: the refusal comes with
    // the next line that waits (here the flush), and every append after it.
    REQUIRE((*j)->append(journal::turn_start_event{1}).ok());
    auto refused = (*j)->flush();
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.err().code == errc::cancelled);
    CHECK(refused.err().message.find("another worker holds the run") != std::string::npos);
    CHECK((*j)->fenced());
    auto after = (*j)->append(journal::turn_start_event{1});
    REQUIRE_FALSE(after.ok());
    CHECK(after.err().code == errc::cancelled);
    CHECK((*j)->n_events() == 1);
    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    CHECK(lines->size() == 1);
}

TEST_CASE("db_journal: ordinary lines do not wait for the database, land in order, and a line that must reach disk is committed when append returns") {
    pg_test::fixture f("journal_async");
    if (f.skipped()) return;
    auto j = claimed_journal(f, milliseconds(60000));

    // Another transaction holds the run's row: no journal write can commit.
    auto locker = db::pg_connection::connect(f.url());
    REQUIRE(locker.ok());
    REQUIRE((*locker)->exec_script("BEGIN").ok());
    REQUIRE((*locker)->exec("SELECT id FROM tachyon.runs WHERE id = 'run-1' FOR UPDATE").ok());
    // Ordinary lines return at once all the same (were they written one
    // round trip each, the first would wait for the lock).
    std::vector<std::string> expected;
    auto keep = [&](const result<journal::event>& e) {
        REQUIRE_MESSAGE(e.ok(), e.err().message);
        std::string line = journal::to_json_line(*e, journal::writer_options{}.max_result_bytes);
        line.pop_back();
        expected.push_back(line);
    };
    keep((*j)->append(start_of("run-1")));
    for (int i = 1; i <= 100; ++i) keep((*j)->append(journal::turn_start_event{i}));
    CHECK((*j)->n_events() == 101);
    auto none = db::read_events(*f.conn, "run-1");
    REQUIRE(none.ok());
    CHECK(none->empty());
    REQUIRE((*locker)->exec_script("COMMIT").ok());

    // The intent of a call with side effects: in the database when append returns, after every line before it.
    journal::tool_start_event intent;
    intent.step = 100;
    intent.call_id = "call_100_0";
    intent.name = "shell";
    intent.arguments_json = R"({"program": "echo"})";
    intent.read_only = false;
    keep((*j)->append(intent));
    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    REQUIRE(lines->size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        CHECK((*lines)[i].first == static_cast<int64_t>(i));
        CHECK((*lines)[i].second == expected[i]);
    }
    // The 100 lines queued behind the lock went in one or two statements, not one each.
    auto batches = f.conn->exec("SELECT count(DISTINCT xmin::text) AS n FROM tachyon.events WHERE run_id = 'run-1'");
    REQUIRE(batches.ok());
    CHECK(std::stoi(batches->get(0, "n")) <= 3);

    // Its result too, after an ordinary line: a worker that dies now leaves a call that ran, not one that may have.
    keep((*j)->append(journal::turn_start_event{100}));
    journal::tool_call_event answered;
    answered.step = 100;
    answered.call_id = "call_100_0";
    answered.name = "shell";
    answered.ok = true;
    answered.result = "done";
    keep((*j)->append(answered));
    auto with_result = db::read_events(*f.conn, "run-1");
    REQUIRE(with_result.ok());
    REQUIRE(with_result->size() == expected.size());
    CHECK(with_result->back().second == expected.back());

    // Closing the journal writes what is queued.
    for (int i = 101; i <= 110; ++i) keep((*j)->append(journal::turn_start_event{i}));
    j->reset();
    auto all = db::read_events(*f.conn, "run-1");
    REQUIRE(all.ok());
    REQUIRE(all->size() == expected.size());
    CHECK(all->back().second == expected.back());
    auto log = db::journal_of_lines("run-1", *all);
    REQUIRE(log.ok());
    CHECK(log->warnings.empty());
}
