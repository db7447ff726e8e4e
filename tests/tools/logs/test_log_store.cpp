#include "tools/logs/log_store.h"

#include <doctest/doctest.h>

#include <atomic>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>

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

TEST_CASE("log_store: real log files get levels, times and names an agent can write") {
    incident_fixture::temp_root root("real");
    // Apache's error log: [error] and [notice] in brackets, no zone
    incident_fixture::write_file(root.path / "Apache_2k.log",
                                 "[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok /etc/httpd/conf/workers2.properties\n"
                                 "[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6\n"
                                 "[Sun Dec 04 04:51:08 2005] [notice] jk2_init() Found child 6725 in scoreboard slot 10\n");
    // Windows CBS: "YYYY-MM-DD HH:MM:SS, Level": the comma is no fraction
    incident_fixture::write_file(root.path / "Windows_2k.log",
                                 "2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505\n"
                                 "2016-09-28 04:30:31, Error                 CSI    00000001 (F) CMIADAPTER: Inner Error\n");
    // an unstamped ERROR line after a stamped one is an entry of its own
    incident_fixture::write_file(root.path / "hdfs-datanode-3.log",
                                 "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 terminating\n"
                                 "ERROR: disk /data/3 failed\n"
                                 "081109 203807 222 WARN dfs.DataNode$DataXceiver: writeBlock received exception\n");
    // Android logcat letters
    incident_fixture::write_file(root.path / "Android_2k.log",
                                 "03-17 16:13:38.811  1702  2395 D WindowManager: printFreezingDisplayLogs\n"
                                 "03-17 16:13:38.819  1702  8671 E PowerManagerService: release:lock=233570404\n");
    log_store store(root.path, log_store_options{.year = 2017, .zone_minutes = std::nullopt});
    REQUIRE(store.ensure_loaded({}).ok());
    std::vector<std::string> names;
    for (const auto& s : store.services()) names.push_back(s.name);
    CHECK(names == std::vector<std::string>{"android", "apache", "hdfs-datanode-3", "windows"});
    CHECK(store.find_file("Apache_2k") == store.find_file("apache"));  // the file's own stem finds it too

    auto health = store.health(no_time, no_time, {});
    REQUIRE(health.ok());
    CHECK((*health)[std::size_t(store.find_service("apache"))].n_error == 1);
    CHECK((*health)[std::size_t(store.find_service("windows"))].n_error == 1);
    CHECK((*health)[std::size_t(store.find_service("android"))].n_error == 1);
    const auto& h = (*health)[std::size_t(store.find_service("hdfs-datanode-3"))];
    CHECK(h.n_error == 1);
    CHECK(h.n_warn == 1);

    const log_file* hdfs = store.find_file("hdfs-datanode-3");
    REQUIRE(hdfs != nullptr);
    REQUIRE(hdfs->entries.size() == 3);
    CHECK(hdfs->entries[1].level == log_level::error);
    CHECK(format_time(hdfs->entries[1].ts_ms) == "2008-11-09T20:36:15.000Z");  // the time of the entry above
    const log_file* windows = store.find_file("windows");
    REQUIRE(windows != nullptr);
    CHECK(format_time(windows->entries[1].ts_ms) == "2016-09-28T04:30:31.000Z");
    const log_file* android = store.find_file("android");
    REQUIRE(android != nullptr);
    CHECK(format_time(android->entries[1].ts_ms) == "2017-03-17T16:13:38.819Z");  // the year hint
}

TEST_CASE("log_store: a yearless file among files of many years takes its own modification time") {
    incident_fixture::temp_root root("years");
    incident_fixture::write_file(root.path / "apache.log", "[Sun Dec 04 04:47:44 2005] [error] boom\n");
    incident_fixture::write_file(root.path / "hdfs.log", "081109 203615 148 INFO dfs.DataNode: ok\n");
    incident_fixture::write_file(root.path / "linux.log", "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: check pass; user unknown\n");
    // last written in July 2019: June 14 is of 2019
    struct timespec times[2] = {{1563000000, 0}, {1563000000, 0}};
    REQUIRE(utimensat(AT_FDCWD, (root.path / "linux.log").c_str(), times, 0) == 0);
    log_store store(root.path);
    REQUIRE(store.ensure_loaded({}).ok());
    const log_file* linux_log = store.find_file("linux");
    REQUIRE(linux_log != nullptr);
    CHECK(format_time(linux_log->entries[0].ts_ms) == "2019-06-14T15:16:01.000Z");
    CHECK(linux_log->source == "sshd");  // every entry names it, so the file is that service
    CHECK(linux_log->service == "sshd");
}

TEST_CASE("normalise_service_name: file names become names an agent can write") {
    CHECK(normalise_service_name("Apache_2k") == "apache");
    CHECK(normalise_service_name("hdfs-datanode-3") == "hdfs-datanode-3");
    CHECK(normalise_service_name("OpenStack.nova_API") == "openstack-nova-api");
    CHECK(normalise_service_name("2024_app") == "app");
    CHECK(normalise_service_name("x") == "x-log");
    CHECK(normalise_service_name("___") == "log");
    CHECK(normalise_service_name("payments-db") == "payments-db");
}
