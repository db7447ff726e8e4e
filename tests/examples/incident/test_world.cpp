#include "examples/incident/world.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

#include "examples/incident/clock.h"

namespace fs = std::filesystem;
using namespace incident;

namespace {

struct temp_dir {
    fs::path path;
    explicit temp_dir(const std::string& name)
        : path(fs::temp_directory_path() / ("incident-test-" + std::to_string(::getpid()) + "-" + name)) {
        fs::remove_all(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string read_all(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::vector<std::string> read_lines(const fs::path& p) {
    std::vector<std::string> out;
    std::ifstream f(p, std::ios::binary);
    for (std::string line; std::getline(f, line);) out.push_back(line);
    return out;
}

// Every file under `dir` by relative path, with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = read_all(e.path());
    return out;
}

bool is_error_line(const std::string& line) {
    return line.find("\"level\":\"ERROR\"") != std::string::npos || line.find("]: ERROR ") != std::string::npos;
}

// The time of a log line in any of the generator's formats; -1 if none
// (nginx access lines and continuation lines).
time_ms line_time(const std::string& line, int year) {
    auto digits = [&](size_t at, size_t n) {
        int v = 0;
        for (size_t i = 0; i < n; ++i) v = v * 10 + (line[at + i] - '0');
        return v;
    };
    size_t at = line.find("\"ts\":\"");
    if (at != std::string::npos) at += 6;
    else if (line.size() > 24 && line[4] == '-' && line[10] == 'T') at = 0;
    if (at != std::string::npos)
        return make_time(digits(at, 4), digits(at + 5, 2), digits(at + 8, 2), digits(at + 11, 2), digits(at + 14, 2),
                         digits(at + 17, 2), digits(at + 20, 3));
    static const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int m = 0; m < 12; ++m) {
        if (line.compare(0, 4, std::string(months[m]) + " ") != 0) continue;
        const int day = line[4] == ' ' ? line[5] - '0' : digits(4, 2);
        return make_time(year, m + 1, day, digits(7, 2), digits(10, 2), digits(13, 2));
    }
    return -1;
}

// First ERROR time of each log file.
std::map<std::string, time_ms> first_errors(const fs::path& dir, int year) {
    std::map<std::string, time_ms> out;
    for (const auto& e : fs::directory_iterator(dir / "logs")) {
        for (const auto& line : read_lines(e.path())) {
            if (!is_error_line(line)) continue;
            const time_ms t = line_time(line, year);
            REQUIRE(t >= 0);
            out[e.path().stem().string()] = t;
            break;
        }
    }
    return out;
}

int year_of(const incident_plan& p) { return std::stoi(iso_s(p.window_start).substr(0, 4)); }

}  // namespace

TEST_CASE("a seed gives a byte-identical incident directory; different seeds differ") {
    temp_dir a("det-a"), b("det-b"), c("det-c");
    REQUIRE(generate_incident(plan_incident(7), a.path).ok());
    REQUIRE(generate_incident(plan_incident(7), b.path).ok());
    REQUIRE(generate_incident(plan_incident(8), c.path).ok());
    const auto sa = snapshot(a.path), sb = snapshot(b.path), sc = snapshot(c.path);
    CHECK(sa.size() > 5);
    CHECK(sa == sb);
    CHECK(sa != sc);
    CHECK(sa.count("task.txt") == 1);
    CHECK(sa.count("answer.json") == 1);
    CHECK(sa.count("traces/spans.jsonl") == 1);
    CHECK(sa.count("changes/changes.log") == 1);
}

TEST_CASE("every fault type appears across seeds 0-199, in topologies of 5 to 12 services") {
    std::set<fault_type> seen;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        const incident_plan p = plan_incident(seed);
        seen.insert(p.fault);
        CHECK(p.services.size() >= 5);
        CHECK(p.services.size() <= 12);
        CHECK(p.root != p.symptom);
        CHECK(p.window_start < p.fault_start);
        CHECK(p.fault_start < p.window_end);
        // the task names the symptom, never the root cause
        const std::string& root = p.services[static_cast<size_t>(p.root)].name;
        CHECK(p.task.find(p.services[static_cast<size_t>(p.symptom)].name) != std::string::npos);
        CHECK(p.task.find(root + " ") == std::string::npos);
        CHECK(p.task.find(std::string(to_string(p.fault))) == std::string::npos);
    }
    CHECK(seen.size() == static_cast<size_t>(n_fault_types));
}

TEST_CASE("answer.json's evidence ids are ERROR lines of the root cause, and callers fail after it") {
    for (uint64_t seed = 0; seed < 12; ++seed) {
        CAPTURE(seed);
        temp_dir d("ev-" + std::to_string(seed));
        const incident_plan p = plan_incident(seed);
        auto answer = generate_incident(p, d.path);
        REQUIRE(answer.ok());
        const std::string root = p.services[static_cast<size_t>(p.root)].name;
        CHECK(answer->root_cause_service == root);
        CHECK(read_all(d.path / "answer.json") == answer_json(*answer));
        REQUIRE(answer->evidence.size() == 2);
        const auto lines = read_lines(d.path / "logs" / (root + ".log"));
        CHECK(lines.size() >= 300);
        for (const auto& id : answer->evidence) {
            const size_t colon = id.rfind(':');
            REQUIRE(colon != std::string::npos);
            CHECK(id.substr(0, colon) == root);
            const size_t n = std::stoul(id.substr(colon + 1));
            REQUIRE(n >= 1);
            REQUIRE(n <= lines.size());
            CHECK(is_error_line(lines[n - 1]));
        }
        // the first evidence line is the root's first error, at first_bad_timestamp
        const auto first = first_errors(d.path, year_of(p));
        REQUIRE(first.count(root) == 1);
        CHECK(iso_ms(first.at(root)) == answer->first_bad_timestamp);
        // every service on the failing path above the root fails strictly later
        for (size_t k = 0; k + 1 < p.path.size(); ++k) {
            const std::string& caller = p.services[static_cast<size_t>(p.path[k])].name;
            CAPTURE(caller);
            REQUIRE(first.count(caller) == 1);
            CHECK(first.at(caller) > first.at(root));
        }
        // nothing below the root fails at all
        for (int c : p.services[static_cast<size_t>(p.root)].callees)
            CHECK(first.count(p.services[static_cast<size_t>(c)].name) == 0);
    }
}

TEST_CASE("a bad deploy or config error has its change in changes.log before the fault") {
    int n_checked = 0;
    for (uint64_t seed = 0; seed < 200 && n_checked < 6; ++seed) {
        const incident_plan p = plan_incident(seed);
        if (p.fault != fault_type::bad_deploy && p.fault != fault_type::config_error) continue;
        ++n_checked;
        const std::string word = p.fault == fault_type::bad_deploy ? "deploy " : "config ";
        const std::string root = p.services[static_cast<size_t>(p.root)].name;
        bool found = false;
        for (const auto& c : p.changes)
            found = found || (c.text.rfind(word + root + " ", 0) == 0 && c.at < p.fault_start);
        CHECK(found);
    }
    CHECK(n_checked == 6);
}

TEST_CASE("--scale multiplies the volume and keeps the incident") {
    temp_dir small("scale-1"), big("scale-3");
    auto a = generate_incident(plan_incident(3, 1), small.path);
    auto b = generate_incident(plan_incident(3, 3), big.path);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->root_cause_service == b->root_cause_service);
    CHECK(a->fault == b->fault);
    const auto size_of = [](const fs::path& dir) {
        uintmax_t n = 0;
        for (const auto& e : fs::recursive_directory_iterator(dir))
            if (e.is_regular_file()) n += e.file_size();
        return n;
    };
    CHECK(size_of(big.path) > 2 * size_of(small.path));
}

TEST_CASE("log lines are in time order within each file") {
    temp_dir d("order");
    const incident_plan p = plan_incident(11);
    REQUIRE(generate_incident(p, d.path).ok());
    for (const auto& e : fs::directory_iterator(d.path / "logs")) {
        CAPTURE(e.path().string());
        time_ms last = 0;
        for (const auto& line : read_lines(e.path())) {
            const time_ms t = line_time(line, year_of(p));
            if (t < 0) continue;
            CHECK(t >= last);
            last = t;
        }
    }
}
