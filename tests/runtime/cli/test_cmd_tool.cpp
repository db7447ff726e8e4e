// `tachyon tool` as a user runs it: the command function in-process, over a
// temporary directory.
#include "runtime/cli/commands.h"

#include <doctest/doctest.h>

#include "tests/runtime/cli/cli_capture.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace tachyon;
namespace fs = std::filesystem;

namespace {

using testing::tachyon_cli;

// docs/notes.txt under a directory of the test's own.
struct docs_dir {
    fs::path path = fs::path(TACHYON_BINARY_DIR) / "test_tmp" / ("cmd_tool-" + std::to_string(::getpid()));
    docs_dir() {
        fs::remove_all(path);
        fs::create_directories(path / "docs");
        std::ofstream(path / "docs" / "notes.txt") << "first line\nsecond line\n";
        std::ofstream(path / "secret.txt") << "not for the model\n";
    }
    ~docs_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string docs() const { return (path / "docs").string(); }
};

const std::string roots_setting = R"({"roots": ["{dir}"]})";

}  // namespace

TEST_CASE("tool: a read_file call prints the file, settings filled from --input") {
    docs_dir d;
    auto o = tachyon_cli({"tool", "read_file", "--settings", roots_setting, "--input", "dir=" + d.docs(), R"({"path": "notes.txt"})"});
    CHECK_MESSAGE(o.code == 0, o.err);
    CHECK(o.out == "first line\nsecond line\n");
    CHECK(o.err.empty());

    // settings given as an agent file gives them, without placeholders; max_bytes caps the read
    o = tachyon_cli({"tool", "read_file", "-s", R"({"roots": ")" + d.docs() + R"(", "max_bytes": 5})", R"({"path": "notes.txt"})"});
    CHECK_MESSAGE(o.code == 0, o.err);
    CHECK(o.out.rfind("first\n[read_file: showed bytes 0..5 of 23", 0) == 0);
}

TEST_CASE("tool: a bad argument prints the validation error the model would read") {
    docs_dir d;
    auto o = tachyon_cli({"tool", "read_file", "--settings", roots_setting, "--input", "dir=" + d.docs(), R"({"path": 3})"});
    CHECK(o.code == 1);
    CHECK(o.out.empty());
    CHECK_MESSAGE(o.err.find("read_file: argument 'path' must be a string") != std::string::npos, o.err);
    o = tachyon_cli({"tool", "read_file", "--settings", roots_setting, "--input", "dir=" + d.docs(), R"({"path": "notes.txt", "mode": "x"})"});
    CHECK(o.code == 1);
    CHECK_MESSAGE(o.err.find("'mode'") != std::string::npos, o.err);
    o = tachyon_cli({"tool", "read_file", "--settings", roots_setting, "--input", "dir=" + d.docs()});  // {} lacks "path"
    CHECK(o.code == 1);
    CHECK_MESSAGE(o.err.find("'path'") != std::string::npos, o.err);
}

TEST_CASE("tool: a refused or failing call prints the tool's error with exit status 1") {
    docs_dir d;
    auto o = tachyon_cli({"tool", "read_file", "--settings", roots_setting, "--input", "dir=" + d.docs(), R"({"path": "../secret.txt"})"});
    CHECK(o.code == 1);
    CHECK_MESSAGE(o.err.find("error: read_file: '../secret.txt' is outside the allowed directories") != std::string::npos, o.err);
    CHECK(o.out.find("not for the model") == std::string::npos);
    o = tachyon_cli({"tool", "http_get", R"({"url": "http://127.0.0.1:9/"})"});
    CHECK(o.code == 1);
    CHECK_MESSAGE(o.err.find("add '127.0.0.1:9' to the http_get setting allowed_hosts") != std::string::npos, o.err);
    o = tachyon_cli({"tool", "read_file", "--settings", R"({"roots": "/no/such/dir"})", R"({"path": "x"})"});
    CHECK(o.code == 1);
    CHECK_MESSAGE(o.err.find("/no/such/dir") != std::string::npos, o.err);
}

TEST_CASE("tool: an unknown tool is an error naming the known ones") {
    auto o = tachyon_cli({"tool", "read_files", "{}"});
    CHECK(o.code == 2);
    CHECK_MESSAGE(o.err.find("unknown tool 'read_files'") != std::string::npos, o.err);
    for (const char* known : {"read_file", "shell", "http_get", "search_logs", "verify_root_cause"})
        CHECK_MESSAGE(o.err.find(known) != std::string::npos, known);
    o = tachyon_cli({"tool"});
    CHECK(o.code == 2);
    CHECK_MESSAGE(o.err.find("needs NAME") != std::string::npos, o.err);
}

TEST_CASE("tool: usage errors name the option and exit with status 2") {
    docs_dir d;
    auto o = tachyon_cli({"tool", "read_file", "--settings", "roots=/tmp", "{}"});
    CHECK(o.code == 2);
    CHECK_MESSAGE(o.err.find("--settings: expected a JSON object") != std::string::npos, o.err);
    o = tachyon_cli({"tool", "read_file", "--settings", roots_setting, R"({"path": "notes.txt"})"});  // no --input dir
    CHECK(o.code == 2);
    CHECK_MESSAGE(o.err.find("{dir}") != std::string::npos, o.err);
    CHECK(o.err.find("--settings") != std::string::npos);
    o = tachyon_cli({"tool", "read_file", "--settings", R"({"root": "/tmp"})", "{}"});
    CHECK(o.code == 2);
    CHECK_MESSAGE(o.err.find("unknown setting 'root'") != std::string::npos, o.err);
    o = tachyon_cli({"tool", "read_file", "--input", "novalue", "{}"});
    CHECK(o.code == 2);
    CHECK_MESSAGE(o.err.find("--input 'novalue': expected KEY=VALUE") != std::string::npos, o.err);
}

TEST_CASE("tool: --list names the built-ins, --schema prints a tool's argument schema") {
    auto o = tachyon_cli({"tool", "--list"});
    CHECK(o.code == 0);
    CHECK(o.out.find("read_file\n") != std::string::npos);
    CHECK(o.out.find("http_get\n") != std::string::npos);
    CHECK(o.out.find("search_logs\n") != std::string::npos);
    o = tachyon_cli({"tool", "read_file", "--schema"});
    CHECK(o.code == 0);
    CHECK(o.out.find("\"path\"") != std::string::npos);
    CHECK(o.out.find("\"required\":[\"path\"]") != std::string::npos);
}
