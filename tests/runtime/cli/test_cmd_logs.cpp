// `tachyon logs inspect` and `tachyon logs parse` as a user runs them, over
// real log lines in a temporary directory.
#include "runtime/cli/commands.h"

#include <doctest/doctest.h>

#include "tests/runtime/cli/cli_capture.h"
#include "tests/tools/incident_fixture.h"

using tachyon::testing::tachyon_cli;

TEST_CASE("logs inspect: per file the format, entries, level histogram and lines without time or level") {
    incident_fixture::temp_root root("cli_logs_inspect");
    incident_fixture::write_file(root.path / "Apache_2k.log",
                                 "[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok /etc/httpd/conf/workers2.properties\n"
                                 "[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6\n"
                                 "a line no format explains\n");
    incident_fixture::write_file(root.path / "answer.json", "{\"root_cause_service\":\"POISON\"}\n");
    auto o = tachyon_cli({"logs", "inspect", root.path.string()});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("apache (Apache_2k.log): format apache_error, 3 lines, 3 entries") != std::string::npos);
    CHECK(o.out.find("levels: unknown=1 notice=1 error=1") != std::string::npos);
    CHECK(o.out.find("time: 2005-12-04T04:47:44.000Z .. 2005-12-04T04:47:44.000Z") != std::string::npos);
    CHECK(o.out.find("without a time: 1 entries, without a level: 1 entries") != std::string::npos);
    CHECK(o.out.find("POISON") == std::string::npos);

    o = tachyon_cli({"logs", "inspect", root.path.string(), "--json"});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("\"format\":\"apache_error\"") != std::string::npos);
    CHECK(o.out.find("\"levels\":{\"unknown\":1,\"notice\":1,\"error\":1}") != std::string::npos);

    o = tachyon_cli({"logs", "inspect", (root.path / "missing").string()});
    CHECK(o.code == 1);
    CHECK(o.err.find("missing") != std::string::npos);
}

TEST_CASE("logs parse --json: one object per entry with id, lines, UTC time, level, source and message") {
    incident_fixture::temp_root root("cli_logs_parse");
    incident_fixture::write_file(root.path / "hdfs.log",
                                 "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 terminating\n"
                                 "081109 203807 222 ERROR dfs.DataNode$DataXceiver: writeBlock failed\n"
                                 "java.io.IOException: Connection reset by peer\n"
                                 "\tat sun.nio.ch.FileDispatcher.read0(Native Method)\n");
    auto o = tachyon_cli({"logs", "parse", (root.path / "hdfs.log").string(), "--json", "--tz", "+01:00"});
    REQUIRE(o.code == 0);
    CHECK(o.out ==
          "{\"id\":\"hdfs:1\",\"first_line\":1,\"last_line\":1,\"format\":\"hdfs\",\"time\":\"2008-11-09T19:36:15.000Z\","
          "\"time_inferred\":false,\"level\":\"info\",\"source\":{\"component\":\"dfs.DataNode$PacketResponder\",\"pid\":\"148\"},"
          "\"message\":\"dfs.DataNode$PacketResponder: PacketResponder 1 terminating\"}\n"
          "{\"id\":\"hdfs:2\",\"first_line\":2,\"last_line\":4,\"format\":\"hdfs\",\"time\":\"2008-11-09T19:38:07.000Z\","
          "\"time_inferred\":false,\"level\":\"error\",\"source\":{\"component\":\"dfs.DataNode$DataXceiver\",\"pid\":\"222\"},"
          "\"message\":\"dfs.DataNode$DataXceiver: writeBlock failed\"}\n");

    o = tachyon_cli({"logs", "parse", (root.path / "hdfs.log").string(), "--tz", "Mars"});
    CHECK(o.code == 2);
    CHECK(o.err.find("'tz'") != std::string::npos);
}

TEST_CASE("logs parse: messages read from JSON and logfmt strings are unescaped once") {
    incident_fixture::temp_root root("cli_logs_escapes");
    incident_fixture::write_file(root.path / "api.log",
                                 "{\"level\":\"error\",\"ts\":1704207845.123,\"msg\":\"lost \\\"db-2\\\"\\tretrying \\u2192 \\ud83d\\ude00\",\"service\":\"api\"}\n"
                                 "ts=2024-01-02T15:04:06Z level=warn msg=\"config \\\"prod\\\" loaded\"\n");
    auto o = tachyon_cli({"logs", "parse", (root.path / "api.log").string(), "--json"});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("\"message\":\"lost \\\"db-2\\\"\\tretrying \xE2\x86\x92 \xF0\x9F\x98\x80\"") != std::string::npos);
    CHECK(o.out.find("\"message\":\"config \\\"prod\\\" loaded\"") != std::string::npos);
    CHECK(o.out.find("\\\\") == std::string::npos);  // no escape escaped twice

    o = tachyon_cli({"logs", "parse", (root.path / "api.log").string()});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("api:1 2024-01-02T15:04:05.123Z error lost \"db-2\" retrying") != std::string::npos);  // one line per entry
}

TEST_CASE("logs inspect DIR: stamps without a year take the year the directory's other files share") {
    incident_fixture::temp_root root("cli_logs_year");
    incident_fixture::write_file(root.path / "logs/auth.log", "Jun  9 06:06:20 combo sshd[812]: error: connection reset\n");
    incident_fixture::write_file(root.path / "logs/app.log", "2019-06-09T06:00:00.000Z app[1]: INFO started\n");
    auto o = tachyon_cli({"logs", "inspect", root.path.string()});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("auth (auth.log): format syslog, 1 lines, 1 entries") != std::string::npos);
    CHECK(o.out.find("time: 2019-06-09T06:06:20.000Z .. 2019-06-09T06:06:20.000Z") != std::string::npos);
    CHECK(o.out.find("levels: error=1") != std::string::npos);
}
