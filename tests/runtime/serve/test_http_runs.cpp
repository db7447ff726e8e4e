#include "runtime/serve/http_runs.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/db/run_store.h"
#include "tests/runtime/db/pg_test_db.h"
#include "tests/tools/incident_fixture.h"

using namespace tachyon;

TEST_CASE("http_runs: a record keeps the journal's events with their sequence ids and wakes a waiting reader") {
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
    r.on_event({0, 1.5, journal_event(t)});
    CHECK(woken == 1);
    run_tool_call c;
    c.step = 1;
    c.call_id = "call_1_0";
    c.name = "search_logs";
    c.arguments = R"({"service": "db"})";
    c.ok = true;
    c.result = "3 lines";
    r.on_event({1, 2.5, journal_event(c)});
    CHECK(woken == 1);  // a waiter is called once
    r.read_events(1, out, done, {});
    REQUIRE(out.size() == 1);
    CHECK(out[0].first == 1);
    CHECK(out[0].second.find(R"("type":"tool_call")") != std::string::npos);
    CHECK(out[0].second.find('\n') == std::string::npos);
    // The line is the journal's, byte for byte.
    std::string journal_line = journal::to_json_line({1, 2.5, journal_event(c)}, 16 * 1024);
    journal_line.pop_back();
    CHECK(out[0].second == journal_line);

    run_outcome o;
    o.state = "succeeded";
    o.answer = R"({"a":1})";
    o.verified = true;
    journal::final_event fin;
    fin.answer_json = o.answer;
    r.on_event({2, 3.0, fin});
    r.read_events(0, out, done, {});
    CHECK_FALSE(done);  // done only once the run has returned
    r.on_event({3, 3.5, journal::run_end_event{journal::run_state::succeeded, ""}});
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
    ro.data_roots = {incident.path.string()};
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
    CHECK(runs.list().size() == 1);  // dropped from memory ...
    CHECK(runs.list().front()->id() == (*second)->id());
    CHECK(std::filesystem::exists(journals.path / (first_id + ".jsonl")));  // ... its journal stays
    auto from_disk = runs.find(first_id);  // ... and answers for it
    REQUIRE(from_disk != nullptr);
    CHECK(from_disk != *first);
    CHECK(from_disk->finished());
    CHECK(from_disk->state() == (*first)->state());
    const auto result_of = [](const std::string& status) { return status.substr(status.find("\"n_events\"")); };
    CHECK(result_of(from_disk->status_json()) == result_of((*first)->status_json()));  // events, answer, verified, steps, error, journal
    CHECK(runs.find((*second)->id()) != nullptr);
}

TEST_CASE("http_runs: path inputs must resolve inside the data roots, anything else is refused before a run starts") {
    incident_fixture::temp_root data("http_runs_data_root");
    incident_fixture::temp_root secret("http_runs_secret");
    incident_fixture::temp_root journals("http_runs_roots_journal");
    incident_fixture::write_incident(data.path / "incident");
    // A directory the log tools could read, with a planted secret, and a link to it from inside the root.
    incident_fixture::write_incident(secret.path);
    std::ofstream(secret.path / "logs" / "secret.txt") << "password=hunter2\n";
    std::filesystem::create_directory_symlink(secret.path, data.path / "link-out");
    service_options so;
    agent_service service(so);
    http::run_registry_options ro;
    ro.agents_dir = std::string(TACHYON_SOURCE_DIR) + "/agents";
    ro.journal_dir = journals.path.string();
    ro.data_roots = {data.path.string()};
    http::run_registry runs(service, ro, nullptr);
    auto body = [](const std::string& dir) {
        return R"({"agent": "incident-analyst", "task": "Find the root cause.", "inputs": {"incident_dir": ")" + dir + "\"}}";
    };
    auto refused = [&](const std::string& b) {
        auto r = runs.start(b);
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().code == errc::invalid_argument);  // 400
        return r.err().message;
    };
    const std::string roots = " is outside the data roots (" + data.path.string() + ")";
    CHECK(refused(body(secret.path.string())) == "inputs.incident_dir: '" + secret.path.string() + "'" + roots);
    CHECK(refused(body("/etc")) == "inputs.incident_dir: '/etc'" + roots);
    CHECK(refused(body((data.path / "link-out").string())) == "inputs.incident_dir: '" + (data.path / "link-out").string() + "'" + roots);
    CHECK(refused(body((data.path / "incident" / ".." / ".." / secret.path.filename()).string())).find(roots) != std::string::npos);
    CHECK(refused(R"({"agent": "incident-analyst", "task": "x", "inputs": {"incident_dir": ")" + (data.path / "incident").string() +
                  R"(", "extra": "/etc"}})") == "inputs.extra: not an input of agent 'incident-analyst' (declared: incident_dir)");
    CHECK(refused(body((data.path / "incident" / "logs" / "api-gateway.log").string())).find("(expected a directory)") != std::string::npos);
    // Refused runs never start: no record, no tool call, no journal.
    CHECK(runs.list().empty());
    CHECK(runs.n_active() == 0);
    CHECK(std::filesystem::is_empty(journals.path));

    // Without data roots every path input is refused.
    http::run_registry_options closed = ro;
    closed.data_roots.clear();
    http::run_registry no_roots(service, closed, nullptr);
    auto r = no_roots.start(body((data.path / "incident").string()));
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message == "inputs.incident_dir: path inputs are refused: the server has no data roots (start it with --data-root DIR)");

    // Inside a root: accepted, with the resolved path as the run's input.
    const std::string model = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";
    if (!std::filesystem::exists(model)) {
        MESSAGE("skipped the accepted run: the shipped model is absent");
        return;
    }
    auto ok = runs.start(body((data.path / "." / "incident").string()));
    REQUIRE_MESSAGE(ok.ok(), (ok.ok() ? "" : ok.err().message));
    (*ok)->cancel();  // the run need not finish: that it started is the point
    REQUIRE(runs.wait_idle(std::chrono::seconds(60)));
    std::vector<std::pair<int64_t, std::string>> events;
    bool done = false;
    (*ok)->read_events(0, events, done, {});
    REQUIRE_FALSE(events.empty());
    CHECK(events[0].second.find(std::filesystem::canonical(data.path / "incident").string()) != std::string::npos);
}

TEST_CASE("http_runs: a run parked for approval waits in its journal, and goes on when approved, decisions are checked") {
    const std::string shipped = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/";
    if (!std::filesystem::exists(shipped + "model/incident-analyst.gguf")) {
        MESSAGE("skipped: the shipped model is absent");
        return;
    }
    incident_fixture::temp_root incident("http_runs_approval_incident");
    incident_fixture::temp_root journals("http_runs_approval_journal");
    incident_fixture::temp_root agents("http_runs_approval_agents");
    incident_fixture::write_incident(incident.path);
    // The shipped agent, with its first tool behind an approval.
    std::ifstream in(std::string(TACHYON_SOURCE_DIR) + "/agents/incident-analyst.json");
    std::string agent((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t at; (at = agent.find("\"../examples/incident/")) != std::string::npos;) agent.replace(at, 22, "\"" + shipped);
    const std::string tool = R"({"name": "error_summary", "settings": {"root": "{incident_dir}"}})";
    REQUIRE(agent.find(tool) != std::string::npos);
    agent.replace(agent.find(tool), tool.size(), R"({"name": "error_summary", "settings": {"root": "{incident_dir}"}, "requires_approval": true})");
    std::ofstream(agents.path / "gated.json") << agent;

    service_options so;
    agent_service service(so);
    http::run_registry_options ro;
    ro.agents_dir = agents.path.string();
    ro.journal_dir = journals.path.string();
    ro.data_roots = {incident.path.string()};
    http::run_registry runs(service, ro, nullptr);
    auto started = runs.start(R"({"agent": "gated", "task": "Checkout fails with 502s. Find the root cause.", "inputs": {"incident_dir": ")" +
                              incident.path.string() + "\"}}");
    REQUIRE(started.ok());
    const std::string id = (*started)->id();
    REQUIRE(runs.wait_idle(std::chrono::seconds(60)));
    CHECK((*started)->state() == "awaiting_approval");
    const std::string parked = (*started)->status_json();
    CHECK(parked.find(R"("pending":[{"call_id":"call_1_0","name":"error_summary","arguments":{},"reason":"approval")") != std::string::npos);
    // After a restart the journal answers the same.
    auto from_disk = http::run_record::from_journal(*journal::read_journal(journals.path / (id + ".jsonl")));
    CHECK(from_disk->state() == "awaiting_approval");
    CHECK(from_disk->status_json().find(R"("pending":[{"call_id":"call_1_0")") != std::string::npos);

    CHECK(http::run_registry::parse_decision(R"({"call_id": "call_1_0", "action": "maybe"})", "decide").err().message ==
          "action: expected \"retry\" or \"skip\", got \"maybe\"");
    CHECK(http::run_registry::parse_decision(R"({"reason": "ok"})", "approve").err().message == "call_id: missing (required)");
    CHECK(http::run_registry::parse_decision(R"({"call_id": "c", "action": "retry"})", "approve").err().message ==
          "action: unrecognized argument (expected one of: call_id, reason)");
    auto wrong = runs.resume(id, {{"call_4_0", "approve", ""}});
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.err().code == errc::invalid_argument);
    CHECK(runs.resume("no-such-run", {}).err().code == errc::not_found);

    auto d = http::run_registry::parse_decision(R"({"call_id": "call_1_0", "reason": "read-only, fine"})", "approve");
    REQUIRE(d.ok());
    auto resumed = runs.resume(id, {*d});
    REQUIRE_MESSAGE(resumed.ok(), (resumed.ok() ? "" : resumed.err().message));
    REQUIRE(runs.wait_idle(std::chrono::seconds(60)));
    // It went on past the approved call to an end (the fixture's small
    // incident need not be one the shipped model solves).
    const std::string end_state = (*resumed)->state();
    CHECK(end_state != "awaiting_approval");
    CHECK(end_state != "running");
    auto log = journal::read_journal(journals.path / (id + ".jsonl"));
    REQUIRE(log.ok());
    bool approved_call_ran = false;
    for (const auto& e : log->events)
        if (const auto* c = std::get_if<journal::tool_call_event>(&e.body)) approved_call_ran = approved_call_ran || (c->call_id == "call_1_0" && c->ok);
    CHECK(approved_call_ran);
    // The record holds the whole run, from the first event of the first process.
    std::vector<std::pair<int64_t, std::string>> events;
    bool done = false;
    (*resumed)->read_events(0, events, done, nullptr);
    CHECK(done);
    REQUIRE_FALSE(events.empty());
    CHECK(events.front().first == 0);
    for (size_t i = 1; i < events.size(); ++i) CHECK(events[i].first == events[i - 1].first + 1);
    auto again = runs.resume(id, {});
    REQUIRE_FALSE(again.ok());
    CHECK(again.err().message.find("ended (" + end_state + ")") != std::string::npos);
}

TEST_CASE("http_runs with a database: a run is queued there and answered from there with its events live whichever process runs it") {
    pg_test::database d("http_runs");
    if (d.url().empty()) {
        MESSAGE(d.skip_message());
        return;
    }
    incident_fixture::temp_root dir{"http_runs_db"};
    std::ofstream(dir.path / "m.gguf", std::ios::binary) << "GGUF";
    std::ofstream(dir.path / "a.json") << R"({"name": "a", "description": "d", "instructions": "i", "model": "m.gguf", "chat_format": "chatml"})";
    agent_service service(service_options{});
    http::run_registry_options ro;
    ro.agents_dir = dir.path.string();
    ro.db_url = d.url();
    http::run_registry runs(service, ro, nullptr);
    REQUIRE(runs.open_database().ok());
    // With a database the registry's calls are awaitables (as the HTTP sessions call them).
    boost::asio::io_context node_io;
    auto r = pg_test::block_on(node_io, runs.async_start(R"({"agent": "a", "task": "t"})"));
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
    const std::string id = (*r)->id();
    CHECK((*r)->state() == "queued");
    CHECK(runs.n_active() == 0);  // nothing runs here: a worker will
    CHECK_FALSE(pg_test::block_on(node_io, runs.async_resume(id, {})).ok());

    // A worker claims it and writes an event; a reader waiting on the run is woken.
    boost::asio::io_context io;
    auto w = db::pg_connection::connect(d.url(), io.get_executor());
    REQUIRE(w.ok());
    auto claimed = pg_test::block_on(io, db::claim(**w, "w", std::chrono::milliseconds(60000), 1));
    REQUIRE(claimed.ok());
    REQUIRE(claimed->size() == 1);
    CHECK((*claimed)[0].id == id);
    auto found = pg_test::block_on(node_io, runs.async_find(id));
    REQUIRE(found != nullptr);
    std::vector<std::pair<int64_t, std::string>> out;
    bool done = true;
    std::atomic<int> woken{0};
    found->read_events(0, out, done, [&] { ++woken; });
    CHECK(out.empty());
    CHECK_FALSE(done);
    const std::string line = R"({"seq":0,"t_ms":0,"type":"turn_start","step":1})";
    REQUIRE(*db::append_event(**w, id, 1, 0, line));
    for (int i = 0; i < 2000 && woken == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(woken >= 1);
    // The wake may be the claim's (the state went to running): the event follows.
    for (int i = 0; i < 2000 && out.empty(); ++i) {
        found->read_events(0, out, done, {});
        if (out.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(out.size() == 1);
    CHECK(out[0].second == line);

    REQUIRE(*pg_test::block_on(io, db::finish(**w, id, 1, "succeeded", R"({"answer":{"x":1},"verified":true})")));
    for (int i = 0; i < 2000 && !found->finished(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(found->finished());
    CHECK(found->state() == "succeeded");
    CHECK(found->status_json().find(R"("result":{"answer":{"x":1},"verified":true})") != std::string::npos);

    // Another server on the same database answers for it too.
    http::run_registry other(service, ro, nullptr);
    REQUIRE(other.open_database().ok());
    auto there = pg_test::block_on(node_io, other.async_find(id));
    REQUIRE(there != nullptr);
    CHECK(there->finished());
    CHECK(there->status_json().find(R"("n_events":1)") != std::string::npos);
    CHECK(pg_test::block_on(node_io, other.async_find("no-such-run")) == nullptr);
}
