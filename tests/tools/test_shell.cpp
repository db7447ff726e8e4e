#include "tools/shell.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

using namespace tachyon;
using namespace tachyon::tools;
namespace fs = std::filesystem;

namespace {

// The error message of a failed result, for a check's message (evaluated
// even when the check passes, so it must not touch err() on a value).
template <class T>
std::string why(const tachyon::result<T>& r) {
    return r.ok() ? std::string() : r.err().message;
}

shell_settings test_settings() {
    shell_settings s;
    s.allowed_programs = {"echo", "sleep", "sh", "head", "pwd"};
    s.default_cwd = TACHYON_BINARY_DIR;
    s.default_timeout_ms = 20'000;
    return s;
}

std::shared_ptr<tool> make(const shell_settings& s = test_settings()) {
    auto t = make_shell_tool(s);
    REQUIRE_MESSAGE(t.ok(), why(t));
    return *t;
}

}  // namespace

TEST_CASE("shell: runs an allowed program, exit status and output in the result") {
    auto t = make();
    auto r = t->invoke(R"js({"program":"echo","args":["hello","world"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->rfind("exit status 0", 0) == 0);
    CHECK(r->find("\nhello world\n") != std::string::npos);
    r = t->invoke(R"js({"program":"sh","args":["-c","echo out; echo err >&2; exit 3"]})js", {});
    REQUIRE(r.ok());
    CHECK(r->rfind("exit status 3", 0) == 0);
    CHECK(r->find("out\n") != std::string::npos);
    CHECK(r->find("err\n") != std::string::npos);
}

TEST_CASE("shell: a program off the allowlist is refused") {
    auto t = make();
    for (const char* args : {R"js({"program":"rm","args":["-rf","/tmp/x"]})js", R"js({"program":"/bin/rm"})js",
                             R"js({"program":"../bin/echo"})js"}) {
        auto r = t->invoke(args, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().message.find("is not allowed") != std::string::npos);
        CHECK(r.err().message.find("allowed: echo") != std::string::npos);
    }
    auto bad = make_shell_tool([] {
        auto s = test_settings();
        s.allowed_programs.push_back("no-such-program-xyz");
        return s;
    }());
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("no-such-program-xyz") != std::string::npos);
}

TEST_CASE("shell: arguments are not interpreted by a shell") {
    auto t = make();
    auto r = t->invoke(R"js({"program":"echo","args":["a;b","$(id)","`id`","*","x && y","|"]})js", {});
    REQUIRE(r.ok());
    CHECK(r->find("\na;b $(id) `id` * x && y |\n") != std::string::npos);
}

TEST_CASE("shell: a timeout kills the process group") {
    auto t = make();
    // sh starts sleep as a child: killing only sh would leave sleep holding the pipe
    auto r = t->invoke(R"js({"program":"sh","args":["-c","sleep 10; echo never"],"timeout_ms":300})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::timeout);
    CHECK(r.err().message.find("timed out after 300 ms") != std::string::npos);
    CHECK(r.err().message.find("never") == std::string::npos);
    r = t->invoke(R"js({"program":"sleep","args":["10"],"timeout_ms":200})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::timeout);
}

TEST_CASE("shell: the cancel flag stops a running program") {
    auto t = make();
    std::atomic<bool> cancel{false};
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel = true;
    });
    call_context ctx;
    ctx.cancel = &cancel;
    auto r = t->invoke(R"js({"program":"sleep","args":["10"]})js", ctx);
    canceller.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::cancelled);
}

TEST_CASE("shell: output beyond the cap is dropped and counted") {
    auto s = test_settings();
    s.max_output_bytes = 1000;
    auto t = make(s);
    auto r = t->invoke(R"js({"program":"head","args":["-c","100000","/dev/zero"]})js", {});
    REQUIRE(r.ok());
    CHECK(r->rfind("exit status 0", 0) == 0);
    CHECK(r->size() < 1300);
    CHECK(r->find("99000 more bytes dropped") != std::string::npos);
}

TEST_CASE("shell: clean environment and the working directory") {
    ::setenv("TACHYON_SECRET_TEST_VAR", "leak", 1);
    auto t = make();
    auto r = t->invoke(R"js({"program":"sh","args":["-c","env"]})js", {});
    REQUIRE(r.ok());
    CHECK(r->find("TACHYON_SECRET_TEST_VAR") == std::string::npos);
    CHECK(r->find("PATH=/usr/local/bin:/usr/bin:/bin") != std::string::npos);
    r = t->invoke(R"js({"program":"pwd","args":[],"cwd":"/tmp"})js", {});
    REQUIRE(r.ok());
    CHECK(r->find("\n/tmp\n") != std::string::npos);

    auto s = test_settings();
    s.cwd_roots = {TACHYON_BINARY_DIR};
    auto confined = make(s);
    r = confined->invoke(R"js({"program":"pwd","cwd":"/"})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("outside the allowed directories") != std::string::npos);
    r = confined->invoke(R"js({"program":"pwd","cwd":"/no/such/dir"})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("/no/such/dir") != std::string::npos);
}

TEST_CASE("shell: the result says whether the network was isolated") {
    auto t = make();
    auto r = t->invoke(R"js({"program":"echo"})js", {});
    REQUIRE(r.ok());
    const bool isolated = r->find("(network: isolated)") != std::string::npos;
    const bool shared = r->find("(network: not isolated)") != std::string::npos;
    CHECK(isolated != shared);
    MESSAGE("network isolation on this machine: " << std::string(isolated ? "yes" : "no (best-effort)"));
    if (isolated) {
        // In its own network namespace the child sees only a loopback device.
        auto dev = t->invoke(R"js({"program":"head","args":["-n","50","/proc/net/dev"]})js", {});
        REQUIRE(dev.ok());
        CHECK(dev->find("lo:") != std::string::npos);
        CHECK(dev->find("eth") == std::string::npos);
        size_t n_devices = 0;
        for (char c : dev->substr(dev->find('\n'))) n_devices += c == ':';  // after the status line
        CHECK(n_devices == 1);
    }
}
