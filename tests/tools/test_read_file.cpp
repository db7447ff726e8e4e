#include "tools/read_file.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace tachyon;
using namespace tachyon::tools;
namespace fs = std::filesystem;

namespace {

// root/ (allowed): notes.txt, sub/deep.txt, link_out -> ../outside/secret.txt,
// link_in -> notes.txt, fifo; outside/secret.txt (not allowed).
struct sandbox {
    fs::path base = fs::path(TACHYON_BINARY_DIR) / "test_tmp" / ("read_file-" + std::to_string(::getpid()));
    fs::path root = base / "root";
    fs::path outside = base / "outside";
    std::shared_ptr<tool> t;

    explicit sandbox(size_t max_bytes = 64 * 1024) {
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
        auto made = make_read_file_tool({{root}, max_bytes});
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
    sandbox s;
    auto r = s.read_path("notes.txt");
    REQUIRE_MESSAGE(r.ok(), r.err().message);
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
}

TEST_CASE("read_file: escapes are refused (.., absolute paths, symlinks, /proc)") {
    sandbox s;
    for (const std::string& p : {std::string("../outside/secret.txt"), std::string("sub/../../outside/secret.txt"),
                                 (s.outside / "secret.txt").string(), std::string("/etc/passwd"),
                                 std::string("link_out"), std::string("dir_out/secret.txt"),
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

TEST_CASE("read_file: directories, FIFOs and missing files are errors for the model") {
    sandbox s;
    auto dir = s.read_path("sub");
    REQUIRE_FALSE(dir.ok());
    CHECK(dir.err().message.find("not a regular file") != std::string::npos);
    auto fifo = s.read_path("fifo");  // must not hang waiting for a writer
    REQUIRE_FALSE(fifo.ok());
    CHECK(fifo.err().message.find("not a regular file") != std::string::npos);
    auto missing = s.read_path("nope.txt");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().code == errc::not_found);
    CHECK(missing.err().message.find("nope.txt") != std::string::npos);
    auto bad = s.read("{\"path\": 3}");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("'path'") != std::string::npos);
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
