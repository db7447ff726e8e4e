#include "runtime/db/schema.h"

#include <doctest/doctest.h>

#include <thread>

#include "tests/runtime/db/pg_test_db.h"

using namespace tachyon;

TEST_CASE("schema: migrations are numbered from 1 in order") {
    const auto& all = db::migrations();
    REQUIRE_FALSE(all.empty());
    for (size_t i = 0; i < all.size(); ++i) CHECK(all[i].version == static_cast<int>(i) + 1);
    CHECK(db::schema_version_of_build() == all.back().version);
}

TEST_CASE("schema: an empty database is migrated to this build's version once and migrating again changes nothing") {
    pg_test::database d("schema");
    if (d.skipped()) return;
    auto c = db::pg_connection::connect(d.url());
    REQUIRE_MESSAGE(c.ok(), c.err().message);
    auto& conn = **c;
    auto v0 = db::current_schema_version(conn);
    REQUIRE(v0.ok());
    CHECK(*v0 == 0);
    auto before = db::migrate(conn);
    REQUIRE_MESSAGE(before.ok(), before.err().message);
    CHECK(*before == 0);
    CHECK(*db::current_schema_version(conn) == db::schema_version_of_build());
    REQUIRE(conn.exec("INSERT INTO tachyon.runs (id, agent, task) VALUES ('r1', 'a', 't')").ok());

    auto again = db::migrate(conn);
    REQUIRE_MESSAGE(again.ok(), again.err().message);
    CHECK(*again == db::schema_version_of_build());
    auto rows = conn.exec("SELECT count(*) AS n FROM tachyon.schema_version");
    REQUIRE(rows.ok());
    CHECK(rows->get(0, "n") == std::to_string(db::migrations().size()));
    // The data is still there: nothing was created again.
    CHECK(conn.exec("SELECT count(*) AS n FROM tachyon.runs")->get(0, "n") == "1");
}

TEST_CASE("schema: processes that migrate one empty database at the same time apply each migration once") {
    pg_test::database d("schema_race");
    if (d.skipped()) return;
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    std::vector<std::string> errors(4);
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&, i] {
            auto c = db::pg_connection::connect(d.url());
            if (!c) {
                errors[i] = c.err().message;
                return;
            }
            auto m = db::migrate(**c);
            if (m) ++ok;
            else errors[i] = m.err().message;
        });
    for (auto& t : threads) t.join();
    for (const auto& e : errors) CHECK_MESSAGE(e.empty(), e);
    CHECK(ok == 4);
    auto c = db::pg_connection::connect(d.url());
    REQUIRE(c.ok());
    CHECK((*c)->exec("SELECT count(*) AS n FROM tachyon.schema_version")->get(0, "n") == std::to_string(db::migrations().size()));
}

TEST_CASE("schema: a database migrated by a newer tachyon is refused with the versions named") {
    pg_test::database d("schema_newer");
    if (d.skipped()) return;
    auto c = db::pg_connection::connect(d.url());
    REQUIRE(c.ok());
    REQUIRE(db::migrate(**c).ok());
    REQUIRE((*c)->exec("INSERT INTO tachyon.schema_version (version, description) VALUES (999, 'future')").ok());
    auto m = db::migrate(**c);
    REQUIRE_FALSE(m.ok());
    CHECK(m.err().message.find("schema version 999 is newer than this build's") != std::string::npos);
    // Refused without a trace: the transaction was rolled back.
    CHECK((*c)->exec("SELECT 1").ok());
}
