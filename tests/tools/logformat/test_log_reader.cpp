#include "tools/logformat/log_reader.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// Real-format acceptance: tests/tools/logformat/samples/NAME.log holds 20+
// lines of one format as its programs write them (odd cases included:
// syslog's padded day, stack traces, zones, escapes), NAME.expected the UTC
// time and level each physical line must get once the file is read whole
// (a continuation line gets its entry's). Every format must place at least
// 98 % of its lines right.

using namespace tachyon::logformat;

namespace {

std::string read_sample(const std::string& file) {
    std::ifstream in(std::string(TACHYON_SOURCE_DIR) + "/tests/tools/logformat/samples/" + file, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing sample " << file);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct sample {
    const char* name;
    const char* format;       // the format the file must be recognised as; null: a mix of two
    std::optional<int> year;  // the `year` setting, for stamps without one
};

// The samples: one per format the log tools read without configuration.
const sample samples[] = {
    {"android", "android", 2017},     {"apache_error", "apache_error", {}}, {"bgl", "bgl", {}},
    {"hdfs", "hdfs", {}},             {"hpc", "hpc", {}},                   {"hadoop", "log4j", {}},
    {"health", "health", {}},         {"linux_syslog", "syslog", 2005},     {"macos", "syslog", 2017},
    {"openssh", "syslog", 2016},      {"openstack", "openstack", {}},       {"proxifier", "proxifier", 2016},
    {"spark", "spark", {}},           {"thunderbird", "thunderbird", {}},   {"windows_cbs", "windows_cbs", {}},
    {"zookeeper", "zookeeper", {}},   {"syslog5424", "syslog5424", {}},     {"journald", "journald", {}},
    {"json", "json", {}},             {"logfmt", "logfmt", {}},             {"nginx_access", "access", {}},
    {"nginx_error", "nginx_error", {}}, {"log4j", "log4j", {}},             {"python", "python", {}},
    {"klog", "klog", 2024},           {"logrus", nullptr, {}},              {"zap", nullptr, {}},
    {"cri", "cri", {}},
};

}  // namespace

TEST_CASE("real formats: at least 98 % of the lines of every format get the right UTC time and level") {
    for (const sample& s : samples) {
        const std::string name = s.name;
        CAPTURE(name);
        const std::string text = read_sample(std::string(s.name) + ".log");
        std::istringstream expected(read_sample(std::string(s.name) + ".expected"));
        time_hints hints;
        hints.year = s.year;
        const parsed_log log = read_log(text, hints);
        if (s.format) CHECK(format_name(log.format) == s.format);

        // the entry of each physical line
        std::vector<const log_record*> entry_of(log.n_lines + 1, nullptr);
        for (const auto& r : log.records)
            for (std::uint32_t l = r.first_line; l <= r.last_line && l <= log.n_lines; ++l) entry_of[l] = &r;

        std::size_t n_lines = 0, n_right = 0;
        std::string want_time, want_level, wrong;
        while (expected >> want_time >> want_level) {
            ++n_lines;
            const log_record* r = n_lines <= log.n_lines ? entry_of[n_lines] : nullptr;
            const std::string got_time = r ? format_iso(r->time_us) : "?";
            const std::string got_level = r ? std::string(to_string(r->level)) : "?";
            if (got_time == want_time && got_level == want_level) ++n_right;
            else if (wrong.size() < 2000)
                wrong += "  line " + std::to_string(n_lines) + ": got " + got_time + " " + got_level + ", want " + want_time +
                         " " + want_level + "\n";
        }
        REQUIRE(n_lines >= 20);
        CHECK(log.n_lines == n_lines);
        INFO("wrong lines:\n" << wrong);
        CHECK(double(n_right) >= 0.98 * double(n_lines));
    }
}

TEST_CASE("real formats: stack traces and tracebacks are one entry with their first line") {
    const parsed_log hadoop = read_log(read_sample("hadoop.log"), {});
    std::size_t n_multi = 0;
    for (const auto& r : hadoop.records) n_multi += r.last_line > r.first_line;
    CHECK(n_multi == 2);  // the two ConnectException traces
    CHECK(hadoop.records.size() + 14 == hadoop.n_lines);

    const parsed_log python = read_log(read_sample("python.log"), {});
    CHECK(python.records.size() + 4 == python.n_lines);  // one traceback of four lines
}
