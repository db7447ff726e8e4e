#include "tools/host/read_file.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

// Whether this kernel has openat2 (Linux >= 5.6, and no filter blocking it).
bool have_openat2() {
    const int fd = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    const int r = open_beneath(fd, ".", resolve_mode::openat2);
    ::close(fd);
    if (r >= 0) ::close(r);
    return r != -ENOSYS && r != -EPERM;
}

// The resolve modes to test: both where the kernel has openat2.
std::vector<resolve_mode> modes() {
    if (have_openat2()) return {resolve_mode::openat2, resolve_mode::walk};
    MESSAGE("openat2 is not available: testing the walk only");
    return {resolve_mode::walk};
}

const char* mode_name(resolve_mode m) { return m == resolve_mode::openat2 ? "openat2" : m == resolve_mode::walk ? "walk" : "automatic"; }

// root/ (allowed): notes.txt, sub/deep.txt, link_out -> ../outside/secret.txt,
// link_in -> notes.txt, fifo; outside/secret.txt (not allowed).
struct sandbox {
    fs::path base = fs::path(TACHYON_BINARY_DIR) / "test_tmp" / ("read_file-" + std::to_string(::getpid()));
    fs::path root = base / "root";
    fs::path outside = base / "outside";
    std::shared_ptr<tool> t;

    explicit sandbox(size_t max_bytes = 64 * 1024, resolve_mode mode = resolve_mode::automatic) {
        fs::remove_all(base);
        fs::create_directories(root / "sub");
        fs::create_directories(outside);
        write(root / "notes.txt", "hello notes\n");
        write(root / "sub" / "deep.txt", "deep file\n");
        write(outside / "secret.txt", "secret\n");
        fs::create_symlink("../outside/secret.txt", root / "link_out");
        fs::create_symlink("notes.txt", root / "link_in");
        fs::create_directory_symlink(outside, root / "dir_out");
        REQUIRE(::mkfifo((root / "fifo").c_str(), 0600) == 0);
        auto made = make_read_file_tool({{root}, max_bytes, mode});
        REQUIRE(made.ok());
        t = *made;
    }
    ~sandbox() {
        std::error_code ec;
        fs::remove_all(base, ec);
    }
    static void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
    result<std::string> read(const std::string& args_json) { return t->invoke(args_json, {}); }
    result<std::string> read_path(const std::string& path) { return read("{\"path\":\"" + path + "\"}"); }
};

}  // namespace

TEST_CASE("read_file: files under the root, by relative or absolute path") {
    for (const resolve_mode mode : modes()) {
        const std::string resolve = mode_name(mode);
        CAPTURE(resolve);
        sandbox s(64 * 1024, mode);
        auto r = s.read_path("notes.txt");
        REQUIRE_MESSAGE(r.ok(), why(r));
        CHECK(*r == "hello notes\n");
        r = s.read_path((s.root / "sub" / "deep.txt").string());
        REQUIRE(r.ok());
        CHECK(*r == "deep file\n");
        r = s.read_path("sub/../notes.txt");  // `..` that stays inside is fine
        REQUIRE(r.ok());
        CHECK(*r == "hello notes\n");
        r = s.read_path("link_in");  // a symlink pointing inside
        REQUIRE(r.ok());
        CHECK(*r == "hello notes\n");
        fs::create_directory_symlink("sub", s.root / "link_sub");  // a directory symlink inside, then a name in it
        r = s.read_path("link_sub/../sub/./deep.txt");
        REQUIRE_MESSAGE(r.ok(), why(r));
        CHECK(*r == "deep file\n");
    }
}

TEST_CASE("read_file: escapes are refused (.., absolute paths, symlinks, /proc)") {
    for (const resolve_mode mode : modes()) {
        const std::string resolve = mode_name(mode);
        CAPTURE(resolve);
        sandbox s(64 * 1024, mode);
        // an absolute symlink is refused even when it points inside: RESOLVE_BENEATH
        // cannot tell, and the walk refuses what openat2 refuses
        fs::create_symlink(s.root / "notes.txt", s.root / "abs_in");
        fs::create_symlink("sub/../../outside/secret.txt", s.root / "link_dotdot");
        for (const std::string& p : {std::string("../outside/secret.txt"), std::string("sub/../../outside/secret.txt"),
                                     (s.outside / "secret.txt").string(), std::string("/etc/passwd"),
                                     std::string("link_out"), std::string("dir_out/secret.txt"), std::string("link_dotdot"),
                                     std::string("abs_in"), (s.root / ".." / "outside" / "secret.txt").string(),
                                     std::string("/proc/self/environ"), std::string("/proc/self/root/etc/passwd")}) {
            auto r = s.read_path(p);
            REQUIRE_MESSAGE(!r.ok(), p);
            CHECK(r.err().code == errc::invalid_argument);
            CHECK_MESSAGE(r.err().message.find("outside the allowed directories") != std::string::npos, r.err().message);
            CHECK(r.err().message.find("secret\n") == std::string::npos);
        }
        // a sibling directory sharing the root's name as a prefix is not inside it
        fs::create_directories(s.base / "root2");
        sandbox::write(s.base / "root2" / "x.txt", "x");
        auto r = s.read_path((s.base / "root2" / "x.txt").string());
        CHECK_FALSE(r.ok());
    }
}

TEST_CASE("read_file: directories, FIFOs and missing files are errors for the model") {
    for (const resolve_mode mode : modes()) {
        const std::string resolve = mode_name(mode);
        CAPTURE(resolve);
        sandbox s(64 * 1024, mode);
        for (const std::string& p : {std::string("sub"), std::string("sub/"), std::string("sub/.."), std::string("."),
                                     s.root.string()}) {
            auto dir = s.read_path(p);
            REQUIRE_MESSAGE(!dir.ok(), p);
            CHECK_MESSAGE(dir.err().message.find("not a regular file") != std::string::npos, dir.err().message);
        }
        auto fifo = s.read_path("fifo");  // must not hang waiting for a writer
        REQUIRE_FALSE(fifo.ok());
        CHECK(fifo.err().message.find("not a regular file") != std::string::npos);
        auto missing = s.read_path("nope.txt");
        REQUIRE_FALSE(missing.ok());
        CHECK(missing.err().code == errc::not_found);
        CHECK(missing.err().message.find("nope.txt") != std::string::npos);
        auto file_as_dir = s.read_path("notes.txt/x");
        REQUIRE_FALSE(file_as_dir.ok());
        CHECK(file_as_dir.err().message.find("not a directory") != std::string::npos);
        fs::create_symlink("loop_b", s.root / "loop_a");
        fs::create_symlink("loop_a", s.root / "loop_b");
        auto loop = s.read_path("loop_a");
        REQUIRE_FALSE(loop.ok());
        CHECK_MESSAGE(loop.err().message.find("too many symbolic links") != std::string::npos, loop.err().message);
        auto bad = s.read("{\"path\": 3}");
        REQUIRE_FALSE(bad.ok());
        CHECK(bad.err().message.find("'path'") != std::string::npos);
    }
}

TEST_CASE("open_beneath: openat2 and the walk give the same answer for every path") {
    if (!have_openat2()) {
        MESSAGE("openat2 is not available: nothing to compare the walk with");
        return;
    }
    sandbox s;
    fs::create_symlink("loop_b", s.root / "loop_a");
    fs::create_symlink("loop_a", s.root / "loop_b");
    fs::create_symlink("missing", s.root / "dangling");
    fs::create_symlink(s.root / "notes.txt", s.root / "abs_in");
    fs::create_directory_symlink("sub", s.root / "link_sub");
    const int root_fd = ::open(s.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(root_fd >= 0);
    // The file a descriptor refers to, as (device, inode), or the error.
    const auto identify = [](int fd) -> std::pair<long, long> {
        if (fd < 0) return {fd, 0};
        struct stat st {};
        REQUIRE(::fstat(fd, &st) == 0);
        ::close(fd);
        return {static_cast<long>(st.st_dev), static_cast<long>(st.st_ino)};
    };
    for (const char* p : {"notes.txt", "sub/deep.txt", "sub/../notes.txt", "./sub//deep.txt", "link_in", "link_sub/deep.txt",
                          "link_sub/../notes.txt", "link_sub/", "sub", "sub/..", ".", "fifo", "nope", "sub/nope/x",
                          "notes.txt/", "notes.txt/x", "dangling", "loop_a", "loop_a/x", "abs_in", "link_out", "dir_out",
                          "dir_out/secret.txt", "..", "../outside/secret.txt", "sub/../../outside", "/etc/passwd", ""}) {
        CAPTURE(p);
        const auto kernel = identify(open_beneath(root_fd, p, resolve_mode::openat2));
        const auto walked = identify(open_beneath(root_fd, p, resolve_mode::walk));
        CHECK(kernel == walked);
    }
    ::close(root_fd);
}

TEST_CASE("read_file: a directory swapped for a symlink to outside while reading never escapes") {
    for (const resolve_mode mode : modes()) {
        const std::string resolve = mode_name(mode);
        CAPTURE(resolve);
        sandbox s(64 * 1024, mode);
        // root/swap is in turn a real directory and a symlink to ../outside;
        // both hold data.txt, only the inside one may ever be read.
        fs::create_directories(s.root / "swap");
        sandbox::write(s.root / "swap" / "data.txt", "inside\n");
        sandbox::write(s.outside / "data.txt", "secret\n");
        fs::create_directory_symlink("../outside", s.root / "spare");
        const std::string swap = (s.root / "swap").string(), spare = (s.root / "spare").string();
        std::atomic<bool> stop{false};
        std::atomic<long> n_swaps{0};
        std::thread swapper([&] {
            while (!stop.load()) {
                // RENAME_EXCHANGE: both names exist at every instant, so each
                // lookup sees the directory or the symlink, never nothing.
                if (::renameat2(AT_FDCWD, swap.c_str(), AT_FDCWD, spare.c_str(), RENAME_EXCHANGE) == 0) ++n_swaps;
            }
        });
        while (n_swaps.load() == 0) std::this_thread::yield();
        int n_escapes = 0, n_inside = 0;
        for (int i = 0; i < 20'000; ++i) {
            auto r = s.read_path("swap/data.txt");
            if (!r.ok()) continue;  // the symlink was in place: refused
            if (r->find("secret") != std::string::npos) ++n_escapes;
            if (*r == "inside\n") ++n_inside;
        }
        stop = true;
        swapper.join();
        CHECK(n_swaps.load() > 0);
        CHECK(n_escapes == 0);
        MESSAGE(resolve << ": " << n_inside << " of 20000 reads saw the directory, " << n_swaps.load() << " swaps");
    }
}

TEST_CASE("read_file: output is capped and offset continues the read") {
    sandbox s(16);
    sandbox::write(s.root / "big.txt", "0123456789abcdefghijklmnopqrstuvwxyz");  // 36 bytes
    auto r = s.read_path("big.txt");
    REQUIRE(r.ok());
    CHECK(r->rfind("0123456789abcdef\n", 0) == 0);
    CHECK(r->find("bytes 0..16 of 36") != std::string::npos);
    CHECK(r->find("offset 16") != std::string::npos);
    r = s.read("{\"path\":\"big.txt\",\"offset\":32}");
    REQUIRE(r.ok());
    CHECK(*r == "wxyz");
    r = s.read("{\"path\":\"big.txt\",\"offset\":4,\"max_bytes\":3}");
    REQUIRE(r.ok());
    CHECK(r->rfind("456\n", 0) == 0);
    r = s.read("{\"path\":\"big.txt\",\"max_bytes\":1000}");  // the setting caps what a call asks
    REQUIRE(r.ok());
    CHECK(r->rfind("0123456789abcdef\n", 0) == 0);
    r = s.read("{\"path\":\"big.txt\",\"offset\":99}");
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("past the end") != std::string::npos);
}

TEST_CASE("read_file: settings are checked when the tool is made") {
    CHECK_FALSE(make_read_file_tool({}).ok());
    auto r = make_read_file_tool({{"/no/such/dir"}});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("/no/such/dir") != std::string::npos);
}
