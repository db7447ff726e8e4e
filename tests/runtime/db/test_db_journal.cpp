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

}  // namespace

TEST_CASE("db_journal: the lines in the database are the file journal's and read back as a journal") {
    pg_test::database d("journal");
    if (d.url().empty()) {
        MESSAGE(d.skip_message());
        return;
    }
    asio::io_context io;
    auto c = pg_test::migrated(d, io);
    REQUIRE(c.ok());
    REQUIRE(pg_test::block_on(io, db::enqueue(**c, "run-1", "a", "t", {})).ok());
    auto claimed = pg_test::block_on(io, db::claim(**c, "w", milliseconds(60000), 1));
    REQUIRE(claimed.ok());
    REQUIRE(claimed->size() == 1);

    auto j = db::db_journal::open(d.url(), "run-1", (*claimed)[0].epoch, nullptr);
    REQUIRE_MESSAGE(j.ok(), j.err().message);
    CHECK((*j)->location() == "postgresql:run-1");
    auto e0 = (*j)->append(start_of("run-1"));
    REQUIRE_MESSAGE(e0.ok(), e0.err().message);
    auto e1 = (*j)->append(journal::turn_start_event{1});
    REQUIRE(e1.ok());
    CHECK(e1->seq == 1);
    CHECK((*j)->n_events() == 2);

    auto lines = db::read_events(**c, "run-1");
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
    auto resumed = db::db_journal::open(d.url(), "run-1", (*claimed)[0].epoch, &*log);
    REQUIRE(resumed.ok());
    CHECK((*resumed)->n_events() == 2);
    auto e2 = (*resumed)->append(journal::run_resume_event{"2026-12-02T03:00:01.000Z", 2, ""});
    REQUIRE(e2.ok());
    CHECK(e2->seq == 2);
}

TEST_CASE("db_journal: once another worker claims the run the old lease's writes are refused with errc::cancelled and none lands") {
    pg_test::database d("journal_fence");
    if (d.url().empty()) {
        MESSAGE(d.skip_message());
        return;
    }
    asio::io_context io;
    auto c = pg_test::migrated(d, io);
    REQUIRE(c.ok());
    REQUIRE(pg_test::block_on(io, db::enqueue(**c, "run-1", "a", "t", {})).ok());
    auto first = pg_test::block_on(io, db::claim(**c, "w1", milliseconds(0), 1));
    REQUIRE(first.ok());
    REQUIRE(first->size() == 1);
    auto j = db::db_journal::open(d.url(), "run-1", (*first)[0].epoch, nullptr);
    REQUIRE(j.ok());
    REQUIRE((*j)->append(start_of("run-1")).ok());
    CHECK_FALSE((*j)->fenced());

    auto second = pg_test::block_on(io, db::claim(**c, "w2", milliseconds(60000), 1));
    REQUIRE(second.ok());
    REQUIRE(second->size() == 1);

    auto refused = (*j)->append(journal::turn_start_event{1});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.err().code == errc::cancelled);
    CHECK(refused.err().message.find("another worker holds the run") != std::string::npos);
    CHECK((*j)->fenced());
    CHECK_FALSE((*j)->append(journal::turn_start_event{1}).ok());
    CHECK((*j)->n_events() == 1);
    auto lines = db::read_events(**c, "run-1");
    REQUIRE(lines.ok());
    CHECK(lines->size() == 1);
}
