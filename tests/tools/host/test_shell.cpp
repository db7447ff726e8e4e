#include "tools/host/shell.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tools/host/sandbox.h"

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

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A root the tool may read (scripts, a data file, a large file) and a
// secret beside it.
struct tree {
    fs::path base;
    fs::path root;
    fs::path outside;
    tree() {
        auto s = make_scratch_dir();
        REQUIRE_MESSAGE(s.ok(), why(s));
        base = fs::canonical(*s);
        root = base / "root";
        outside = base / "outside";
        fs::create_directories(root / "sub");
        fs::create_directories(outside);
        write_file(root / "data.txt", "one\ntwo\nthree\n");
        write_file(root / "sub" / "a.log", "x\n");
        write_file(root / "status.sh", "echo out; echo err >&2; exit 3\n");
        write_file(root / "slow.sh", "sleep 10; echo never\n");
        write_file(root / "big.bin", std::string(100000, 'z'));
        write_file(outside / "secret.txt", "the-secret\n");
    }
    ~tree() {
        std::error_code ec;
        fs::remove_all(base, ec);
    }
};

shell_settings test_settings(const tree& t) {
    shell_settings s;
    s.allowed_programs = {"echo", "sleep", "sh", "head", "pwd", "env", "cat", "wc", "ls", "mktemp",
                          "find", "sed", "awk", "xargs", "tar"};
    s.default_cwd = t.root;
    s.cwd_roots = {t.root};
    s.default_timeout_ms = 20'000;
    return s;
}

std::shared_ptr<tool> make(const shell_settings& s) {
    auto t = make_shell_tool(s);
    REQUIRE_MESSAGE(t.ok(), why(t));
    return *t;
}

bool have_landlock() {
    if (landlock_abi() >= 1) return true;
    MESSAGE("skipped: this kernel has no Landlock");
    return false;
}

}  // namespace

TEST_CASE("shell: runs an allowed program, exit status and output in the result") {
    if (!have_landlock()) return;
    tree tr;
    auto t = make(test_settings(tr));
    auto r = t->invoke(R"js({"program":"echo","args":["hello","world"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->rfind("exit status 0 (sandbox: landlock ABI ", 0) == 0);
    CHECK(r->find("\nhello world\n") != std::string::npos);
    r = t->invoke(R"js({"program":"sh","args":["status.sh"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->rfind("exit status 3", 0) == 0);
    CHECK(r->find("out\n") != std::string::npos);
    CHECK(r->find("err\n") != std::string::npos);
}

TEST_CASE("shell: a program off the allowlist is refused") {
    tree tr;
    auto t = make(test_settings(tr));
    for (const char* args : {R"js({"program":"rm","args":["-rf","/tmp/x"]})js", R"js({"program":"/bin/rm"})js",
                             R"js({"program":"../bin/echo"})js"}) {
        auto r = t->invoke(args, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().message.find("is not allowed") != std::string::npos);
        CHECK(r.err().message.find("allowed: awk, cat") != std::string::npos);
    }
    auto bad = make_shell_tool([&] {
        auto s = test_settings(tr);
        s.allowed_programs.push_back("no-such-program-xyz");
        return s;
    }());
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("no-such-program-xyz") != std::string::npos);
}

TEST_CASE("shell: arguments are not interpreted by a shell") {
    if (!have_landlock()) return;
    tree tr;
    auto t = make(test_settings(tr));
    auto r = t->invoke(R"js({"program":"echo","args":["a;b","$(id)","`id`","*","x && y","|"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("\na;b $(id) `id` * x && y |\n") != std::string::npos);
}

TEST_CASE("shell: a timeout kills the process group") {
    if (!have_landlock()) return;
    tree tr;
    auto t = make(test_settings(tr));
    // sh starts sleep as a child: killing only sh would leave sleep holding the pipe
    auto r = t->invoke(R"js({"program":"sh","args":["slow.sh"],"timeout_ms":300})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::timeout);
    CHECK(r.err().message.find("timed out after 300 ms") != std::string::npos);
    CHECK(r.err().message.find("never") == std::string::npos);
    r = t->invoke(R"js({"program":"sleep","args":["10"],"timeout_ms":200})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::timeout);
}

TEST_CASE("shell: the cancel flag stops a running program") {
    if (!have_landlock()) return;
    tree tr;
    auto t = make(test_settings(tr));
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
    if (!have_landlock()) return;
    tree tr;
    auto s = test_settings(tr);
    s.max_output_bytes = 1000;
    auto t = make(s);
    auto r = t->invoke(R"js({"program":"head","args":["-c","100000","big.bin"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->rfind("exit status 0", 0) == 0);
    CHECK(r->size() < 1300);
    CHECK(r->find("99000 more bytes dropped") != std::string::npos);
}

TEST_CASE("shell: clean environment and the working directory") {
    if (!have_landlock()) return;
    tree tr;
    ::setenv("TACHYON_SECRET_TEST_VAR", "leak", 1);
    auto t = make(test_settings(tr));
    auto r = t->invoke(R"js({"program":"env"})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("TACHYON_SECRET_TEST_VAR") == std::string::npos);
    CHECK(r->find("PATH=/usr/local/bin:/usr/bin:/bin") != std::string::npos);
    CHECK(r->find("TMPDIR=") != std::string::npos);
    r = t->invoke(R"js({"program":"pwd","args":[],"cwd":"sub"})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find((tr.root / "sub").string() + "\n") != std::string::npos);

    r = t->invoke(R"js({"program":"pwd","cwd":"/"})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("outside the allowed directories") != std::string::npos);
    r = t->invoke(R"js({"program":"pwd","cwd":"/no/such/dir"})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("/no/such/dir") != std::string::npos);
    // Without cwd_roots, the default cwd is the root.
    auto s = test_settings(tr);
    s.cwd_roots.clear();
    s.default_cwd = tr.root / "sub";
    r = make(s)->invoke(R"js({"program":"pwd","cwd":".."})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("outside the allowed directories") != std::string::npos);
}

TEST_CASE("shell: the five exec escapes are refused and run nothing") {
    if (!have_landlock()) return;
    tree tr;
    write_file(tr.root / "x.tar", "");
    auto t = make(test_settings(tr));
    struct escape {
        const char* args;
        const char* named;
    };
    const escape escapes[] = {
        {R"js({"program":"find","args":[".","-exec","id",";"]})js", "'-exec'"},
        {R"js({"program":"sed","args":["-n","1e id","data.txt"]})js", "'1e id'"},
        {R"js({"program":"awk","args":["BEGIN{system(\"id\")}"]})js", "system()"},
        {R"js({"program":"xargs","args":["id"]})js", "xargs is refused"},
        {R"js({"program":"tar","args":["-cf","x.tar","--checkpoint=1","--checkpoint-action=exec=id","data.txt"]})js",
         "'--checkpoint-action=exec=id'"},
    };
    int n_escapes = 0;
    for (const auto& e : escapes) {
        CAPTURE(std::string(e.args));
        auto r = t->invoke(e.args, {});
        const std::string text = r.ok() ? *r : r.err().message;
        n_escapes += text.find("uid=") != std::string::npos;
        CHECK_FALSE(r.ok());
        CHECK(text.find(e.named) != std::string::npos);
    }
    CHECK(n_escapes == 0);
    // Read-only uses of the same programs work.
    auto r = t->invoke(R"js({"program":"find","args":[".","-name","*.log"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("./sub/a.log") != std::string::npos);
    r = t->invoke(R"js({"program":"sed","args":["-n","2p","data.txt"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("\ntwo\n") != std::string::npos);
    r = t->invoke(R"js({"program":"awk","args":["{print $1}","data.txt"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("\none\ntwo\nthree\n") != std::string::npos);
}

TEST_CASE("shell: files outside the roots are refused, and unreadable even past the checks") {
    if (!have_landlock()) return;
    tree tr;
    auto t = make(test_settings(tr));
    for (const char* args : {R"js({"program":"cat","args":["/etc/hostname"]})js",
                             R"js({"program":"cat","args":["../outside/secret.txt"]})js",
                             R"js({"program":"cat","args":["data.txt","/etc/passwd"]})js"}) {
        CAPTURE(std::string(args));
        auto r = t->invoke(args, {});
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().message.find("names a path outside the allowed directories") != std::string::npos);
    }
    // A symlink made after the check is the sandbox's business: a relative
    // name through a link inside the root is refused by the check, and a
    // script that reads outside is stopped by Landlock.
    write_file(tr.root / "peek.sh", "cat " + (tr.outside / "secret.txt").string() + "; cat /etc/passwd\n");
    auto r = t->invoke(R"js({"program":"sh","args":["peek.sh"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("the-secret") == std::string::npos);
    CHECK(r->find("root:") == std::string::npos);
    CHECK(r->find("Permission denied") != std::string::npos);
}

TEST_CASE("shell: legitimate commands work, the scratch directory is writable and removed") {
    if (!have_landlock()) return;
    tree tr;
    auto t = make(test_settings(tr));
    auto r = t->invoke(R"js({"program":"ls","args":["sub"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("\na.log\n") != std::string::npos);
    r = t->invoke(R"js({"program":"wc","args":["-l","data.txt"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("\n3 data.txt\n") != std::string::npos);
    // mktemp makes a file in TMPDIR, the call's scratch directory.
    r = t->invoke(R"js({"program":"mktemp"})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->rfind("exit status 0", 0) == 0);
    const std::string made = r->substr(r->find('\n') + 1, r->find('\n', r->find('\n') + 1) - r->find('\n') - 1);
    CHECK(made.find("tachyon-shell-") != std::string::npos);
    CHECK_FALSE(fs::exists(fs::path(made).parent_path()));
    // Writing beside the data is not allowed.
    write_file(tr.root / "write.sh", "echo x > new.txt\n");
    r = t->invoke(R"js({"program":"sh","args":["write.sh"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->rfind("exit status 0", 0) != 0);
    CHECK_FALSE(fs::exists(tr.root / "new.txt"));
}

TEST_CASE("shell: without Landlock calls are refused unless the sandbox is none") {
    tree tr;
    auto s = test_settings(tr);
    s.assume_no_landlock = true;
    auto t = make(s);
    auto r = t->invoke(R"js({"program":"echo","args":["hi"]})js", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::unsupported);
    CHECK(r.err().message.find("no Landlock") != std::string::npos);
    CHECK(r.err().message.find(R"("sandbox": "none")") != std::string::npos);

    s.sandbox = shell_sandbox::none;
    t = make(s);
    r = t->invoke(R"js({"program":"echo","args":["hi"]})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->find("(sandbox: none, network: ") != std::string::npos);
    CHECK(r->find("\nhi\n") != std::string::npos);
    // The checks in front of the sandbox still apply.
    r = t->invoke(R"js({"program":"find","args":[".","-exec","id",";"]})js", {});
    REQUIRE_FALSE(r.ok());
    r = t->invoke(R"js({"program":"cat","args":["/etc/hostname"]})js", {});
    REQUIRE_FALSE(r.ok());

    CHECK(parse_shell_sandbox("landlock").value() == shell_sandbox::landlock);
    CHECK(parse_shell_sandbox("none").value() == shell_sandbox::none);
    auto bad = parse_shell_sandbox("chroot");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("'chroot'") != std::string::npos);
    CHECK(bad.err().message.find(R"("landlock" or "none")") != std::string::npos);
}

TEST_CASE("shell: with sandbox none, the result says whether the network was isolated") {
    tree tr;
    auto s = test_settings(tr);
    s.sandbox = shell_sandbox::none;
    s.cwd_roots = {"/proc"};  // not /proc/net: that is /proc/self/net, resolved here in the parent
    s.default_cwd = "/proc";
    auto t = make(s);
    auto r = t->invoke(R"js({"program":"echo"})js", {});
    REQUIRE_MESSAGE(r.ok(), why(r));
    const bool isolated = r->find("(sandbox: none, network: isolated)") != std::string::npos;
    const bool shared = r->find("(sandbox: none, network: not isolated)") != std::string::npos;
    CHECK(isolated != shared);
    MESSAGE("network isolation on this machine: " << std::string(isolated ? "yes" : "no (best-effort)"));
    if (isolated) {
        // In its own network namespace the child sees only a loopback device.
        auto dev = t->invoke(R"js({"program":"head","args":["-n","50","net/dev"]})js", {});
        REQUIRE_MESSAGE(dev.ok(), why(dev));
        CHECK(dev->find("lo:") != std::string::npos);
        CHECK(dev->find("eth") == std::string::npos);
        size_t n_devices = 0;
        for (char c : dev->substr(dev->find('\n'))) n_devices += c == ':';  // after the status line
        CHECK(n_devices == 1);
    }
}
