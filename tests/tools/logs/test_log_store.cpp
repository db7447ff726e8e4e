#include "tools/logs/log_store.h"

#include <doctest/doctest.h>

#include <atomic>
#include <fstream>

#include "tests/tools/incident_fixture.h"

using namespace tachyon;
using namespace tachyon::tools;

namespace {
std::int64_t iso(std::string_view s) {
    auto t = parse_iso_time(s);
    REQUIRE(t.has_value());
    return *t;
}
}  // namespace

TEST_CASE("ISO timestamps: zones, fractions and formatting") {
    CHECK(format_time(iso("2026-03-14T14:05:12.345Z")) == "2026-03-14T14:05:12.345Z");
    CHECK(iso("2026-03-14T14:05:12Z") == iso("2026-03-14 14:05:12"));  // no zone is UTC
    CHECK(iso("2026-03-14T16:05:12+02:00") == iso("2026-03-14T14:05:12Z"));
    CHECK(iso("2026-03-14T09:05:12-0500") == iso("2026-03-14T14:05:12Z"));
    CHECK(format_time(iso("2026-03-14 14:05:12,123456")) == "2026-03-14T14:05:12.123Z");
    CHECK(format_time(iso("2024-02-29T23:59:59.999Z")) == "2024-02-29T23:59:59.999Z");
    CHECK(iso("1970-01-01T00:00:00Z") == 0);
    CHECK_FALSE(parse_iso_time("2026-13-14T14:05:12Z").has_value());
    CHECK_FALSE(parse_iso_time("14:05:12").has_value());
    // tool arguments also take a clock time on the day of the logs
    CHECK(parse_time_argument("14:05", iso("2026-03-14T01:00:00Z")) == iso("2026-03-14T14:05:00Z"));
    CHECK(parse_time_argument("14:05:30", iso("2026-03-14T01:00:00Z")) == iso("2026-03-14T14:05:30Z"));
    CHECK_FALSE(parse_time_argument("25:00", iso("2026-03-14T01:00:00Z")).has_value());
    CHECK_FALSE(parse_time_argument("2026-03-14T14:05:00Z trailing", 0).has_value());
}

TEST_CASE("parse_line reads each log format") {
    simdjson::ondemand::parser parser;
    auto parse = [&](std::string_view line) { return parse_line(line, line.size(), parser); };

    std::string_view json =
        R"({"ts":"2026-03-14T14:05:12.345Z","level":"error","service":"checkout","msg":"upstream timeout","trace_id":"4bf92f3577b34da6"})";
    auto p = parse(json);
    CHECK(p.json);
    CHECK(p.starts_entry);
    CHECK(p.level == log_level::error);
    CHECK(p.ts_ms == iso("2026-03-14T14:05:12.345Z"));
    CHECK(json.substr(p.msg_begin, p.msg_len) == "upstream timeout");
    CHECK(json.substr(p.trace_begin, p.trace_len) == "4bf92f3577b34da6");

    std::string_view plain = "2026-03-14T14:05:12.345Z checkout[812]: WARNING pool low trace=4bf92f35";
    p = parse(plain);
    CHECK(p.level == log_level::warn);
    CHECK(plain.substr(p.msg_begin, p.msg_len) == "pool low trace=4bf92f35");
    CHECK(plain.substr(p.trace_begin, p.trace_len) == "4bf92f35");

    std::string_view syslog = "Mar  4 14:05:12 host payments[9]: CRITICAL disk full";
    p = parse(syslog);
    CHECK(p.yearless);
    CHECK(p.level == log_level::error);
    CHECK(syslog_time_in_year(syslog, 2026) == iso("2026-03-04T14:05:12Z"));

    auto nginx = [&](std::string_view status) {
        std::string line = "10.0.3.7 - - [14/Mar/2026:15:05:12 +0100] \"POST /api/checkout HTTP/1.1\" " +
                           std::string(status) + " 157 \"-\" \"Mozilla/5.0\" rt=0.012";
        return parse_line(line, line.size(), parser);
    };
    CHECK(nginx("502").level == log_level::error);
    CHECK(nginx("429").level == log_level::warn);
    CHECK(nginx("200").level == log_level::info);
    CHECK(nginx("200").ts_ms == iso("2026-03-14T14:05:12Z"));

    CHECK(parse("level=warn msg=\"slow\"").level == log_level::warn);
    CHECK(parse("an INFORMATIONAL line").level == log_level::none);  // a level word must stand alone
    // a broken JSON line is still a line
    CHECK_FALSE(parse("{\"ts\": ").json);
}

TEST_CASE("continuation lines: stack frames and unstamped lines after a stamped entry") {
    simdjson::ondemand::parser parser;
    auto cont = [&](std::string_view line, bool previous_has_time) {
        return is_continuation(line, parse_line(line, line.size(), parser), previous_has_time);
    };
    CHECK(cont("\tat com.shop.Net.read(Net.java:12)", false));
    CHECK(cont("Caused by: java.io.IOException: reset", false));
    CHECK(cont("Traceback (most recent call last):", false));
    CHECK(cont("ValueError: shard 3 unavailable", true));
    CHECK_FALSE(cont("ValueError: shard 3 unavailable", false));  // a log without stamps: every line is an entry
    CHECK_FALSE(cont("2026-03-14T14:05:12Z next entry", true));
}

TEST_CASE("mask_message groups lines that differ only in numbers and ids") {
    CHECK(mask_message("pool exhausted (5 active, 41 waiting)", 100) == "pool exhausted (<n> active, <n> waiting)");
    CHECK(mask_message("trace 4bf92f3577b34da6 took 1.5s on pod-7f9c", 100) == "trace <id> took <n>s on pod-<n>f<n>c");
    CHECK(mask_message("\"GET /x HTTP/1.1\" 503 0", 100) == "\"GET /x HTTP/<n>\" 503 <n>");
}

TEST_CASE("log_store indexes the incident directory") {
    incident_fixture::temp_root root("store");
    incident_fixture::write_incident(root.path);
    log_store store(root.path);
    REQUIRE(store.ensure_loaded({}).ok());

    std::vector<std::string> names;
    for (const auto& s : store.services()) names.push_back(s.name);
    CHECK(names == std::vector<std::string>{"api-gateway", "checkout", "inventory", "payments", "payments-db", "search"});
    CHECK(store.services()[std::size_t(store.find_service("inventory"))].log_file == -1);  // traces only
    for (const auto& f : store.files()) CHECK(f->path.filename() != "answer.json");

    const log_file* checkout = store.find_file("checkout");
    REQUIRE(checkout != nullptr);
    CHECK(checkout->n_lines == 11);
    REQUIRE(checkout->entries.size() == 6);  // the Java stack trace (lines 3-8) is one entry
    CHECK(checkout->entries[2].line == 3);
    CHECK(checkout->entries[3].line == 9);
    CHECK(checkout->entry_of_line(7) == 2);
    CHECK(checkout->line_text(7) == "Caused by: java.io.IOException: connection reset");
    CHECK(checkout->trace_id(checkout->entries[2]) == "4bf92f3577b34da6");
    CHECK(checkout->entry_text(2).ends_with("at com.shop.Net.read(Net.java:12)"));

    const log_file* search = store.find_file("search");
    REQUIRE(search != nullptr);
    CHECK(search->entries.size() == 4);  // the Python traceback, "ValueError" line included, is one entry
    const log_file* db = store.find_file("payments-db");
    REQUIRE(db != nullptr);
    CHECK(format_time(db->entries[2].ts_ms) == "2026-03-14T14:04:58.000Z");  // syslog year from the other files
    CHECK(store.find_file("changes") != nullptr);

    CHECK(store.trace("4bf92f3577b34da6").size() == 5);
    CHECK(store.trace("4bf92f35").size() == 5);  // a unique prefix
    CHECK(store.trace("4bf9").empty());          // too short to guess
    CHECK(store.edges().size() == 5);
    auto payments = std::uint32_t(store.find_service("payments"));
    auto deps = store.callees_transitive(std::uint32_t(store.find_service("checkout")));
    CHECK(deps == std::vector<std::uint32_t>{std::uint32_t(store.find_service("inventory")), payments,
                                             std::uint32_t(store.find_service("payments-db"))});

    auto health = store.health(no_time, no_time, {});
    REQUIRE(health.ok());
    const auto& h = (*health)[std::size_t(store.find_service("payments-db"))];
    CHECK(h.n_error == 4);
    CHECK(h.n_warn == 1);
    CHECK(format_time(h.first_error_ms) == "2026-03-14T13:30:00.000Z");  // one isolated noise error
    CHECK(format_time(h.onset_ms) == "2026-03-14T14:04:58.000Z");        // the burst
    CHECK(h.example_trace == "4bf92f3577b34da6");
    // failed spans count at their end: the caller fails after its callee
    CHECK(format_time((*health)[std::size_t(store.find_service("checkout"))].first_error_ms) ==
          "2026-03-14T14:05:10.300Z");

    auto stats = store.stats();
    CHECK(stats.n_files == 6);  // five logs and one changes file
    CHECK(stats.n_spans == 7);
    CHECK(stats.n_bytes > 0);
}

TEST_CASE("log_store: large files are cut into chunks without splitting entries") {
    incident_fixture::temp_root root("chunks");
    // ~14 MB: past the chunk size, so the scan runs in parallel pieces
    std::string text;
    constexpr int n_entries = 120000;
    for (int i = 0; i < n_entries; ++i) {
        text += "2026-03-14T14:05:12.345Z api[1]: " + std::string(i % 7 == 0 ? "ERROR" : "INFO") + " request " +
                std::to_string(i) + " handled with a fairly long message body to fill the line\n";
        if (i % 7 == 0) text += "java.lang.IllegalStateException: boom\n\tat a.b.C.d(C.java:1)\n";
    }
    incident_fixture::write_file(root.path / "logs/api.log", text);
    log_store store(root.path);
    REQUIRE(store.ensure_loaded({}).ok());
    const log_file* f = store.find_file("api");
    REQUIRE(f != nullptr);
    REQUIRE(f->entries.size() == std::size_t(n_entries));
    CHECK(f->n_lines == std::uint32_t(n_entries + 2 * ((n_entries + 6) / 7)));
    std::uint32_t line = 1;
    bool all_ok = true;
    for (int i = 0; i < n_entries; ++i) {
        const auto& e = f->entries[std::size_t(i)];
        all_ok &= e.line == line;
        all_ok &= f->first_line(e).find(" request " + std::to_string(i) + " ") != std::string_view::npos;
        line += i % 7 == 0 ? 3 : 1;
    }
    CHECK(all_ok);
}

TEST_CASE("log_store: a cancelled load reports it and a later call loads") {
    incident_fixture::temp_root root("cancel");
    incident_fixture::write_incident(root.path);
    log_store store(root.path);
    std::atomic<bool> cancel{true};
    auto s = store.ensure_loaded(call_context{&cancel});
    REQUIRE_FALSE(s.ok());
    CHECK(s.err().code == errc::cancelled);
    CHECK(store.files().empty());
    cancel = false;
    REQUIRE(store.ensure_loaded(call_context{&cancel}).ok());
    CHECK(store.files().size() == 5);
}

TEST_CASE("log_store: a missing root is an error that names it") {
    log_store store("/nonexistent/incident");
    auto s = store.ensure_loaded({});
    REQUIRE_FALSE(s.ok());
    CHECK(s.err().code == errc::not_found);
    CHECK(s.err().message.find("/nonexistent/incident") != std::string::npos);
}

TEST_CASE("log_store: a root without logs/ reads its own *.log files, never answer.json") {
    incident_fixture::temp_root root("flat");
    incident_fixture::write_file(root.path / "web.log", "2026-03-14T14:05:12Z ERROR boom\n");
    incident_fixture::write_file(root.path / "answer.json", "{\"root_cause_service\":\"POISON\"}\n");
    log_store store(root.path);
    REQUIRE(store.ensure_loaded({}).ok());
    REQUIRE(store.files().size() == 1);
    CHECK(store.files()[0]->service == "web");
}
