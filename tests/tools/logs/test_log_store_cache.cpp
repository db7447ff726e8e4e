#include "tools/logs/log_store_cache.h"

#include <doctest/doctest.h>

#include "tests/tools/incident_fixture.h"
#include "tools/logs/builtin.h"

using namespace tachyon;
using namespace tachyon::tools;

TEST_CASE("log_store_cache: one store per unchanged directory, a fresh one when a file changes") {
    incident_fixture::temp_root root("cache");
    incident_fixture::write_incident(root.path);
    log_store_cache cache(2);
    auto a = cache.get(root.path, {});
    REQUIRE(a->ensure_loaded({}).ok());
    CHECK(cache.get(root.path, {}) == a);                   // the same loaded store
    CHECK(cache.get(root.path / "logs" / "..", {}) == a);   // the same directory by another path
    CHECK(cache.get(root.path, {.year = 2020, .zone_minutes = std::nullopt}) != a);  // other hints, other store

    incident_fixture::write_file(root.path / "logs/checkout.log", "2026-03-14T14:00:00.000Z checkout[812]: ERROR new\n");
    auto b = cache.get(root.path, {});
    CHECK(b != a);
    REQUIRE(b->ensure_loaded({}).ok());
    CHECK(b->find_file("checkout")->n_lines == 1);
    CHECK(cache.size() <= 2);
}

TEST_CASE("add_log_tools: tools of two registries over one root share the process's store") {
    incident_fixture::temp_root root("cache_tools");
    incident_fixture::write_incident(root.path);
    auto first = log_store_cache::shared().get(root.path, {});
    registry run_tools, verify_tools;
    REQUIRE(add_log_tools(run_tools, root.path.string()).ok());
    REQUIRE(add_log_tools(verify_tools, root.path.string()).ok());
    auto listed = run_tools.find("list_services")->invoke("{}", {});
    REQUIRE(listed.ok());
    CHECK(first->stats().n_files == 6);  // loaded by the first call
    const double load_seconds = first->stats().seconds;
    auto verdict = verify_tools.find("verify_root_cause")->invoke(R"({"service":"payments-db","evidence":["payments-db:3"]})", {});
    REQUIRE(verdict.ok());
    CHECK(verdict->starts_with("verified"));
    CHECK(first->stats().seconds == load_seconds);  // not loaded a second time
    CHECK(log_store_cache::shared().get(root.path, {}) == first);
}

TEST_CASE("log_store_options_from: year and tz settings, bad values named") {
    auto o = log_store_options_from({{"year", "2017"}, {"tz", "-07:00"}});
    REQUIRE(o.ok());
    CHECK(o->year == 2017);
    CHECK(o->zone_minutes == -420);
    auto bad = log_store_options_from({{"year", "17x"}});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("'year'") != std::string::npos);
    bad = log_store_options_from({{"tz", "Mars/Olympus"}});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("'tz'") != std::string::npos);
}
