#include "tools/logformat/log_format.h"

#include <doctest/doctest.h>

#include <string>

using namespace tachyon::logformat;

namespace {

struct parsed {
    std::string format;
    std::string time;  // ISO UTC, or the civil time for local/yearless stamps
    time_kind kind = time_kind::none;
    severity level = severity::unknown;
    std::string service, component, host, pid, thread, message;
};

parsed parse(std::string_view line) {
    line_parser scratch;
    line_fields f;
    int used = parse_line(line, -1, f, scratch);
    parsed p;
    p.format = std::string(format_name(used));
    p.time = format_iso(f.time_us);
    p.kind = f.time;
    p.level = f.level;
    p.service = std::string(f.service.in(line));
    p.component = std::string(f.component.in(line));
    p.host = std::string(f.host.in(line));
    p.pid = std::string(f.pid.in(line));
    p.thread = std::string(f.thread.in(line));
    p.message = std::string(f.message.in(line));
    return p;
}

}  // namespace

TEST_CASE("levels: words, letters, syslog severities, numbers, HTTP status classes") {
    CHECK(severity_from_word("Warning") == severity::warn);
    CHECK(severity_from_word("eRRor") == severity::error);
    CHECK(severity_from_word("crit") == severity::critical);
    CHECK(severity_from_word("emerg") == severity::fatal);
    CHECK(severity_from_word("Information") == severity::info);
    CHECK(severity_from_word("verbose") == severity::trace);
    CHECK_FALSE(severity_from_word("INFORMATIONAL_X").has_value());
    CHECK(severity_from_letter('V') == severity::trace);
    CHECK(severity_from_letter('E') == severity::error);
    CHECK_FALSE(severity_from_letter('x').has_value());
    CHECK(severity_from_syslog(3) == severity::error);
    CHECK(severity_from_syslog(165 & 7) == severity::notice);
    CHECK(severity_from_number(50) == severity::error);
    CHECK(severity_from_number(30) == severity::info);
    CHECK(severity_from_http_status(503) == severity::error);
    CHECK(severity_from_http_status(404) == severity::warn);
    CHECK(severity_from_http_status(200) == severity::info);
}

TEST_CASE("time: ISO with zones and fractions, comma before a word is no fraction") {
    std::size_t used = 0;
    std::optional<int> zone;
    auto t = parse_iso_civil("2016-09-28 04:30:30, Info  CBS", &used, &zone);
    REQUIRE(t.has_value());
    CHECK(used == 19);
    CHECK_FALSE(zone.has_value());
    t = parse_iso_civil("2026-03-14T16:05:12.123456+02:00 x", &used, &zone);
    REQUIRE(t.has_value());
    CHECK(t->micros == 123456);
    CHECK(zone == 120);
    CHECK(format_iso(t->to_us() - 120 * 60 * us_per_second) == "2026-03-14T14:05:12.123456Z");
    CHECK(format_iso(0) == "1970-01-01T00:00:00.000Z");
    CHECK(parse_zone_hint("-0700") == -420);
    CHECK(parse_zone_hint("UTC") == 0);
    CHECK_FALSE(parse_zone_hint("Mars").has_value());
}

TEST_CASE("syslog: RFC 3164, RFC 5424, macOS, rsyslog ISO stamps") {
    auto p = parse("Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=218.188.2.4");
    CHECK(p.format == "syslog");
    CHECK(p.kind == time_kind::yearless);
    CHECK(p.host == "combo");
    CHECK(p.service == "sshd");
    CHECK(p.pid == "19939");
    CHECK(p.message.starts_with("authentication failure"));

    p = parse("<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8");
    CHECK(p.format == "syslog");
    CHECK(p.level == severity::critical);
    CHECK(p.service == "su");

    p = parse("<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut=\"3\" eventSource=\"Application\"] An application event log entry");
    CHECK(p.format == "syslog5424");
    CHECK(p.time == "2003-10-11T22:14:15.003Z");
    CHECK(p.level == severity::notice);
    CHECK(p.host == "mymachine.example.com");
    CHECK(p.service == "evntslog");
    CHECK(p.message == "An application event log entry");

    p = parse("Jul  1 09:00:55 calvisitor-10-105-160-95 kernel[0]: IOThunderboltSwitch<0>(0x0)::listenerCallback - Thunderbolt HPD packet for route = 0x0 port = 11 unplug = 0");
    CHECK(p.format == "syslog");
    CHECK(p.service == "kernel");
    CHECK(p.host == "calvisitor-10-105-160-95");

    p = parse("2026-03-14T14:05:12.345Z checkout[812]: WARNING pool low trace=4bf92f35");
    CHECK(p.level == severity::warn);
    CHECK(p.service == "checkout");
    CHECK(p.message == "pool low trace=4bf92f35");
}

TEST_CASE("supercomputer logs: BlueGene/L, Thunderbird, HPC") {
    auto p = parse("- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.363779 R02-M1-N0-C:J12-U11 RAS KERNEL INFO instruction cache parity error corrected");
    CHECK(p.format == "bgl");
    CHECK(p.time == "2005-06-03T22:42:50.363779Z");  // the epoch column is UTC
    CHECK(p.level == severity::info);
    CHECK(p.component == "KERNEL");
    CHECK(p.host == "R02-M1-N0-C:J12-U11");
    CHECK(p.message == "instruction cache parity error corrected");
    p = parse("KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 R30-M0-N9-C:J16-U01 RAS KERNEL FATAL data TLB error interrupt");
    CHECK(p.level == severity::fatal);

    p = parse("- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 crond(pam_unix)[2915]: session closed for user root");
    CHECK(p.format == "thunderbird");
    CHECK(p.time == "2005-11-09T20:01:01.000Z");
    CHECK(p.service == "crond");
    CHECK(p.message == "session closed for user root");

    p = parse("134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: Component \\042SCSI-WWID:01000010:6005-08b4-0001-00c6-0006-3000-003d-0000\\042 is in the unavailable state (HWID=5179)");
    CHECK(p.format == "hpc");
    CHECK(p.host == "node-246");
    CHECK(p.component == "unix.hw");
    CHECK(p.time == "2004-02-26T14:12:22.000Z");
}

TEST_CASE("web servers: access logs by status class, Apache and nginx error logs") {
    auto p = parse("127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 503 2326 \"http://www.example.com/start.html\" \"Mozilla/4.08\"");
    CHECK(p.format == "access");
    CHECK(p.time == "2000-10-10T20:55:36.000Z");
    CHECK(p.level == severity::error);
    CHECK(p.message == "\"GET /apache_pb.gif HTTP/1.0\" 503");

    p = parse("[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6");
    CHECK(p.format == "apache_error");
    CHECK(p.kind == time_kind::local);
    CHECK(p.level == severity::error);
    CHECK(p.message == "mod_jk child workerEnv in error state 6");
    p = parse("[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok /etc/httpd/conf/workers2.properties");
    CHECK(p.level == severity::notice);
    p = parse("[Fri Sep 09 10:42:29.902022 2011] [core:error] [pid 35708:tid 4328636416] [client 72.15.99.187] File does not exist: /usr/local/apache2/htdocs/favicon.ico");
    CHECK(p.level == severity::error);
    CHECK(p.component == "core");
    CHECK(p.pid == "35708");
    CHECK(p.thread == "4328636416");
    CHECK(p.host == "72.15.99.187");
    CHECK(p.message.starts_with("File does not exist"));

    p = parse("2024/01/02 15:04:05 [error] 1234#1234: *5 open() \"/usr/share/nginx/html/favicon.ico\" failed (2: No such file or directory), client: 10.0.0.1");
    CHECK(p.format == "nginx_error");
    CHECK(p.level == severity::error);
    CHECK(p.pid == "1234");
    CHECK(p.message.starts_with("*5 open()"));
}

TEST_CASE("Java, Python and Go application logs") {
    auto p = parse("2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created MRAppMaster for application appattempt_1445144423722_0020_000001");
    CHECK(p.format == "log4j");
    CHECK(p.time == "2015-10-18T18:01:47.978Z");
    CHECK(p.level == severity::info);
    CHECK(p.thread == "main");
    CHECK(p.component == "org.apache.hadoop.mapreduce.v2.app.MRAppMaster");

    p = parse("2024-01-02 15:04:05.123  WARN 12345 --- [           main] com.example.App                          : Low memory");
    CHECK(p.format == "log4j");
    CHECK(p.level == severity::warn);
    CHECK(p.pid == "12345");

    p = parse("081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block blk_38865049064139660 terminating");
    CHECK(p.format == "hdfs");
    CHECK(p.time == "2008-11-09T20:36:15.000Z");
    CHECK(p.component == "dfs.DataNode$PacketResponder");

    p = parse("17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers for [TERM, HUP, INT]");
    CHECK(p.format == "spark");
    CHECK(p.time == "2017-06-09T20:10:40.000Z");
    CHECK(p.component == "executor.CoarseGrainedExecutorBackend");

    p = parse("2015-07-29 17:41:44,747 - INFO  [QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:FastLeaderElection@774] - Notification time out: 3200");
    CHECK(p.format == "zookeeper");
    CHECK(p.level == severity::info);
    CHECK(p.component == "FastLeaderElection@774");
    CHECK(p.message == "Notification time out: 3200");

    p = parse("nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO nova.osapi_compute.wsgi.server [req-38101a0b-2096-447d-96ea-a692162415ae 113d3a99c3da401fbd62cc2caa5b96d2 54fadb412c4e40cdbaed9335e4c35a9e - - -] 10.11.10.1 \"GET /v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail HTTP/1.1\" status: 200 len: 1893 time: 0.2477829");
    CHECK(p.format == "openstack");
    CHECK(p.pid == "25746");
    CHECK(p.component == "nova.osapi_compute.wsgi.server");
    CHECK(p.time == "2017-05-16T00:00:00.008Z");

    p = parse("2024-01-02 15:04:05,123 - myapp.db - ERROR - connection lost");
    CHECK(p.format == "python");
    CHECK(p.level == severity::error);
    CHECK(p.component == "myapp.db");
    CHECK(p.message == "connection lost");
    p = parse("WARNING:root:disk almost full");
    CHECK(p.format == "python");
    CHECK(p.level == severity::warn);

    p = parse("E0102 15:04:05.123456    1234 controller.go:42] sync failed: timeout");
    CHECK(p.format == "klog");
    CHECK(p.kind == time_kind::yearless);
    CHECK(p.level == severity::error);
    CHECK(p.component == "controller.go:42");
    CHECK(p.message == "sync failed: timeout");

    p = parse("{\"level\":\"error\",\"ts\":1704207845.123,\"caller\":\"app/main.go:12\",\"msg\":\"request failed\",\"service\":\"api\"}");
    CHECK(p.format == "json");
    CHECK(p.time == "2024-01-02T15:04:05.123Z");
    CHECK(p.level == severity::error);
    CHECK(p.service == "api");
    CHECK(p.message == "request failed");

    p = parse("time=\"2015-03-26T01:27:38-04:00\" level=warning msg=\"The group's number increased tremendously!\" number=122");
    CHECK(p.format == "logfmt");
    CHECK(p.time == "2015-03-26T05:27:38.000Z");
    CHECK(p.level == severity::warn);
    CHECK(p.message == "The group's number increased tremendously!");

    p = parse("2024-01-02T15:04:05.123Z\tINFO\tapp/main.go:12\tserver started");
    CHECK(p.level == severity::info);
    CHECK(p.time == "2024-01-02T15:04:05.123Z");
}

TEST_CASE("Android, Windows, Kubernetes, journald, health app, Proxifier") {
    auto p = parse("03-17 16:13:38.811  1702  2395 D WindowManager: printFreezingDisplayLogsopening app wtoken = AppWindowToken{9f4ef63 token=Token{a64f992 ActivityRecord{de9231d u0 com.tencent.qt.qtl/.activity.info.NewsDetailXmlActivity t761}}}, allDrawn= false");
    CHECK(p.format == "android");
    CHECK(p.kind == time_kind::yearless);
    CHECK(p.level == severity::debug);
    CHECK(p.pid == "1702");
    CHECK(p.thread == "2395");
    CHECK(p.component == "WindowManager");
    p = parse("I/ActivityManager(  585): Start proc com.android.settings for broadcast");
    CHECK(p.format == "android_brief");
    CHECK(p.level == severity::info);
    CHECK(p.component == "ActivityManager");
    CHECK(p.pid == "585");

    p = parse("2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505 with Core: C:\\Windows\\winsxs\\cbscore.dll");
    CHECK(p.format == "windows_cbs");
    CHECK(p.time == "2016-09-28T04:30:30.000Z");
    CHECK(p.level == severity::info);
    CHECK(p.component == "CBS");
    p = parse("2016-09-28 04:30:31, Error                 CSI    00000001@2016/9/27:20:30:31.455 (F) CMIADAPTER: Inner Error Message");
    CHECK(p.level == severity::error);
    p = parse("Error,1/2/2024 3:04:05 PM,Service Control Manager,7000,None,The Foo service failed to start");
    CHECK(p.format == "windows_event");
    CHECK(p.time == "2024-01-02T15:04:05.000Z");
    CHECK(p.service == "Service Control Manager");
    CHECK(p.message == "The Foo service failed to start");

    p = parse("2016-10-06T00:17:09.669794202Z stderr F E0102 15:04:05.123456    1234 controller.go:42] sync failed");
    CHECK(p.format == "cri");
    CHECK(p.time == "2016-10-06T00:17:09.669794Z");
    CHECK(p.level == severity::error);
    CHECK(p.message == "sync failed");

    p = parse("{\"__CURSOR\":\"s=1\",\"__REALTIME_TIMESTAMP\":\"1704207845123456\",\"PRIORITY\":\"3\",\"_HOSTNAME\":\"web1\",\"SYSLOG_IDENTIFIER\":\"nginx\",\"_PID\":\"812\",\"MESSAGE\":\"worker exited\"}");
    CHECK(p.format == "journald");
    CHECK(p.time == "2024-01-02T15:04:05.123456Z");
    CHECK(p.level == severity::error);
    CHECK(p.service == "nginx");
    CHECK(p.host == "web1");
    CHECK(p.pid == "812");
    CHECK(p.message == "worker exited");

    p = parse("20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579");
    CHECK(p.format == "health");
    CHECK(p.time == "2017-12-23T22:15:29.606Z");
    CHECK(p.component == "Step_LSC");
    CHECK(p.message == "onStandStepChanged 3579");

    p = parse("[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS");
    CHECK(p.format == "proxifier");
    CHECK(p.kind == time_kind::yearless);
    CHECK(p.service == "chrome.exe");
    p = parse("[10.30 16:49:07] chrome.exe - proxy.cse.cuhk.edu.hk:5070 error : Could not connect through proxy proxy.cse.cuhk.edu.hk:5070");
    CHECK(p.level == severity::error);
}

TEST_CASE("continuations: frames and tracebacks continue, a line with a time or level never does") {
    line_parser scratch;
    auto cont = [&](std::string_view line) {
        line_fields f;
        int used = parse_line(line, -1, f, scratch);
        return is_continuation(line, f, used, true);
    };
    CHECK(cont("\tat com.shop.Net.read(Net.java:12)"));
    CHECK(cont("Caused by: java.io.IOException: reset"));
    CHECK(cont("java.net.SocketTimeoutException: Read timed out"));
    CHECK(cont("Traceback (most recent call last):"));
    CHECK(cont("ValueError: shard 3 unavailable"));
    CHECK(cont("goroutine 1 [running]:"));
    CHECK(cont("main.main()"));
    CHECK(cont(""));
    CHECK_FALSE(cont("ERROR something broke"));                // a level
    CHECK_FALSE(cont("[error] something broke"));
    CHECK_FALSE(cont("2026-03-14T14:05:12Z next entry"));      // a time
    CHECK_FALSE(cont("E/AndroidRuntime(  585): FATAL EXCEPTION: main"));
    CHECK_FALSE(cont("a plain sentence without time or level"));  // its own entry
    line_fields f;
    CHECK(parse_line("a plain sentence", -1, f, scratch) == -1);
    CHECK(f.message.in("a plain sentence") == "a plain sentence");
}

TEST_CASE("unescape: JSON escapes of messages read from JSON and logfmt strings") {
    CHECK(unescape(R"(lost \"db-2\"\tretrying)") == "lost \"db-2\"\tretrying");
    CHECK(unescape(R"(a\\b\/c\n)") == "a\\b/c\n");
    CHECK(unescape(R"(\u2192 \ud83d\ude00)") == "\xE2\x86\x92 \xF0\x9F\x98\x80");
    CHECK(unescape(R"(\ud83d alone)") == "\xEF\xBF\xBD alone");  // a lone surrogate: U+FFFD
    CHECK(unescape(R"(C:\new\x cut\u12)") == "C:\new\\x cut\\u12");  // \n is an escape; \x and a cut \u stay
    CHECK(unescape("trailing\\") == "trailing\\");

    line_parser scratch;
    line_fields f;
    std::string_view json = R"({"level":"info","msg":"a \"b\""})";
    REQUIRE(parse_line(json, -1, f, scratch) == find_format("json"));
    CHECK(f.escaped);
    CHECK(unescape(f.message.in(json)) == "a \"b\"");
    std::string_view logfmt = R"(ts=2024-01-02T15:04:05Z level=info msg="config \"prod\" loaded")";
    REQUIRE(parse_line(logfmt, -1, f, scratch) == find_format("logfmt"));
    CHECK(f.escaped);
    std::string_view bare = "ts=2024-01-02T15:04:05Z level=info msg=started path=C:\\new";
    REQUIRE(parse_line(bare, -1, f, scratch) == find_format("logfmt"));
    CHECK_FALSE(f.escaped);  // a bare value is the text itself
}

TEST_CASE("syslog: a daemon's own lower-case level prefix, logback's thread before the level") {
    auto p = parse("Dec 10 07:43:53 LabSZ sshd[24200]: error: Received disconnect from 103.99.0.122: 14: No more user authentication methods available. [preauth]");
    CHECK(p.level == severity::error);
    CHECK(p.message.starts_with("Received disconnect"));
    p = parse("Jun 30 23:03:17 combo postfix/smtpd[3012]: warning: unknown[61.170.23.4]: SASL LOGIN authentication failed");
    CHECK(p.level == severity::warn);
    p = parse("Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 173.234.31.186");
    CHECK(p.level == severity::unknown);

    p = parse("2024-01-02 15:04:05.123 [http-nio-8080-exec-3] WARN  c.e.b.InvoiceController - GET /invoices/8812 took 41 ms");
    CHECK(p.format == "log4j");
    CHECK(p.level == severity::warn);
    CHECK(p.thread == "http-nio-8080-exec-3");
    CHECK(p.component == "c.e.b.InvoiceController");
    CHECK(severity_from_word("dbug") == severity::debug);  // Grafana's lvl=dbug
}

TEST_CASE("an epoch number too large for any time leaves the entry without one, the rest of the line read") {
    for (const char* line : {R"({"ts": 1.7e107, "level": "error", "msg": "disk full"})", R"({"time": 99999999999999999999, "level": "warn", "msg": "x"})",
                             R"({"ts": -5, "level": "info", "msg": "y"})"}) {
        CAPTURE(line);
        auto p = parse(line);
        CHECK(p.kind == time_kind::none);
        CHECK(p.level != severity::unknown);
    }
    auto p = parse(R"({"ts": 1700000000.25, "level": "error", "msg": "disk full"})");
    CHECK(p.time == "2023-11-14T22:13:20.250Z");
    CHECK(p.message == "disk full");
}
