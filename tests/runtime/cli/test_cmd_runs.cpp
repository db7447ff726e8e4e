// `tachyon runs list` and `tachyon runs show` as a user runs them.
#include "runtime/cli/commands.h"

#include <doctest/doctest.h>

#include "tests/runtime/cli/cli_capture.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/journal/journal.h"

using namespace tachyon;
namespace fs = std::filesystem;

namespace {

using testing::tachyon_cli;

struct runs_dir {
    fs::path path = fs::path(TACHYON_BINARY_DIR) / "test_tmp" / ("cmd_runs-" + std::to_string(::getpid()));
    runs_dir() {
        fs::remove_all(path);
        auto w = journal::writer::create(path, "20261130T010000Z-aaaaaa");
        REQUIRE(w.ok());
        journal::run_start_event s;
        s.run_id = w->run_id();
        s.agent = "triage";
        REQUIRE(w->run_start(s).ok());
        REQUIRE(w->model_turn({1, 100, 0, 20, 0, 5, 30, "<tool_call>..."}).ok());
        journal::tool_call_event c;
        c.step = 1;
        c.call_id = "c1";
        c.name = "search_logs";
        c.start_ms = 10;
        c.end_ms = 40;
        c.ok = true;
        c.early = true;
        REQUIRE(w->tool_call(c).ok());
        REQUIRE(w->append(journal::call_rejected_event{1, "c2", "get_trace", R"({"trace_id":"zz"})", "trace_id: not a value seen in this run"}).ok());
        journal::final_event f;
        f.time_to_answer_ms = 42.5;
        REQUIRE(w->final_answer(f).ok());
        REQUIRE(w->run_end({journal::run_state::succeeded, ""}).ok());
        auto w2 = journal::writer::create(path, "20261130T020000Z-bbbbbb");
        REQUIRE(w2.ok());
        s.run_id = w2->run_id();
        s.agent = "other";
        REQUIRE(w2->run_start(s).ok());
    }
    ~runs_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

TEST_CASE("runs list: one line per run with agent, state and time to answer") {
    runs_dir dir;
    auto o = tachyon_cli({"runs", "list", "--dir", dir.path.string()});
    CHECK(o.code == 0);
    const size_t a = o.out.find("20261130T010000Z-aaaaaa");
    const size_t b = o.out.find("20261130T020000Z-bbbbbb");
    REQUIRE(a != std::string::npos);
    REQUIRE(b != std::string::npos);
    CHECK(a < b);
    const std::string line_a = o.out.substr(a, o.out.find('\n', a) - a);
    CHECK(line_a.find("triage") != std::string::npos);
    CHECK(line_a.find("succeeded") != std::string::npos);
    CHECK(line_a.find("42.5") != std::string::npos);
    const std::string line_b = o.out.substr(b, o.out.find('\n', b) - b);
    CHECK(line_b.find("interrupted") != std::string::npos);
}

TEST_CASE("runs show: timeline on stdout, SVG with --svg, prefix ids") {
    runs_dir dir;
    const fs::path svg = dir.path / "t.svg";
    auto o = tachyon_cli({"runs", "show", "20261130T01", "--dir", dir.path.string(), "--svg", svg.string()});
    CHECK(o.code == 0);
    CHECK(o.out.find("turn 1") != std::string::npos);
    CHECK(o.out.find("search_logs") != std::string::npos);
    CHECK(o.out.find("REJECTED") != std::string::npos);  // a call the model wrote that never ran
    REQUIRE(fs::exists(svg));
    std::ifstream in(svg);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str().find("class=\"lane tool-lane\"") != std::string::npos);
}

TEST_CASE("runs show: an unknown run id is a clear error with exit status 1") {
    runs_dir dir;
    auto o = tachyon_cli({"runs", "show", "nope", "--dir", dir.path.string()});
    CHECK(o.code == 1);
    CHECK(o.err.find("unknown run id 'nope'") != std::string::npos);
    auto ambiguous = tachyon_cli({"runs", "show", "2026", "--dir", dir.path.string()});
    CHECK(ambiguous.code == 1);
    CHECK(ambiguous.err.find("ambiguous") != std::string::npos);
    auto no_dir = tachyon_cli({"runs", "list", "--dir", (dir.path / "missing").string()});
    CHECK(no_dir.code == 1);
    CHECK(no_dir.err.find("missing") != std::string::npos);
}
