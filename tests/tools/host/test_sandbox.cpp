#include "tools/host/sandbox.h"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

using namespace tachyon;
using namespace tachyon::tools;
namespace fs = std::filesystem;

namespace {

template <class T>
std::string why(const tachyon::result<T>& r) {
    return r.ok() ? std::string() : r.err().message;
}

void write_file(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

// root/ (readable), outside/secret.txt (not), and a scratch directory.
struct tree {
    fs::path base;
    fs::path root;
    fs::path outside;
    fs::path scratch;
    tree() {
        auto s = make_scratch_dir();
        REQUIRE_MESSAGE(s.ok(), why(s));
        base = *s;
        root = base / "root";
        outside = base / "outside";
        fs::create_directories(root / "sub");
        fs::create_directories(outside);
        write_file(root / "data.txt", "one\ntwo\nthree\n");
        write_file(outside / "secret.txt", "the-secret\n");
        auto sc = make_scratch_dir();
        REQUIRE_MESSAGE(sc.ok(), why(sc));
        scratch = *sc;
    }
    ~tree() {
        std::error_code ec;
        fs::remove_all(base, ec);
        fs::remove_all(scratch, ec);
    }
};

std::vector<fs::path> with_deps(std::initializer_list<const char*> programs) {
    std::vector<fs::path> out;
    for (const char* p : programs) {
        out.emplace_back(p);
        for (auto& d : exec_dependencies(p)) out.push_back(d);
    }
    return out;
}

sandbox_policy policy_for(const tree& t, std::vector<fs::path> exec_files) {
    sandbox_policy p;
    p.read_dirs = {t.root};
    for (auto& s : system_read_paths()) p.read_dirs.push_back(s);
    p.exec_files = std::move(exec_files);
    p.scratch = t.scratch;
    return p;
}

struct ran {
    int exit_code = -1;  // -1: killed by a signal
    std::string output;
};

// Runs argv in the sandbox, no option checks in front of it; everything
// for the child is built before fork.
ran run_in(const sandbox& box, const std::vector<std::string>& args, const fs::path& cwd) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    char env_path[] = "PATH=/usr/bin:/bin";
    char* envp[] = {env_path, nullptr};
    const std::string cwd_s = cwd.string();
    int out[2];
    REQUIRE(::pipe(out) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(out[1], 1);
        ::dup2(out[1], 2);
        ::close(out[0]);
        if (::chdir(cwd_s.c_str()) != 0 || box.enter() != 0) ::_exit(126);
        ::execve(argv[0], argv.data(), envp);
        ::_exit(127);
    }
    ::close(out[1]);
    ran r;
    char buf[4096];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) r.output.append(buf, static_cast<size_t>(n));
    ::close(out[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    return r;
}

// The same, for a test body run in the sandboxed child itself: returns its exit code.
template <class F>
int exit_code_in(const sandbox& box, F body) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (box.enter() != 0) ::_exit(126);
        ::_exit(body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool have_landlock() {
    if (landlock_abi() >= 1) return true;
    MESSAGE("skipped: this kernel has no Landlock");
    return false;
}

}  // namespace

TEST_CASE("sandbox: the ELF interpreter of a dynamic program is found") {
    auto deps = exec_dependencies("/bin/sh");
    REQUIRE_FALSE(deps.empty());
    CHECK(deps.front().filename().string().find("ld-") == 0);
    CHECK(exec_dependencies("/no/such/program").empty());
}

TEST_CASE("sandbox: Landlock confines reading to the roots, at every ABI level the kernel has") {
    if (!have_landlock()) return;
    tree t;
    for (int abi = 1; abi <= landlock_abi(); ++abi) {
        CAPTURE(abi);
        auto box = sandbox::prepare(policy_for(t, with_deps({"/bin/sh", "/usr/bin/cat", "/usr/bin/wc"})), abi);
        REQUIRE_MESSAGE(box.ok(), why(box));
        CHECK(box->abi() == abi);
        auto inside = run_in(*box, {"/usr/bin/wc", "-l", "data.txt"}, t.root);
        CHECK(inside.exit_code == 0);
        CHECK(inside.output.find("3 data.txt") != std::string::npos);
        // Through a shell, so no argument check is in the way.
        auto secret = run_in(*box, {"/bin/sh", "-c", "cat ../outside/secret.txt; cat /etc/passwd; cat /etc/hostname"},
                             t.root);
        CHECK(secret.output.find("the-secret") == std::string::npos);
        CHECK(secret.output.find("root:") == std::string::npos);
        CHECK(secret.output.find("Permission denied") != std::string::npos);
        CHECK(secret.exit_code != 0);
    }
    // The control: the same command unsandboxed reads the secret.
    std::ifstream in(t.outside / "secret.txt");
    std::string line;
    CHECK((std::getline(in, line) && line == "the-secret"));
}

TEST_CASE("sandbox: writing works in scratch only") {
    if (!have_landlock()) return;
    tree t;
    auto box = sandbox::prepare(policy_for(t, with_deps({"/bin/sh", "/usr/bin/cat", "/usr/bin/mkdir"})));
    REQUIRE_MESSAGE(box.ok(), why(box));
    const std::string scratch = t.scratch.string();
    auto r = run_in(*box,
                    {"/bin/sh", "-c",
                     "echo kept > " + scratch + "/note.txt && mkdir " + scratch + "/d && cat " + scratch +
                         "/note.txt; echo lost > new.txt; echo lost > ../outside/new.txt; echo lost >> data.txt"},
                    t.root);
    CHECK(r.output.find("kept") != std::string::npos);
    CHECK(fs::exists(t.scratch / "note.txt"));
    CHECK(fs::is_directory(t.scratch / "d"));
    CHECK_FALSE(fs::exists(t.root / "new.txt"));
    CHECK_FALSE(fs::exists(t.outside / "new.txt"));
    CHECK(fs::file_size(t.root / "data.txt") == 14);
}

TEST_CASE("sandbox: programs not listed cannot be executed, whoever starts them") {
    if (!have_landlock()) return;
    tree t;
    write_file(t.root / "x.txt", "x\n");
    const std::string marker = (t.scratch / "marker").string();
    // Each of these makes an allowed program run another one (touch, or sh
    // then touch); none may leave the marker.
    const std::vector<std::vector<std::string>> escapes = {
        {"/usr/bin/find", t.root.string(), "-name", "x.txt", "-exec", "/usr/bin/touch", marker, ";"},
        {"/usr/bin/sed", "-n", "1e /usr/bin/touch " + marker, t.root.string() + "/x.txt"},
        {"/usr/bin/awk", "BEGIN{system(\"/usr/bin/touch " + marker + "\")}"},
        {"/usr/bin/xargs", "-a", t.root.string() + "/x.txt", "/usr/bin/touch", marker},
        {"/usr/bin/tar", "-cf", t.scratch.string() + "/a.tar", "--checkpoint=1",
         "--checkpoint-action=exec=/usr/bin/touch " + marker, "-C", t.root.string(), "x.txt"},
    };
    const auto listed = with_deps({"/usr/bin/find", "/usr/bin/sed", "/usr/bin/awk", "/usr/bin/xargs", "/usr/bin/tar"});
    auto box = sandbox::prepare(policy_for(t, listed));
    REQUIRE_MESSAGE(box.ok(), why(box));
    auto more = listed;
    for (auto& p : with_deps({"/bin/sh", "/usr/bin/touch"})) more.push_back(p);
    auto control = sandbox::prepare(policy_for(t, more));
    REQUIRE_MESSAGE(control.ok(), why(control));
    int n_escapes = 0;
    for (const auto& argv : escapes) {
        CAPTURE(argv[0]);
        fs::remove(marker);
        auto r = run_in(*box, argv, t.scratch);
        n_escapes += fs::exists(marker);
        CHECK_FALSE(fs::exists(marker));
        // The control proves the escape is real: with sh and touch listed it works.
        fs::remove(marker);
        auto c = run_in(*control, argv, t.scratch);
        CHECK_MESSAGE(fs::exists(marker), c.output);
    }
    CHECK(n_escapes == 0);
}

TEST_CASE("sandbox: seccomp keeps the command off the network") {
    if (!have_landlock()) return;
    tree t;
    // A listener on loopback that a connect would reach.
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listener >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    REQUIRE(::listen(listener, 4) == 0);

    auto connect_tcp = [&addr] {
        const int s = ::socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0) return errno == EACCES ? 10 : 11;
        return ::connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ? 0 : 12;
    };
    // Control: unsandboxed, the connect succeeds.
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(connect_tcp());
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    const int control = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    CHECK(control >= 0);
    if (control >= 0) ::close(control);

    auto box = sandbox::prepare(policy_for(t, {}));
    REQUIRE_MESSAGE(box.ok(), why(box));
    CHECK(exit_code_in(*box, connect_tcp) == 10);
    // No connection arrived.
    ::fcntl(listener, F_SETFL, O_NONBLOCK);
    CHECK(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) < 0);
    ::close(listener);

    // Every family, AF_UNIX too; socketpair stays; io_uring is gone.
    CHECK(exit_code_in(*box, [] { return ::socket(AF_UNIX, SOCK_STREAM, 0) < 0 && errno == EACCES ? 0 : 1; }) == 0);
    CHECK(exit_code_in(*box, [] { return ::socket(AF_INET6, SOCK_DGRAM, 0) < 0 && errno == EACCES ? 0 : 1; }) == 0);
    CHECK(exit_code_in(*box, [] {
              int sv[2];
              return ::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 ? 0 : 1;
          }) == 0);
    CHECK(exit_code_in(*box, [] {
              char params[120] = {};
              return ::syscall(__NR_io_uring_setup, 4, params) < 0 && errno == EPERM ? 0 : 1;
          }) == 0);
    // A process and a thread can still be made.
    CHECK(exit_code_in(*box, [] {
              const pid_t p = ::fork();
              if (p == 0) ::_exit(7);
              int st = 0;
              return p > 0 && ::waitpid(p, &st, 0) == p && WEXITSTATUS(st) == 7 ? 0 : 1;
          }) == 0);
}

TEST_CASE("sandbox: prepare says what is wrong") {
    if (!have_landlock()) return;
    tree t;
    auto p = policy_for(t, {"/no/such/program"});
    auto box = sandbox::prepare(p);
    REQUIRE_FALSE(box.ok());
    CHECK(box.err().message.find("/no/such/program") != std::string::npos);
    box = sandbox::prepare(policy_for(t, {}), landlock_abi() + 1);
    REQUIRE_FALSE(box.ok());
    CHECK(box.err().message.find("Landlock ABI") != std::string::npos);
}
