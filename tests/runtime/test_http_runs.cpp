#include "runtime/http_runs.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>

#include "tests/tools/incident_fixture.h"

using namespace tachyon;

TEST_CASE("http_runs: a record keeps events with sequence ids and wakes a waiting reader") {
    http::run_record r("run-1", "agent", nullptr);
    std::vector<std::pair<int64_t, std::string>> out;
    bool done = true;
    std::atomic<int> woken{0};
    r.read_events(0, out, done, [&] { ++woken; });
    CHECK(out.empty());
    CHECK_FALSE(done);
    run_turn t;
    t.step = 1;
    t.text = "thinking";
    r.on_turn_end(t);
    CHECK(woken == 1);
    run_tool_call c;
    c.step = 1;
    c.call_id = "call_1_0";
    c.name = "search_logs";
    c.arguments = R"({"service": "db"})";
    c.ok = true;
    c.result = "3 lines";
    r.on_tool_end(c);
    CHECK(woken == 1);  // a waiter is called once
    r.read_events(1, out, done, {});
    REQUIRE(out.size() == 1);
    CHECK(out[0].first == 1);
    CHECK(out[0].second.find(R"("type":"tool_call")") != std::string::npos);
    CHECK(out[0].second.find('\n') == std::string::npos);

    run_outcome o;
    o.state = "succeeded";
    o.answer = R"({"a":1})";
    o.verified = true;
    r.finished(o);
    out.clear();
    r.read_events(0, out, done, {});
    CHECK(done);
    REQUIRE(out.size() == 4);
    CHECK(out[2].second.find(R"("type":"final")") != std::string::npos);
    CHECK(out[3].second.find(R"("type":"run_end")") != std::string::npos);
    CHECK(r.state() == "succeeded");
    CHECK(r.status_json().find(R"("result":{"answer":{"a":1},"verified":true)") != std::string::npos);
}

TEST_CASE("http_runs: start rejects bad bodies, unknown agents and missing inputs with the field named") {
    incident_fixture::temp_root agents("http_runs_agents");
    service_options so;
    agent_service service(so);
    http::run_registry_options ro;
    ro.agents_dir = std::string(TACHYON_SOURCE_DIR) + "/agents";
    http::run_registry runs(service, ro, nullptr);
    auto err = [&](std::string_view body) {
        auto r = runs.start(body);
        REQUIRE_FALSE(r.ok());
        return r.err();
    };
    CHECK(err("{").message.rfind("body: not valid JSON", 0) == 0);
    CHECK(err(R"({"task": "x"})").message == "agent: missing (required)");
    CHECK(err(R"({"agent": "incident-analyst"})").message == "task: missing (required)");
    CHECK(err(R"({"agent": "incident-analyst", "task": "x", "extra": 1})").message.rfind("extra: unrecognized argument", 0) == 0);
    CHECK(err(R"({"agent": "../etc/passwd", "task": "x"})").code == errc::invalid_argument);
    CHECK(err(R"({"agent": "nobody", "task": "x"})").code == errc::not_found);
    CHECK(err(R"({"agent": "incident-analyst", "task": "x", "inputs": {"incident_dir": 5}})").message ==
          "inputs.incident_dir: expected a string");
    CHECK(err(R"({"agent": "incident-analyst", "task": "x"})").message.rfind("inputs.incident_dir: missing", 0) == 0);
    CHECK(runs.n_active() == 0);
    CHECK(runs.list().empty());
}

TEST_CASE("http_runs: finished runs beyond max_finished are forgotten, oldest first") {
    const std::string model = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";
    if (!std::filesystem::exists(model)) {
        MESSAGE("skipped: the shipped model is absent");
        return;
    }
    incident_fixture::temp_root incident("http_runs_bounded_incident");
    incident_fixture::temp_root journals("http_runs_bounded_journal");
    incident_fixture::write_incident(incident.path);
    service_options so;
    agent_service service(so);
    http::run_registry_options ro;
    ro.agents_dir = std::string(TACHYON_SOURCE_DIR) + "/agents";
    ro.journal_dir = journals.path.string();
    ro.max_finished = 1;
    http::run_registry runs(service, ro, nullptr);
    const std::string body = R"({"agent": "incident-analyst", "task": "Checkout fails with 502s. Find the root cause.", "inputs": {"incident_dir": ")" +
                             incident.path.string() + "\"}}";
    auto first = runs.start(body);
    REQUIRE(first.ok());
    const std::string first_id = (*first)->id();
    REQUIRE(runs.wait_idle(std::chrono::seconds(60)));
    CHECK(runs.find(first_id) != nullptr);
    auto second = runs.start(body);
    REQUIRE(second.ok());
    REQUIRE(runs.wait_idle(std::chrono::seconds(60)));
    CHECK(runs.find(first_id) == nullptr);          // dropped from memory ...
    CHECK(std::filesystem::exists(journals.path / (first_id + ".jsonl")));  // ... its journal stays
    CHECK(runs.find((*second)->id()) != nullptr);
    CHECK(runs.list().size() == 1);
}
