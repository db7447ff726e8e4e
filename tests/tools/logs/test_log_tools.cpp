#include "tools/logs/log_tools.h"

#include <doctest/doctest.h>

#include <atomic>

#include <simdjson.h>

#include "tests/tools/incident_fixture.h"
#include "tools/logs/builtin.h"

using namespace tachyon;
using namespace tachyon::tools;

namespace {

// The seven tools over the fixture incident.
struct tools_fixture {
    incident_fixture::temp_root root{"tools"};
    registry tools;
    tools_fixture() {
        incident_fixture::write_incident(root.path);
        REQUIRE(add_log_tools(tools, root.path.string()).ok());
    }
    result<std::string> invoke(std::string_view name, std::string_view args, const call_context& ctx = {}) {
        auto t = tools.find(name);
        REQUIRE(t != nullptr);
        return t->invoke(args, ctx);
    }
    std::string call(std::string_view name, std::string_view args) {
        auto r = invoke(name, args);
        if (!r) FAIL_CHECK(std::string(name) << " failed: " << r.err().describe());
        return r ? *r : std::string();
    }
    std::string fail(std::string_view name, std::string_view args) {
        auto r = invoke(name, args);
        if (r) FAIL_CHECK(std::string(name) << " succeeded: " << *r);
        if (r) return {};
        CHECK(r.err().code == errc::invalid_argument);
        return r.err().message;
    }
};

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace

TEST_CASE("add_log_tools registers seven tools in a stable order with short descriptions and valid schemas") {
    tools_fixture f;
    std::vector<std::string_view> names;
    for (const auto& t : f.tools.all()) names.push_back(t->name());
    CHECK(names == std::vector<std::string_view>{"list_services", "error_summary", "search_logs", "get_trace",
                                                 "recent_changes", "read_lines", "verify_root_cause"});
    simdjson::dom::parser parser;
    for (const auto& t : f.tools.all()) {
        CAPTURE(t->name());
        CHECK(t->description().size() <= 120);
        CHECK(t->flags().read_only);
        simdjson::dom::element schema;
        REQUIRE_FALSE(parser.parse(std::string(t->parameters_schema())).get(schema));
        CHECK(std::string_view(schema["type"].get_string().value()) == "object");
        CHECK(schema["additionalProperties"].get_bool().value() == false);
        CHECK(t->parameters_schema().find('\n') == std::string_view::npos);
    }
    // identifiers the model must copy are grounded
    CHECK(contains(f.tools.find("get_trace")->parameters_schema(), R"("trace_id":{"type":"string","x-grounded":true})"));
    CHECK(contains(f.tools.find("read_lines")->parameters_schema(), R"("id":{"type":"string","x-grounded":true})"));
    CHECK(contains(f.tools.find("verify_root_cause")->parameters_schema(),
                   R"("items":{"type":"string","x-grounded":true})"));
}

TEST_CASE("list_services shows services and trace edges") {
    tools_fixture f;
    CHECK(f.call("list_services", "{}") == R"(services (6):
api-gateway lines=5 spans=2
checkout lines=11 spans=1
inventory (no log file) spans=1
payments lines=5 spans=1
payments-db lines=6 spans=1
search lines=8 spans=1
edges caller -> callee (5):
api-gateway -> checkout (1 calls)
api-gateway -> search (1 calls)
checkout -> inventory (1 calls)
checkout -> payments (1 calls)
payments -> payments-db (1 calls)
)");
    CHECK(f.call("list_services", "") == f.call("list_services", "{}"));
}

TEST_CASE("error_summary orders failing services by first error, with a failing trace and callees") {
    tools_fixture f;
    CHECK(f.call("error_summary", "{}") == R"(window 2026-03-14T13:30:00.000Z .. 2026-03-14T14:21:30.000Z
payments-db: 4 errors, 1 warns, first error 2026-03-14T13:30:00.000Z (sustained from 2026-03-14T14:04:58.000Z), trace 4bf92f3577b34da6, calls -
  3x connection pool exhausted (<n> active, <n> waiting)
  1x checkpoint took too long (noise)
payments: 3 errors, 1 warns, first error 2026-03-14T14:05:10.100Z, trace 4bf92f3577b34da6, calls payments-db
  3x charge failed: could not get connection from pool (waited <n> ms)
checkout: 3 errors, 1 warns, first error 2026-03-14T14:05:10.300Z, trace 4bf92f3577b34da6, calls inventory,payments
  3x upstream timeout calling payments after <n> ms
api-gateway: 3 errors, 1 warns, first error 2026-03-14T14:05:10.350Z, trace 4bf92f3577b34da6, calls checkout,search
  2x "POST /api/checkout HTTP/<n>" 502
  1x "POST /api/checkout HTTP/<n>" 504
search: 3 errors, 0 warns, first error 2026-03-14T14:20:00.123Z, calls -
  3x search.indexer: reindex failed
no errors or warnings: inventory
)");
    CHECK(f.call("error_summary", R"({"service":"payments-db","since":"14:00","bucket_minutes":5})") ==
          R"(window 2026-03-14T14:00:00.000Z .. 2026-03-14T14:21:30.000Z
payments-db: 3 errors, 1 warns, first error 2026-03-14T14:04:58.000Z, trace 4bf92f3577b34da6, calls -
  3x connection pool exhausted (<n> active, <n> waiting)
  errors per 5m from 14:00: 1 2 0 0 0
)");
    CHECK(f.fail("error_summary", R"({"since":"yesterday"})") ==
          "error_summary: 'since' must be a UTC time like 2026-03-14T14:05:00Z or 14:05; got 'yesterday'");
    CHECK(f.fail("error_summary", R"({"bucket_minutes":0})") ==
          "error_summary: 'bucket_minutes' must be an integer from 1 to 60; got 0");
}

TEST_CASE("search_logs returns first lines of entries, earliest first, capped, each with its UTC time") {
    tools_fixture f;
    // syslog lines carry no year or milliseconds: the entry's time comes first
    CHECK(f.call("search_logs", R"({"level":"ERROR","limit":3})") ==
          R"(payments-db:1 2026-03-14T13:30:00.000Z Mar 14 13:30:00 db1 payments-db[55]: ERROR checkpoint took too long (noise)
payments-db:3 2026-03-14T14:04:58.000Z Mar 14 14:04:58 db1 payments-db[55]: ERROR connection pool exhausted (5 active, 12 waiting)
payments-db:4 2026-03-14T14:05:05.000Z Mar 14 14:05:05 db1 payments-db[55]: ERROR connection pool exhausted (5 active, 30 waiting)
... 13 more (16 matches; narrow with service/level/since/until)
)");
    // a match inside a stack trace returns the entry's first line, case-insensitively;
    // a line that shows its time in that form already is not given it twice
    CHECK(f.call("search_logs", R"({"pattern":"connection RESET"})") ==
          "checkout:3 2026-03-14T14:05:15.500Z checkout[812]: ERROR upstream timeout calling payments after 1200 ms "
          "trace=4bf92f3577b34da6\n");
    CHECK(f.call("search_logs", R"({"regex":"shard \\d+ unavailable"})") ==
          "search:1 2026-03-14T14:20:00.123Z 2026-03-14 14:20:00,123 ERROR search.indexer: reindex failed\n");
    CHECK(f.call("search_logs", R"({"service":"checkout","level":"warn","since":"14:05:20"})") ==
          R"(checkout:9 2026-03-14T14:05:35.000Z checkout[812]: ERROR upstream timeout calling payments after 1300 ms trace=aaaa000011112222
checkout:10 2026-03-14T14:05:55.000Z checkout[812]: ERROR upstream timeout calling payments after 1250 ms
checkout:11 2026-03-14T14:06:10.000Z checkout[812]: WARN retry budget low
)");
    CHECK(f.call("search_logs", R"({"pattern":"no such text anywhere"})") == "no matching log entries\n");
    // long lines are cut to ~200 characters
    std::string json_hit = f.call("search_logs", R"({"service":"payments","pattern":"4bf92f3577b34da6"})");
    CHECK(json_hit.starts_with("payments:2 {\"ts\""));
    CHECK(json_hit.size() <= std::string("payments:2 ").size() + 200 + 4);
}

TEST_CASE("search_logs explains bad arguments") {
    tools_fixture f;
    CHECK(f.fail("search_logs", R"({"level":"BAD"})") ==
          "search_logs: 'level' must be one of ERROR, WARN, INFO, DEBUG; got 'BAD'");
    CHECK(f.fail("search_logs", R"({"regex":"(unclosed"})") ==
          "search_logs: bad regex '(unclosed': Unmatched marking parenthesis ( or \\(");
    CHECK(f.fail("search_logs", R"({"limit":500})") == "search_logs: 'limit' must be an integer from 1 to 50; got 500");
    CHECK(f.fail("search_logs", R"({"limit":"5"})") ==
          "search_logs: 'limit' must be an integer from 1 to 50; got a string \"5\"");
    CHECK(f.fail("search_logs", R"({"bogus":1})") ==
          "search_logs: unknown argument 'bogus'; expected one of: pattern, regex, service, level, since, until, limit");
    CHECK(f.fail("search_logs", R"({"service":"nope"})") ==
          "search_logs: unknown service 'nope'; services: api-gateway, checkout, inventory, payments, payments-db, search");
    CHECK(f.fail("search_logs", R"({"service":"inventory"})") ==
          "search_logs: service 'inventory' has no log file (it appears only in traces; try get_trace)");
    CHECK(f.fail("search_logs", R"({"pattern":"a","regex":"b"})") == "search_logs: give 'pattern' or 'regex', not both");
    CHECK(f.fail("search_logs", R"({"pattern":7})") == "search_logs: 'pattern' must be a string; got an integer 7");
    CHECK(f.fail("search_logs", "[1]") == "search_logs: arguments must be a JSON object");
    CHECK(contains(f.fail("search_logs", R"({"pattern":)"), "search_logs: arguments are not valid JSON"));
    CHECK(f.fail("list_services", R"({"x":1})") == "list_services: unknown argument 'x'; this tool takes no arguments");
}

TEST_CASE("get_trace prints the span tree and marks the deepest failing span") {
    tools_fixture f;
    std::string expected = R"(trace 4bf92f3577b34da6: 5 spans, start 2026-03-14T14:05:09.000Z, 1350.0ms, 4 failed
api-gateway POST /api/checkout 1350.0ms error "502 from checkout"
  checkout POST /checkout 1200.0ms error "payments timeout"
    inventory reserve 12.5ms ok
    payments charge 1000.0ms error "could not get connection"
      payments-db acquire 950.0ms error "pool exhausted" <- deepest error
)";
    CHECK(f.call("get_trace", R"({"trace_id":"4bf92f3577b34da6"})") == expected);
    CHECK(f.call("get_trace", R"({"trace_id":"4bf92f35"})") == expected);  // log lines often cut ids
    CHECK(f.call("get_trace", R"({"trace_id":"5ccc000011112222"})") ==
          R"(trace 5ccc000011112222: 2 spans, start 2026-03-14T14:00:01.000Z, 10.0ms, 0 failed
api-gateway GET /api/search 10.0ms ok
  search query 8.0ms ok
)");
    CHECK(f.fail("get_trace", R"({"trace_id":"ffff0000ffff0000"})") ==
          "get_trace: no trace with id 'ffff0000ffff0000' (copy an id from error_summary or a log line)");
    CHECK(f.fail("get_trace", "{}") == "get_trace: 'trace_id' is required (a non-empty string)");
}

TEST_CASE("recent_changes lists change files and change-like log lines, newest last") {
    tools_fixture f;
    CHECK(f.call("recent_changes", "{}") == R"(changes:1 2026-03-14T13:58:00Z deploy payments v2.14.1 -> v2.15.0 by ci-bot
changes:2 2026-03-14T14:01:30Z config payments-db max_connections 100 -> 5 by alice
checkout:2 2026-03-14T14:02:00.000Z checkout[812]: INFO config reload: db.pool.max_size 50 -> 5
changes:3 2026-03-14T14:10:00Z scale search replicas 3 -> 2 by autoscaler
)");
    // "payments" as a whole word: not payments-db
    CHECK(f.call("recent_changes", R"({"service":"payments"})") ==
          "changes:1 2026-03-14T13:58:00Z deploy payments v2.14.1 -> v2.15.0 by ci-bot\n");
    CHECK(f.call("recent_changes", R"({"since":"14:05"})") ==
          "changes:3 2026-03-14T14:10:00Z scale search replicas 3 -> 2 by autoscaler\n");
}

TEST_CASE("read_lines shows the lines around an id") {
    tools_fixture f;
    CHECK(f.call("read_lines", R"({"id":"checkout:7","before":1,"after":2})") ==
          "  checkout:6 \tat com.shop.PaymentsClient.charge(PaymentsClient.java:88)\n"
          "> checkout:7 Caused by: java.io.IOException: connection reset\n"
          "  checkout:8 \tat com.shop.Net.read(Net.java:12)\n"
          "  checkout:9 2026-03-14T14:05:35.000Z checkout[812]: ERROR upstream timeout calling payments after 1300 ms "
          "trace=aaaa000011112222\n");
    CHECK(f.call("read_lines", R"({"id":"payments-db:1","before":3,"after":0})") ==
          "> payments-db:1 Mar 14 13:30:00 db1 payments-db[55]: ERROR checkpoint took too long (noise)\n");
    CHECK(f.call("read_lines", R"({"id":"changes:2","before":0,"after":0})") ==
          "> changes:2 2026-03-14T14:01:30Z config payments-db max_connections 100 -> 5 by alice\n");
    CHECK(f.fail("read_lines", R"({"id":"checkout:99"})") == "read_lines: checkout has 11 lines; got line 99");
    CHECK(f.fail("read_lines", R"({"id":"checkout"})") ==
          "read_lines: 'id' must be a line id like checkout:120; got 'checkout'");
    CHECK(f.fail("read_lines", R"({"id":"checkout:1","after":51})") ==
          "read_lines: 'after' must be an integer from 0 to 50; got 51");
}

TEST_CASE("verify_root_cause accepts the root cause") {
    tools_fixture f;
    CHECK(f.call("verify_root_cause",
                 R"({"service":"payments-db","fault_type":"connection_pool_exhaustion","first_bad_timestamp":"2026-03-14T14:04:58Z","evidence":["payments-db:3","payments-db:6"]})") ==
          "verified: payments-db started failing at 2026-03-14T14:04:58.000Z; 2 evidence lines are its "
          "errors/warnings in the incident window; it calls no other service\n");
}

TEST_CASE("verify_root_cause rejects with every reason") {
    tools_fixture f;
    // a caller of the failing service: its dependency failed first
    CHECK(f.call("verify_root_cause", R"({"service":"payments","evidence":["payments:2"]})") ==
          "rejected: payments depends on payments-db, which started failing earlier (2026-03-14T14:04:58.000Z < "
          "2026-03-14T14:05:10.100Z)\n");
    CHECK(f.call("verify_root_cause", R"({"service":"checkout","evidence":["checkout:3"]})") ==
          "rejected: checkout depends on payments, which started failing earlier (2026-03-14T14:05:10.100Z < "
          "2026-03-14T14:05:10.300Z); checkout depends on payments-db, which started failing earlier "
          "(2026-03-14T14:04:58.000Z < 2026-03-14T14:05:10.300Z)\n");
    // each evidence check, the time check and the label check
    CHECK(f.call("verify_root_cause",
                 R"({"service":"payments-db","evidence":["payments-db:1","payments-db:2","checkout:3","payments-db:99","nope"],"first_bad_timestamp":"14:30","fault_type":"Bad Type"})") ==
          "rejected: 'payments-db:1' at 2026-03-14T13:30:00.000Z is before the incident window (from "
          "2026-03-14T13:59:58.000Z); 'payments-db:2' is an INFO line, not an error or warning; 'checkout:3' belongs "
          "to checkout, not payments-db; 'payments-db:99' does not exist (payments-db has 6 lines); 'nope' is not a "
          "line id (expected service:line); first_bad_timestamp 2026-03-14T14:30:00.000Z is after payments-db started "
          "failing at 2026-03-14T14:04:58.000Z; fault_type 'Bad Type' must be a snake_case label such as "
          "connection_pool_exhaustion\n");
    CHECK(f.call("verify_root_cause", R"({"service":"payments-db","evidence":["payments-db:3"],"first_bad_timestamp":"13:00"})") ==
          "rejected: first_bad_timestamp 2026-03-14T13:00:00.000Z is before the incident window (from "
          "2026-03-14T13:59:58.000Z)\n");
    CHECK(f.call("verify_root_cause", R"({"service":"payments-db","evidence":["nosuch:3"]})") ==
          "rejected: 'nosuch:3' does not exist\n");
    CHECK(f.call("verify_root_cause", R"({"service":"inventory","evidence":[]})") ==
          "rejected: inventory shows no error in logs or traces; no evidence: cite error or warning line ids of "
          "inventory\n");
    CHECK(f.call("verify_root_cause", R"({"service":"ghost","evidence":["ghost:1"]})") ==
          "rejected: unknown service 'ghost'; services: api-gateway, checkout, inventory, payments, payments-db, "
          "search\n");
    CHECK(f.fail("verify_root_cause", R"({"service":"payments-db","evidence":"payments-db:3"})") ==
          "verify_root_cause: 'evidence' must be an array of strings; got a string \"payments-db:3\"");
    CHECK(f.fail("verify_root_cause", R"({"evidence":["payments-db:3"]})") ==
          "verify_root_cause: 'service' is required (a non-empty string)");
}

TEST_CASE("no tool reads answer.json") {
    tools_fixture f;
    // every value in the fixture's answer.json contains "POISON"
    const char* calls[][2] = {
        {"list_services", "{}"},
        {"error_summary", "{}"},
        {"search_logs", R"({"pattern":"POISON","limit":50})"},
        {"search_logs", R"({"regex":"root_cause","limit":50})"},
        {"search_logs", R"({"limit":50})"},
        {"recent_changes", "{}"},
        {"verify_root_cause", R"({"service":"payments-db","evidence":["payments-db:3"]})"},
    };
    for (auto& c : calls) {
        auto r = f.invoke(c[0], c[1]);
        REQUIRE(r.ok());
        CHECK_MESSAGE(!contains(*r, "POISON"), c[0] << " " << c[1] << " leaked: " << *r);
        CHECK_MESSAGE(!contains(*r, "answer"), c[0] << " " << c[1] << " leaked: " << *r);
    }
    CHECK(f.call("search_logs", R"({"pattern":"POISON"})") == "no matching log entries\n");
    CHECK(contains(f.fail("read_lines", R"({"id":"answer:1"})"), "unknown service 'answer'"));
    CHECK(contains(f.call("verify_root_cause", R"({"service":"POISON-service","evidence":["POISON:1"]})"),
                   "rejected: unknown service 'POISON-service'"));
}

TEST_CASE("a cancelled call returns a cancelled error") {
    tools_fixture f;
    std::atomic<bool> cancel{true};
    call_context ctx{&cancel};
    // before the first load
    auto r = f.invoke("search_logs", R"({"pattern":"pool"})", ctx);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::cancelled);
    // after the load, inside the scan
    REQUIRE(f.invoke("list_services", "{}").ok());
    for (auto name : {"search_logs", "error_summary", "recent_changes"}) {
        auto c = f.invoke(name, "{}", ctx);
        REQUIRE_FALSE(c.ok());
        CHECK(c.err().code == errc::cancelled);
    }
}
