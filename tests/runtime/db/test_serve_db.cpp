// serve --db as the HTTP API sees it (run_registry on a database): a person's
// decisions, cancellation and the list of runs, each asked of a serve node
// other than the one that queued the run, and carried out by a worker.
#include <doctest/doctest.h>

#include <future>
#include <thread>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "runtime/db/db_journal.h"
#include "runtime/db/run_store.h"
#include "runtime/serve/http_runs.h"
#include "runtime/serve/http_server.h"
#include "tests/runtime/db/pg_test_db.h"
#include "tests/runtime/db/worker_fixture.h"

using namespace tachyon;
using namespace worker_fixture;
namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

// A serve node's runs on database `url` (it runs nothing itself), asked
// as the HTTP sessions ask them: each call awaited on the node's own loop.
struct serve_node {
    agent_service unused{service_options{}};
    http::run_registry runs;
    asio::io_context io;
    serve_node(const std::string& url, const agents_folder& agents) : runs(unused, options(url, agents), nullptr) {
        auto st = runs.open_database();
        REQUIRE_MESSAGE(st.ok(), st.err().message);
    }
    std::shared_ptr<http::run_record> find(const std::string& id) { return pg_test::block_on(io, runs.async_find(id)); }
    result<std::shared_ptr<http::run_record>> resume(const std::string& id, std::vector<call_decision> decisions) {
        return pg_test::block_on(io, runs.async_resume(id, std::move(decisions)));
    }
    result<std::string> list_json(const std::string& query) { return pg_test::block_on(io, runs.async_list_json(query)); }
    void cancel(std::shared_ptr<http::run_record> run) { pg_test::block_on(io, cancel_awaitable(std::move(run))); }
    asio::awaitable<bool> cancel_awaitable(std::shared_ptr<http::run_record> run) {
        co_await runs.async_cancel(std::move(run));
        co_return true;
    }
    static http::run_registry_options options(const std::string& url, const agents_folder& agents) {
        http::run_registry_options o;
        o.agents_dir = agents.dir.path.string();
        o.data_roots = {agents.incident.path.string()};
        o.db_url = url;
        return o;
    }
    std::string start(const agents_folder& agents) {
        const std::string body = "{\"agent\": \"test-agent\", \"task\": \"" + std::string(k_task) + "\", \"inputs\": {\"incident_dir\": \"" +
                                 agents.incident.path.string() + "\"}}";
        auto r = pg_test::block_on(io, runs.async_start(body));
        REQUIRE_MESSAGE(r.ok(), r.err().message);
        return (*r)->id();
    }
};

// One worker run until nothing is left, its model playing `turns`.
db::worker_stats work(const std::string& url, const agents_folder& agents, const std::vector<std::string>& turns) {
    auto service = scripted_service(agents.model_path, turns);
    db::worker w(*service, worker_opts(url, agents.dir.path.string()));
    auto st = w.run();
    REQUIRE_MESSAGE(st.ok(), st.err().message);
    return w.stats();
}

db::run_row row_of(pg_test::fixture& f, const std::string& id) {
    auto row = f.run(db::get_run(*f.conn, id));
    REQUIRE_MESSAGE(row.ok(), row.err().message);
    REQUIRE(row->has_value());
    return **row;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// One HTTP request on a connection of its own: the status and body (0 when
// no answer came within 30 s).
std::pair<int, std::string> http_request(uint16_t port, boost::beast::http::verb method, const std::string& target) {
    namespace beast = boost::beast;
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(30));
    beast::error_code ec;
    stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (ec) return {0, ec.message()};
    beast::http::request<beast::http::string_body> req{method, target, 11};
    req.set(beast::http::field::host, "127.0.0.1");
    req.prepare_payload();
    beast::http::write(stream, req, ec);
    if (ec) return {0, ec.message()};
    beast::flat_buffer buffer;
    beast::http::response<beast::http::string_body> res;
    beast::http::read(stream, buffer, res, ec);
    if (ec) return {0, ec.message()};
    return {res.result_int(), res.body()};
}

}  // namespace

TEST_CASE("serve --db: a run awaiting approval is approved or rejected on another serve node and a worker resumes it to its answer") {
    for (const std::string action : {"approve", "reject"}) {
        CAPTURE(action);
        pg_test::fixture f("serve_approval");
        if (f.skipped()) return;
        agents_folder agents(R"(, "requires_approval": true)");
        serve_node queuing(f.url(), agents);
        serve_node deciding(f.url(), agents);
        const std::string id = queuing.start(agents);

        work(f.url(), agents, k_turns);
        CHECK(row_of(f, id).state == "awaiting_approval");
        auto parked = deciding.find(id);
        REQUIRE(parked);
        CHECK(has(parked->status_json(), R"("state":"awaiting_approval")"));
        CHECK(has(parked->status_json(), R"("call_id":"call_1_0")"));

        // A decision that does not fit the call is refused, and nothing changes.
        auto wrong = deciding.resume(id, {{"call_1_0", "retry", ""}});
        REQUIRE_FALSE(wrong.ok());
        CHECK(wrong.err().code == errc::invalid_argument);
        auto unknown = deciding.resume(id, {{"call_9_9", action, ""}});
        REQUIRE_FALSE(unknown.ok());
        CHECK(has(unknown.err().message, "is not waiting for a decision on it"));
        CHECK(row_of(f, id).state == "awaiting_approval");

        auto decided = deciding.resume(id, {{"call_1_0", action, "not now"}});
        REQUIRE_MESSAGE(decided.ok(), decided.err().message);
        CHECK((*decided)->state() == "queued");
        // Decided once: the other node's second word on it waits for the run to stop.
        auto twice = queuing.resume(id, {{"call_1_0", action, ""}});
        REQUIRE_FALSE(twice.ok());
        CHECK(twice.err().code == errc::unsupported);

        // The recorded first turn is not generated again: the model plays the rest.
        auto stats = work(f.url(), agents, {k_turns.begin() + 1, k_turns.end()});
        CHECK(stats.resumed == 1);
        const db::run_row done = row_of(f, id);
        CHECK(done.state == "succeeded");
        CHECK(has(done.result_json, R"("verified":true)"));
        auto lines = db::read_events(*f.conn, id);
        REQUIRE(lines.ok());
        CHECK(count_type(*lines, "call_pending") == 1);
        CHECK(count_type(*lines, "decision") == 1);
        CHECK(count_type(*lines, "run_resume") == 1);
        CHECK(count_type(*lines, "model_turn") == 4);
        auto log = db::journal_of_lines(id, *lines);
        REQUIRE(log.ok());
        bool ran = false, told = false;
        for (const auto& e : log->events) {
            if (const auto* t = std::get_if<journal::tool_call_event>(&e.body)) ran = ran || (t->name == "error_summary" && t->ok);
            if (const auto* f = std::get_if<journal::feedback_event>(&e.body)) told = told || has(f->text, "rejected by a person: not now");
        }
        CHECK(ran == (action == "approve"));
        CHECK(told == (action == "reject"));
    }
}

TEST_CASE("serve --db: a call with side effects that may have run is skipped on a serve node and the worker goes on without running it") {
    pg_test::fixture f("serve_decide");
    if (f.skipped()) return;
    agents_folder agents({}, R"(,
    {"name": "shell", "settings": {"allowed_programs": "echo", "sandbox": "none"}})");
    const std::string args = R"({"program": "echo", "args": ["deployed"]})";

    // A worker died right after the intent of a shell call (not read-only)
    // reached the journal.
    REQUIRE(f.run(db::enqueue(*f.conn, "run-1", "test-agent", k_task, agents.inputs())).ok());
    auto dead = f.run(db::claim(*f.conn, "dead-worker", milliseconds(0), 1));
    REQUIRE(dead.ok());
    REQUIRE(dead->size() == 1);
    journal::run_start_event start;
    start.run_id = "run-1";
    start.agent = "test-agent";
    start.agent_file = agents.file;
    start.model = agents.model_path;
    start.inputs = agents.inputs();
    start.task = k_task;
    start.started_at = "2026-12-01T00:00:00.000Z";
    journal::tool_start_event intent;
    intent.step = 1;
    intent.call_id = "call_1_0";
    intent.name = "shell";
    intent.arguments_json = args;
    intent.read_only = false;
    intent.idempotency_key = "run-1:1:0";
    const std::vector<journal::event> written = {{0, 0.0, start}, {1, 1.0, intent}};
    for (const auto& e : written) {
        std::string line = journal::to_json_line(e, 16 * 1024);
        line.pop_back();
        auto w = db::append_event(*f.conn, "run-1", (*dead)[0].epoch, e.seq, line);
        REQUIRE_MESSAGE(w.ok(), w.err().message);
        REQUIRE(*w);
    }

    // The worker that takes it over parks it: the call may have run.
    work(f.url(), agents, {call("shell", args)});
    CHECK(row_of(f, "run-1").state == "needs_attention");

    serve_node node(f.url(), agents);
    auto skipped = node.resume("run-1", {{"call_1_0", "skip", ""}});
    REQUIRE_MESSAGE(skipped.ok(), skipped.err().message);
    CHECK((*skipped)->state() == "queued");
    work(f.url(), agents, {k_answer_ok});

    CHECK(row_of(f, "run-1").state == "succeeded");
    auto lines = db::read_events(*f.conn, "run-1");
    REQUIRE(lines.ok());
    int shell_starts = 0;
    for (const auto& line : *lines)
        shell_starts += has(line.second, R"("type":"tool_start")") && has(line.second, R"("name":"shell")") ? 1 : 0;
    CHECK(shell_starts == 1);  // the dead worker's, never again
    CHECK(count_type(*lines, "decision") == 1);
    bool told = false;
    for (const auto& line : *lines) told = told || has(line.second, "skipped by a person");
    CHECK(told);

    // An ended run is not resumed.
    auto ended = node.resume("run-1", {});
    REQUIRE_FALSE(ended.ok());
    CHECK(ended.err().code == errc::invalid_argument);
    auto missing = node.resume("no-such-run", {});
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().code == errc::not_found);
}

TEST_CASE("serve --db: cancel on another serve node ends a queued run at once and a running one through its worker, journaled") {
    pg_test::fixture f("serve_cancel");
    if (f.skipped()) return;
    agents_folder agents;
    serve_node queuing(f.url(), agents);
    serve_node cancelling(f.url(), agents);

    // Queued, no worker yet: nothing to journal, it ends here.
    const std::string queued = queuing.start(agents);
    auto q = cancelling.find(queued);
    REQUIRE(q);
    cancelling.cancel(q);
    const db::run_row q_row = row_of(f, queued);
    CHECK(q_row.state == "cancelled");
    CHECK(has(q_row.result_json, "cancelled before a worker started it"));
    CHECK(work(f.url(), agents, k_turns).claimed == 0);

    // Running on a worker: the worker hears of it and the run ends cancelled.
    const std::string running = queuing.start(agents);
    auto service = scripted_service(agents.model_path, k_turns, std::chrono::microseconds(5000));
    db::worker w(*service, worker_opts(f.url(), agents.dir.path.string()));
    status st;
    std::thread t([&] { st = w.run(); });
    for (int i = 0; i < 2000; ++i) {
        auto n = f.conn->exec("SELECT count(*) AS n FROM tachyon.events WHERE run_id = $1", {running});
        if (n.ok() && n->get(0, "n") != "0") break;
        std::this_thread::sleep_for(milliseconds(5));
    }
    auto r = cancelling.find(running);
    REQUIRE(r);
    cancelling.cancel(r);
    t.join();
    REQUIRE_MESSAGE(st.ok(), st.err().message);
    CHECK(w.stats().finished == 1);
    CHECK(row_of(f, running).state == "cancelled");
    auto lines = db::read_events(*f.conn, running);
    REQUIRE(lines.ok());
    REQUIRE(count_type(*lines, "run_end") == 1);
    CHECK(has(lines->back().second, R"("state":"cancelled")"));
    CHECK_FALSE(has(row_of(f, running).result_json, R"("verified":true)"));
}

TEST_CASE("serve --db: GET /v1/runs lists the database's runs on any serve node, newest first, by pages and by state") {
    pg_test::fixture f("serve_list");
    if (f.skipped()) return;
    agents_folder agents;
    serve_node queuing(f.url(), agents);
    serve_node other(f.url(), agents);
    const std::string first = queuing.start(agents);
    const std::string second = queuing.start(agents);
    const std::string third = queuing.start(agents);
    // The oldest ends.
    auto claimed = f.run(db::claim(*f.conn, "w", milliseconds(60000), 1));
    REQUIRE(claimed.ok());
    REQUIRE(claimed->size() == 1);
    REQUIRE((*claimed)[0].id == first);
    REQUIRE(*f.run(db::finish(*f.conn, first, (*claimed)[0].epoch, "succeeded", "{\"answer\":null}")));

    auto page = other.list_json("limit=2");
    REQUIRE_MESSAGE(page.ok(), page.err().message);
    CHECK(page->find(third) < page->find(second));
    CHECK_FALSE(has(*page, "\"id\":\"" + first + "\""));
    CHECK(has(*page, "\"last_id\":\"" + second + "\""));
    CHECK(has(*page, R"("has_more":true)"));
    auto next = other.list_json("limit=2&after=" + second);
    REQUIRE(next.ok());
    CHECK(has(*next, "\"id\":\"" + first + "\""));
    CHECK(has(*next, R"("state":"succeeded")"));
    CHECK(has(*next, R"("has_more":false)"));
    auto ended = other.list_json("state=succeeded");
    REQUIRE(ended.ok());
    CHECK(has(*ended, "\"first_id\":\"" + first + "\""));
    CHECK(has(*ended, "\"last_id\":\"" + first + "\""));
    auto waiting = queuing.list_json("state=queued");
    REQUIRE(waiting.ok());
    CHECK(has(*waiting, "\"first_id\":\"" + third + "\""));
    CHECK(has(*waiting, "\"last_id\":\"" + second + "\""));

    for (const std::string bad : {"limit=0", "limit=x", "state=done", "after=../x", "sort=asc"}) {
        CAPTURE(bad);
        auto refused = other.list_json(bad);
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.err().code == errc::invalid_argument);
        CHECK(has(refused.err().message, bad.substr(0, bad.find('='))));
    }
}

TEST_CASE("runs list without a database: the runs in memory, newest first, by pages and by state, as with --db") {
    agents_folder agents;
    incident_fixture::temp_root journals{"serve_list_journals"};
    auto service = scripted_service(agents.model_path, {k_answer_ok, k_answer_ok, k_answer_ok});
    http::run_registry_options o;
    o.agents_dir = agents.dir.path.string();
    o.data_roots = {agents.incident.path.string()};
    o.journal_dir = journals.path.string();
    http::run_registry runs(*service, o, nullptr);
    const std::string body = "{\"agent\": \"test-agent\", \"task\": \"" + std::string(k_task) + "\", \"inputs\": {\"incident_dir\": \"" +
                             agents.incident.path.string() + "\"}}";
    for (int i = 0; i < 3; ++i) {
        auto r = runs.start(body);
        REQUIRE_MESSAGE(r.ok(), r.err().message);
        REQUIRE(runs.wait_idle(std::chrono::seconds(60)));
    }
    auto all = runs.list_json("");
    REQUIRE(all.ok());
    std::vector<std::string> ids;
    for (size_t at = all->find("{\"id\":\""); at != std::string::npos; at = all->find("{\"id\":\"", at + 1))
        ids.push_back(all->substr(at + 7, all->find('"', at + 7) - at - 7));
    REQUIRE(ids.size() == 3);
    auto page = runs.list_json("limit=2");
    REQUIRE(page.ok());
    CHECK(has(*page, "\"first_id\":\"" + ids[0] + "\""));
    CHECK(has(*page, "\"last_id\":\"" + ids[1] + "\""));
    CHECK(has(*page, R"("has_more":true)"));
    auto next = runs.list_json("limit=2&after=" + ids[1]);
    REQUIRE(next.ok());
    CHECK(has(*next, "\"first_id\":\"" + ids[2] + "\""));
    CHECK(has(*next, R"("has_more":false)"));
    CHECK(has(*runs.list_json("state=succeeded"), "\"last_id\":\"" + ids[2] + "\""));
    CHECK(has(*runs.list_json("state=failed"), R"("data":[])"));
    CHECK_FALSE(runs.list_json("limit=1001").ok());
}

TEST_CASE("serve --db: a worker that dies after journaling run_resume and before the decisions leaves them to the next, and nobody decides twice") {
    pg_test::fixture f("serve_decisions_kept");
    if (f.skipped()) return;
    agents_folder agents(R"(, "requires_approval": true)");
    serve_node node(f.url(), agents);
    const std::string id = node.start(agents);
    work(f.url(), agents, k_turns);
    REQUIRE(row_of(f, id).state == "awaiting_approval");
    auto approved = node.resume(id, {{"call_1_0", "approve", ""}});
    REQUIRE_MESSAGE(approved.ok(), approved.err().message);

    // A worker claims it, journals run_resume and dies before the decision.
    auto dead = f.run(db::claim(*f.conn, "dead-worker", milliseconds(0), 1));
    REQUIRE(dead.ok());
    REQUIRE(dead->size() == 1);
    REQUIRE((*dead)[0].resume_requested);
    const int64_t seq = (*dead)[0].n_events;
    std::string line = journal::to_json_line({seq, 1.0, journal::run_resume_event{"2026-12-02T03:00:01.000Z", seq, ""}}, 16 * 1024);
    line.pop_back();
    auto w = db::append_event(*f.conn, id, (*dead)[0].epoch, seq, line);
    REQUIRE_MESSAGE(w.ok(), w.err().message);
    REQUIRE(*w);

    // The next worker journals the decision and goes on: the call runs, the run ends.
    auto stats = work(f.url(), agents, {k_turns.begin() + 1, k_turns.end()});
    CHECK(stats.resumed == 1);
    const db::run_row done = row_of(f, id);
    CHECK(done.state == "succeeded");
    CHECK(has(done.result_json, R"("verified":true)"));
    auto lines = db::read_events(*f.conn, id);
    REQUIRE(lines.ok());
    CHECK(count_type(*lines, "run_resume") == 2);
    CHECK(count_type(*lines, "decision") == 1);
    CHECK(count_type(*lines, "call_pending") == 1);
    auto log = db::journal_of_lines(id, *lines);
    REQUIRE(log.ok());
    bool ran = false;
    for (const auto& e : log->events)
        if (const auto* t = std::get_if<journal::tool_call_event>(&e.body)) ran = ran || (t->name == "error_summary" && t->ok);
    CHECK(ran);
}

TEST_CASE("serve --db: a request waiting on the database does not hold up the others: the server answers them meanwhile") {
    pg_test::fixture f("serve_concurrent");
    if (f.skipped()) return;
    agents_folder agents;
    agent_service unused{service_options{}};
    http::run_registry runs(unused, serve_node::options(f.url(), agents), nullptr);
    REQUIRE(runs.open_database().ok());
    http::metrics stats;
    http::server_options so;
    so.port = 0;
    so.n_threads = 1;  // one I/O thread: a request that blocked it would hold up every other
    http::server server(so, {}, stats, &runs);
    REQUIRE(server.start().ok());
    for (const std::string id : {"run-a", "run-b"}) REQUIRE(f.run(db::enqueue(*f.conn, id, "test-agent", k_task, agents.inputs())).ok());

    // Another transaction holds run-a's row: cancelling it waits for the lock.
    auto locker = db::pg_connection::connect(f.url());
    REQUIRE(locker.ok());
    REQUIRE((*locker)->exec_script("BEGIN").ok());
    REQUIRE((*locker)->exec("SELECT id FROM tachyon.runs WHERE id = 'run-a' FOR UPDATE").ok());
    const uint16_t port = server.port();
    auto slow = std::async(std::launch::async, [port] { return http_request(port, boost::beast::http::verb::post, "/v1/runs/run-a/cancel"); });
    bool waiting = false;
    for (int i = 0; i < 2000 && !waiting; ++i) {
        auto n = f.conn->exec("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        REQUIRE(n.ok());
        waiting = n->get(0, "n") != "0";
        if (!waiting) std::this_thread::sleep_for(milliseconds(5));
    }
    REQUIRE(waiting);

    // Meanwhile: another run read, cancelled and listed.
    auto got = http_request(port, boost::beast::http::verb::get, "/v1/runs/run-b");
    CHECK(got.first == 200);
    CHECK(has(got.second, R"("state":"queued")"));
    auto cancelled = http_request(port, boost::beast::http::verb::post, "/v1/runs/run-b/cancel");
    CHECK(cancelled.first == 202);
    CHECK(has(cancelled.second, R"("state":"cancelled")"));
    auto listed = http_request(port, boost::beast::http::verb::get, "/v1/runs?state=queued");
    CHECK(listed.first == 200);
    CHECK(has(listed.second, R"("first_id":"run-a")"));
    CHECK(slow.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);

    REQUIRE((*locker)->exec_script("COMMIT").ok());
    auto a = slow.get();
    CHECK(a.first == 202);
    CHECK(has(a.second, R"("state":"cancelled")"));
    CHECK(row_of(f, "run-a").state == "cancelled");
    server.shutdown();
}
