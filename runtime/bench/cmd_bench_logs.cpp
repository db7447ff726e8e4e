// `tachyon bench logs`: how fast the log tools read a directory. Writes
// --mb of mixed-format logs into a temporary incident directory (lines like
// the incident world's, plus the real formats the log tools recognise, some
// with stack traces, one file per format, large files cut into chunks), then
// loads it through the log store (format detection, parsing, entry
// grouping, time resolution, the index) on each thread count, and prints
// MB/s and the process's peak resident memory.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <tbb/global_control.h>

#include "runtime/cli/cli.h"
#include "tools/logformat/log_time.h"
#include "tools/logs/log_store.h"

namespace tachyon {
namespace {
namespace fs = std::filesystem;
using logformat::civil_time;

// xorshift64*: fixed data for every run
struct rng {
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    std::uint64_t next() {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        return s * 2685821657736338717ull;
    }
    unsigned below(unsigned n) { return unsigned(next() % n); }
    template <std::size_t N>
    const char* pick(const char* const (&items)[N]) { return items[below(N)]; }
};

constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr const char* services[] = {"checkout", "payments", "payments-db", "search", "shipping", "api-gateway"};
constexpr const char* messages[] = {"request completed op=\"POST /payments/charge\" status=200 duration_ms=21.8",
                                    "connection pool exhausted (50/50 in use), waiting 2000 ms",
                                    "checkpoint complete: wrote 2558 buffers",
                                    "upstream timed out after 3000 ms calling payments-db",
                                    "health check ok", "metrics flushed: 92 series",
                                    "GC pause 212 ms, heap 1.9 GB of 2.0 GB"};
constexpr const char* levels_upper[] = {"INFO", "INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"};

// One line (or entry) of format `kind` at time `us`, appended to `out`.
enum class kind { incident, access, json, syslog, log4j_trace, android, apache_error, bgl, hdfs, spark, zookeeper,
                  openstack, windows_cbs, logfmt, klog, python, nginx_error, thunderbird, cri, n_kind };
constexpr const char* kind_names[] = {"incident", "access", "json", "syslog", "hadoop", "android", "apache", "bgl",
                                      "hdfs", "spark", "zookeeper", "openstack", "windows-cbs", "logfmt", "klog",
                                      "python", "nginx-error", "thunderbird", "cri"};
static_assert(std::size(kind_names) == std::size_t(kind::n_kind));

void append_line(kind k, std::int64_t us, rng& r, std::string& out) {
    const civil_time t = logformat::civil_from_us(us);
    const int ms = t.micros / 1000;
    const char* level = r.pick(levels_upper);
    const char* msg = r.pick(messages);
    char buf[768];
    int n = 0;
    switch (k) {
        case kind::incident:
            n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s[%u]: %s %s trace=%016llx\n", t.year,
                              t.month, t.day, t.hour, t.minute, t.second, ms, r.pick(services), 1000 + r.below(30000),
                              level, msg, static_cast<unsigned long long>(r.next()));
            break;
        case kind::access:
            n = std::snprintf(buf, sizeof buf,
                              "10.0.%u.%u - - [%02d/%s/%04d:%02d:%02d:%02d +0000] \"%s /api/%s HTTP/1.1\" %d %u \"-\" "
                              "\"Mozilla/5.0 (X11; Linux x86_64)\" rt=0.%03u\n",
                              r.below(255), r.below(255), t.day, months[t.month - 1], t.year, t.hour, t.minute, t.second,
                              r.below(3) ? "GET" : "POST", r.pick(services), r.below(10) ? 200 : 500 + int(r.below(4)),
                              r.below(90000), r.below(999));
            break;
        case kind::json:
            n = std::snprintf(buf, sizeof buf,
                              "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\",\"level\":\"%s\",\"service\":\"search\","
                              "\"msg\":\"%s\",\"trace_id\":\"%016llx\"}\n",
                              t.year, t.month, t.day, t.hour, t.minute, t.second, ms, level, "heap usage 79% after GC",
                              static_cast<unsigned long long>(r.next()));
            break;
        case kind::syslog:
            n = std::snprintf(buf, sizeof buf, "%s %2d %02d:%02d:%02d LabSZ sshd[%u]: %s\n", months[t.month - 1], t.day,
                              t.hour, t.minute, t.second, 24000 + r.below(1000),
                              r.below(8) ? "Failed password for invalid user admin from 173.234.31.186 port 38926 ssh2"
                                         : "error: Received disconnect from 103.99.0.122: 14: No more user authentication methods available. [preauth]");
            break;
        case kind::log4j_trace:
            n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d,%03d %s [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: %s\n",
                              t.year, t.month, t.day, t.hour, t.minute, t.second, ms, level, msg);
            if (r.below(20) == 0)
                out += "java.net.ConnectException: Connection refused\n\tat sun.nio.ch.SocketChannelImpl.checkConnect(Native Method)\n"
                       "\tat org.apache.hadoop.ipc.Client.call(Client.java:1468)\nCaused by: java.io.IOException: reset\n\t... 12 more\n";
            break;
        case kind::android:
            n = std::snprintf(buf, sizeof buf, "%02d-%02d %02d:%02d:%02d.%03d  %4u  %4u %c WindowManager: %s\n", t.month,
                              t.day, t.hour, t.minute, t.second, ms, 1702 + r.below(100), 2395 + r.below(100),
                              "VDIWEF"[r.below(6)], msg);
            break;
        case kind::apache_error:
            n = std::snprintf(buf, sizeof buf, "[Sun %s %02d %02d:%02d:%02d %04d] [%s] mod_jk child workerEnv in error state %u\n",
                              months[t.month - 1], t.day, t.hour, t.minute, t.second, t.year, r.below(3) ? "notice" : "error",
                              r.below(10));
            break;
        case kind::bgl: {
            const civil_time l = logformat::civil_from_us(us - 7 * 3600 * logformat::us_per_second);
            n = std::snprintf(buf, sizeof buf,
                              "- %lld %04d.%02d.%02d R02-M1-N0-C:J12-U11 %04d-%02d-%02d-%02d.%02d.%02d.%06d R02-M1-N0-C:J12-U11 RAS KERNEL %s instruction cache parity error corrected\n",
                              static_cast<long long>(us / logformat::us_per_second), l.year, l.month, l.day, l.year, l.month,
                              l.day, l.hour, l.minute, l.second, t.micros, r.below(5) ? "INFO" : "FATAL");
            break;
        }
        case kind::hdfs:
            n = std::snprintf(buf, sizeof buf, "%02d%02d%02d %02d%02d%02d %u %s dfs.DataNode$PacketResponder: PacketResponder 1 for block blk_%llu terminating\n",
                              t.year % 100, t.month, t.day, t.hour, t.minute, t.second, 100 + r.below(900), level,
                              static_cast<unsigned long long>(r.next() >> 4));
            break;
        case kind::spark:
            n = std::snprintf(buf, sizeof buf, "%02d/%02d/%02d %02d:%02d:%02d %s storage.BlockManager: Found block rdd_%u_%u locally\n",
                              t.year % 100, t.month, t.day, t.hour, t.minute, t.second, level, r.below(9), r.below(99));
            break;
        case kind::zookeeper:
            n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d,%03d - %-5s [QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:FastLeaderElection@774] - Notification time out: %u\n",
                              t.year, t.month, t.day, t.hour, t.minute, t.second, ms, level, 200 + r.below(60000));
            break;
        case kind::openstack:
            n = std::snprintf(buf, sizeof buf, "nova-api.log.1.2017-05-16_13:53:08 %04d-%02d-%02d %02d:%02d:%02d.%03d 25746 %s nova.osapi_compute.wsgi.server [req-38101a0b-2096-447d-96ea-a692162415ae 113d3a99c3da401fbd62cc2caa5b96d2 - - -] 10.11.10.1 \"GET /v2/servers/detail HTTP/1.1\" status: 200 len: 1893 time: 0.2477829\n",
                              t.year, t.month, t.day, t.hour, t.minute, t.second, ms, level);
            break;
        case kind::windows_cbs:
            n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d, %-22sCBS    Loaded Servicing Stack v6.1.7601.23505 with Core: C:\\Windows\\winsxs\\cbscore.dll\n",
                              t.year, t.month, t.day, t.hour, t.minute, t.second, r.below(6) ? "Info" : "Error");
            break;
        case kind::logfmt:
            n = std::snprintf(buf, sizeof buf, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03dZ caller=main.go:%u level=%s msg=\"%s\"\n",
                              t.year, t.month, t.day, t.hour, t.minute, t.second, ms, 10 + r.below(400), r.below(5) ? "info" : "error",
                              "scrape failed");
            break;
        case kind::klog:
            n = std::snprintf(buf, sizeof buf, "%c%02d%02d %02d:%02d:%02d.%06d %7u controller.go:42] %s\n", "IIIWE"[r.below(5)],
                              t.month, t.day, t.hour, t.minute, t.second, t.micros, 1 + r.below(99999), msg);
            break;
        case kind::python:
            n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d,%03d - myapp.db - %s - %s\n", t.year, t.month,
                              t.day, t.hour, t.minute, t.second, ms, r.below(5) ? "INFO" : "ERROR", msg);
            if (r.below(40) == 0)
                out += "Traceback (most recent call last):\n  File \"/srv/app/db.py\", line 41, in query\n    rows = cur.fetchall()\n"
                       "TimeoutError: query timed out\n";
            break;
        case kind::nginx_error:
            n = std::snprintf(buf, sizeof buf, "%04d/%02d/%02d %02d:%02d:%02d [%s] 1234#1234: *%u upstream timed out (110: Connection timed out) while reading response header from upstream\n",
                              t.year, t.month, t.day, t.hour, t.minute, t.second, r.below(4) ? "warn" : "error", r.below(99999));
            break;
        case kind::thunderbird:
            n = std::snprintf(buf, sizeof buf, "- %lld %04d.%02d.%02d dn228 %s %d %02d:%02d:%02d dn228/dn228 crond(pam_unix)[%u]: session closed for user root\n",
                              static_cast<long long>(us / logformat::us_per_second), t.year, t.month, t.day, months[t.month - 1],
                              t.day, t.hour, t.minute, t.second, 2000 + r.below(9000));
            break;
        case kind::cri:
            n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06d123Z stdout F {\"level\":\"%s\",\"msg\":\"%s\"}\n",
                              t.year, t.month, t.day, t.hour, t.minute, t.second, t.micros, r.below(5) ? "info" : "error",
                              "listening on :8080");
            break;
        case kind::n_kind: break;
    }
    if (n > 0) out.append(buf, std::size_t(std::min(n, int(sizeof buf) - 1)));
}

// Writes ~`total_bytes` of logs under root/logs (one file per kind, sizes
// from 1x to 3x the mean so that some files are cut into chunks) and a
// traces file; returns the bytes written.
result<std::uint64_t> generate(const fs::path& root, std::uint64_t total_bytes) {
    std::error_code ec;
    fs::create_directories(root / "logs", ec);
    fs::create_directories(root / "traces", ec);
    if (ec) return make_error(errc::io_error, (root / "logs").string() + ": cannot create: " + ec.message());
    rng r;
    const std::uint64_t n_kind = std::uint64_t(kind::n_kind);
    std::uint64_t written = 0;
    std::string block;
    for (std::uint64_t k = 0; k < n_kind; ++k) {
        const std::uint64_t share = total_bytes * 2 * (1 + k % 3) / (n_kind * 4);  // 0.5x, 1x, 1.5x of the mean
        const fs::path path = root / "logs" / (std::string(kind_names[k]) + ".log");
        std::ofstream out(path, std::ios::binary);
        if (!out) return make_error(errc::io_error, path.string() + ": cannot write");
        std::int64_t us = 1770253737000000 + std::int64_t(k) * 1000;  // 2026-02-05T01:08:57Z
        std::uint64_t n = 0;
        while (n < share) {
            block.clear();
            while (block.size() < (1u << 16)) {
                append_line(kind(k), us, r, block);
                us += 1000 + r.below(40000);
            }
            out.write(block.data(), std::streamsize(block.size()));
            n += block.size();
        }
        written += n;
    }
    const fs::path spans = root / "traces" / "spans.jsonl";
    std::ofstream out(spans, std::ios::binary);
    for (int i = 0; i < 20000; ++i) {
        char buf[256];
        const int len = std::snprintf(buf, sizeof buf,
                                      "{\"trace_id\":\"%016x\",\"span_id\":\"%08x\",\"parent_id\":\"\",\"service\":\"%s\","
                                      "\"operation\":\"POST /charge\",\"start\":\"2026-02-05T01:%02d:%02d.000Z\",\"duration_ms\":%u,\"status\":\"%s\"}\n",
                                      unsigned(i / 4), unsigned(i), r.pick(services), 10 + i / 60 % 50, i % 60, r.below(900),
                                      r.below(20) ? "ok" : "error");
        out.write(buf, len);
        written += std::uint64_t(len);
    }
    if (!out) return make_error(errc::io_error, spans.string() + ": cannot write");
    return written;
}

// printf to std::cout (where the CLI's output goes, and tests read it)
template <class... A>
void print(const char* format, A... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, format, args...);
    std::cout << buf;
}

// CPU seconds of the process so far, all threads (user + system).
double cpu_seconds() {
    struct rusage u {};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mb() {
    struct rusage u {};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

int bench_logs(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon bench logs: " << m << "\n";
        return 1;
    };
    auto mb = args.get_int("mb");
    if (!mb) return fail(mb.err().message);
    if (*mb < 1 || *mb > 65536) return fail("--mb: expected 1..65536 (MB of logs to generate), got " + std::to_string(*mb));
    std::vector<int> threads;
    {
        std::stringstream ss(args.get_or("threads", "1,2"));
        std::string item;
        while (std::getline(ss, item, ',')) {
            char* end = nullptr;
            const long v = std::strtol(item.c_str(), &end, 10);
            if (item.empty() || *end != '\0' || v < 1 || v > 256)
                return fail("--threads: '" + item + "' is not a thread count (expected e.g. 1,2)");
            threads.push_back(int(v));
        }
        if (threads.empty()) return fail("--threads: no thread counts");
    }

    std::error_code ec;
    std::string pattern = (fs::temp_directory_path(ec) / "tachyon-bench-logs.XXXXXX").string();
    if (!::mkdtemp(pattern.data())) return fail(pattern + ": cannot create a temporary directory");
    const fs::path root = pattern;
    struct cleanup {
        fs::path p;
        bool keep;
        ~cleanup() {
            std::error_code e;
            if (!keep) fs::remove_all(p, e);
        }
    } remove_after{root, args.flag("keep")};

    const auto g0 = std::chrono::steady_clock::now();
    auto written = generate(root, std::uint64_t(*mb) * 1000000);
    if (!written) return fail(written.err().message);
    const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
    print("%.0f MB of logs in %zu formats (+ traces) at %s, written in %.1f s\n", double(*written) / 1e6,
                std::size_t(kind::n_kind), root.string().c_str(), gen_s);
    // MB per CPU second: what the load costs whatever else the machine runs
    print("| %7s | %10s | %10s | %8s | %9s | %8s | %12s | %13s |\n", "threads", "MB", "entries", "load s", "MB/s",
                "CPU s", "MB per CPU-s", "peak RSS MB");
    print("| %7s | %10s | %10s | %8s | %9s | %8s | %12s | %13s |\n", "-------", "----------", "----------",
                "--------", "---------", "--------", "------------", "-------------");
    for (int t : threads) {
        tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, std::size_t(t));
        tools::log_store store(root);
        const double cpu0 = cpu_seconds();
        auto loaded = store.ensure_loaded({});
        if (!loaded) return fail(loaded.err().message);
        const double cpu = cpu_seconds() - cpu0;
        const tools::load_stats s = store.stats();
        print("| %7d | %10.0f | %10llu | %8.2f | %9.0f | %8.2f | %12.0f | %13.0f |\n", t, double(s.n_bytes) / 1e6,
                    static_cast<unsigned long long>(s.n_entries), s.seconds, s.mb_per_s(), cpu,
                    cpu > 0 ? double(s.n_bytes) / 1e6 / cpu : 0.0, peak_rss_mb());
        std::cout.flush();
    }
    if (args.flag("keep")) print("kept %s\n", root.string().c_str());
    return 0;
}

}  // namespace

cli::command_spec make_bench_logs_command() {
    cli::command_spec c;
    c.name = "bench logs";
    c.summary = "log loading speed of the log tools: MB/s and peak memory on 1 and 2 threads";
    c.description =
        "Writes --mb MB of logs (lines like the incident world's and the real formats the log tools recognise, with\n"
        "stack traces; one file per format) and a traces file into a temporary directory, then loads it through\n"
        "the log store on each thread count: format detection, parsing, entry grouping, time resolution and the\n"
        "index. Prints MB/s and the process's peak resident memory (getrusage) after each load.";
    c.options = {
        {"mb", 0, cli::option_kind::value, "N", "1024", "MB of logs to generate"},
        {"threads", 't', cli::option_kind::value, "LIST", "1,2", "thread counts, e.g. 1,2"},
        {"keep", 0, cli::option_kind::flag, "", "", "keep the generated directory"},
    };
    c.run = bench_logs;
    return c;
}

}  // namespace tachyon
