#include "tools/host/read_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string>

#include <simdjson.h>

namespace tachyon::tools {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view read_file_schema = R"js({"type":"object","properties":{)js"
                                     R"js("path":{"type":"string","description":"file path, relative to the first allowed root or absolute inside a root"},)js"
                                     R"js("offset":{"type":"integer","minimum":0,"description":"first byte to read (default 0)"},)js"
                                     R"js("max_bytes":{"type":"integer","minimum":1,"description":"bytes to read at most"}},)js"
                                     R"js("required":["path"],"additionalProperties":false})js";

// O_NONBLOCK: opening a FIFO must not hang waiting for a writer (it is
// refused after fstat). O_NOCTTY: a terminal under a root never becomes ours.
constexpr int open_flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

// The kernel's own limit (MAXSYMLINKS), so that both resolve modes give up on
// the same chains.
constexpr int max_symlinks = 40;

error read_file_error(errc code, std::string message) { return make_error(code, "read_file: " + std::move(message)); }

// realpath(3): the canonical absolute path, every symlink resolved.
result<fs::path> real_path(const fs::path& p) {
    char buf[PATH_MAX];
    if (::realpath(p.c_str(), buf) == nullptr) return make_error(errc::not_found, std::strerror(errno));
    return fs::path(buf);
}

// The rest of `path` after `root` when root is a component-wise prefix
// (/data/logs2 is not inside /data/logs); nullopt otherwise. No `..` is
// resolved here: what stays is opened beneath the root, which refuses it
// climbing out.
std::optional<fs::path> strip_root(const fs::path& path, const fs::path& root) {
    auto p = path.begin();
    for (auto r = root.begin(); r != root.end(); ++r, ++p)
        if (p == path.end() || *p != *r) return std::nullopt;
    fs::path rest;
    for (; p != path.end(); ++p) rest /= *p;
    return rest;
}

int open_openat2(int root_fd, const std::string& relative) {
    open_how how{};
    how.flags = static_cast<uint64_t>(open_flags);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    for (int attempt = 0;; ++attempt) {
        const long fd = ::syscall(SYS_openat2, root_fd, relative.c_str(), &how, sizeof how);
        if (fd >= 0) return static_cast<int>(fd);
        // EAGAIN: a rename or mount raced a `..` step; the kernel asks for a retry.
        if (errno == EINTR || (errno == EAGAIN && attempt < 16)) continue;
        return -errno;
    }
}

std::deque<std::string> split_path(std::string_view path) {
    std::deque<std::string> out;
    size_t pos = 0;
    while (pos <= path.size()) {
        size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) slash = path.size();
        out.emplace_back(path.substr(pos, slash - pos));  // "" for "//" and a trailing "/": a directory is meant
        pos = slash + 1;
    }
    return out;
}

// RESOLVE_BENEATH by hand: every step is one openat(O_NOFOLLOW) relative to a
// directory descriptor already known to lie beneath the root, `..` pops our
// own stack of descriptors (never the kernel's idea of the parent), and a
// symlink is read and its parts are walked the same way. A swap of any part
// for a symlink between two steps is seen by the next O_NOFOLLOW open.
int open_walk(int root_fd, std::string_view relative) {
    if (relative.empty()) return -ENOENT;  // as open("") says
    if (relative.front() == '/') return -EXDEV;
    std::vector<int> dirs{root_fd};  // [depth] descriptors from the root down; dirs[0] is not ours to close
    const auto close_dirs = [&dirs] {
        for (size_t i = 1; i < dirs.size(); ++i) ::close(dirs[i]);
    };
    const auto give_up = [&close_dirs](int err) {
        close_dirs();
        return -err;
    };
    std::deque<std::string> todo = split_path(relative);
    int n_links = 0;
    while (!todo.empty()) {
        std::string part = std::move(todo.front());
        todo.pop_front();
        if (part.empty() || part == ".") continue;
        if (part == "..") {
            if (dirs.size() == 1) return give_up(EXDEV);
            ::close(dirs.back());
            dirs.pop_back();
            continue;
        }
        // Anything after this part ("x/", "x/.", "x/y") needs it to be a directory.
        const bool want_dir = !todo.empty();
        const int fd = want_dir ? ::openat(dirs.back(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                : ::openat(dirs.back(), part.c_str(), open_flags | O_NOFOLLOW);
        if (fd >= 0 && !want_dir) {
            close_dirs();
            return fd;
        }
        if (fd >= 0) {
            dirs.push_back(fd);
            continue;
        }
        const int open_errno = errno;
        if (open_errno == EINTR) {
            todo.push_front(std::move(part));
            continue;
        }
        if (open_errno != ELOOP && open_errno != ENOTDIR) return give_up(open_errno);
        // Perhaps a symlink: O_NOFOLLOW refuses it with ELOOP (ENOTDIR where
        // a directory was asked for). Read it and walk its target instead.
        char target[PATH_MAX];
        const ssize_t n = ::readlinkat(dirs.back(), part.c_str(), target, sizeof target);
        if (n < 0) return give_up(errno == EINVAL ? open_errno : errno);  // EINVAL: not a symlink after all
        if (n == static_cast<ssize_t>(sizeof target)) return give_up(ENAMETOOLONG);  // perhaps cut short
        if (++n_links > max_symlinks) return give_up(ELOOP);
        const std::string_view link(target, static_cast<size_t>(n));
        if (link.empty()) return give_up(ENOENT);
        if (link.front() == '/') return give_up(EXDEV);  // RESOLVE_BENEATH refuses absolute symlinks too
        auto parts = split_path(link);
        todo.insert(todo.begin(), parts.begin(), parts.end());
    }
    // The path named a directory (".", "sub/", "sub/.."): open it like a file
    // so that the caller's fstat refuses it as not regular, as with openat2.
    const int fd = ::openat(dirs.back(), ".", open_flags);
    const int err = errno;
    close_dirs();
    return fd >= 0 ? fd : -err;
}

class read_file_tool final : public tool {
public:
    read_file_tool(std::vector<fs::path> roots, std::vector<fs::path> spellings, std::vector<int> root_fds,
                   size_t max_bytes, resolve_mode mode)
        : roots_(std::move(roots)), spellings_(std::move(spellings)), root_fds_(std::move(root_fds)),
          max_bytes_(max_bytes), mode_(mode) {
        for (size_t i = 0; i < roots_.size(); ++i) roots_text_ += (i ? ", " : "") + roots_[i].string();
    }
    ~read_file_tool() override {
        for (int fd : root_fds_) ::close(fd);
    }
    read_file_tool(const read_file_tool&) = delete;
    read_file_tool& operator=(const read_file_tool&) = delete;

    std::string_view name() const override { return "read_file"; }
    tool_flags flags() const override { return {.read_only = true, .idempotent = true}; }
    std::string_view description() const override {
        return "Read a text file (or part of it, from a byte offset) under the allowed directories.";
    }
    std::string_view parameters_schema() const override { return read_file_schema; }

    result<std::string> invoke(std::string_view arguments_json, const call_context& ctx) override {
        if (ctx.cancelled()) return read_file_error(errc::cancelled, "cancelled");
        simdjson::dom::parser parser;
        simdjson::dom::object args;
        if (parser.parse(arguments_json.data(), arguments_json.size()).get_object().get(args) != simdjson::SUCCESS)
            return read_file_error(errc::invalid_argument, "arguments must be a JSON object");
        std::string_view path_arg;
        if (args["path"].get_string().get(path_arg) != simdjson::SUCCESS)
            return read_file_error(errc::invalid_argument, "'path' must be a string");
        int64_t offset = 0;
        if (auto v = args["offset"]; v.error() != simdjson::NO_SUCH_FIELD) {
            if (v.get_int64().get(offset) != simdjson::SUCCESS || offset < 0)
                return read_file_error(errc::invalid_argument, "'offset' must be an integer >= 0");
        }
        int64_t max_bytes = static_cast<int64_t>(max_bytes_);
        if (auto v = args["max_bytes"]; v.error() != simdjson::NO_SUCH_FIELD) {
            if (v.get_int64().get(max_bytes) != simdjson::SUCCESS || max_bytes < 1)
                return read_file_error(errc::invalid_argument, "'max_bytes' must be an integer >= 1");
            max_bytes = std::min<int64_t>(max_bytes, static_cast<int64_t>(max_bytes_));
        }
        if (path_arg.empty() || path_arg.find('\0') != std::string_view::npos)
            return read_file_error(errc::invalid_argument, "'path' must be a non-empty file path");

        const std::string quoted = std::string("'").append(path_arg) + "'";
        const error outside = read_file_error(errc::invalid_argument, quoted + " is outside the allowed directories (" + roots_text_ + ")");
        const fs::path requested(path_arg);
        int root_fd = root_fds_[0];
        fs::path rest = requested;
        if (requested.is_absolute()) {
            std::optional<fs::path> found;
            for (size_t i = 0; i < roots_.size() && !found; ++i) {
                for (const fs::path* r : {&roots_[i], &spellings_[i]}) {
                    if ((found = strip_root(requested, *r))) {
                        root_fd = root_fds_[i];
                        break;
                    }
                }
            }
            if (!found) return outside;
            rest = *found;
        }

        const int fd = open_beneath(root_fd, rest.empty() ? "." : rest.string(), mode_);
        if (fd == -EXDEV) return outside;
        if (fd == -ENOENT) return read_file_error(errc::not_found, quoted + ": no such file");
        if (fd == -ELOOP)
            return read_file_error(errc::invalid_argument, quoted + ": too many symbolic links, or a /proc link (not followed)");
        if (fd == -ENOTDIR) return read_file_error(errc::not_found, quoted + ": a part of the path is not a directory");
        if (fd < 0) return read_file_error(errc::io_error, quoted + ": " + std::strerror(-fd));
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            return read_file_error(errc::invalid_argument, quoted + " is not a regular file");
        }
        const auto size = static_cast<int64_t>(st.st_size);
        if (offset > size) {
            ::close(fd);
            return read_file_error(errc::out_of_range, "offset " + std::to_string(offset) + " is past the end of " + quoted + " (" +
                                                std::to_string(size) + " bytes)");
        }
        const auto n_want = static_cast<size_t>(std::min<int64_t>(max_bytes, size - offset));
        std::string out(n_want, '\0');  // bounded by the cap, not by the file
        size_t n_read = 0;
        while (n_read < n_want) {
            if (ctx.cancelled()) {
                ::close(fd);
                return read_file_error(errc::cancelled, "cancelled");
            }
            const ssize_t n = ::pread(fd, out.data() + n_read, n_want - n_read, offset + static_cast<off_t>(n_read));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                ::close(fd);
                return read_file_error(errc::io_error, quoted + ": " + std::strerror(errno));
            }
            if (n == 0) break;  // the file shrank meanwhile
            n_read += static_cast<size_t>(n);
        }
        ::close(fd);
        out.resize(n_read);
        const int64_t end = offset + static_cast<int64_t>(n_read);
        if (end < size) {
            out += "\n[read_file: showed bytes " + std::to_string(offset) + ".." + std::to_string(end) + " of " +
                   std::to_string(size) + "; call again with offset " + std::to_string(end) + " for more]";
        }
        return out;
    }

private:
    std::vector<fs::path> roots_;      // [n_roots] canonical
    std::vector<fs::path> spellings_;  // [n_roots] as configured, made absolute: absolute call paths may use either
    std::vector<int> root_fds_;        // [n_roots] O_PATH descriptors, opened once: a root renamed later stays the root
    std::string roots_text_;
    size_t max_bytes_;
    resolve_mode mode_;
};

}  // namespace

std::string_view read_file_parameters_schema() { return read_file_schema; }

int open_beneath(int root_fd, std::string_view relative, resolve_mode mode) {
    if (relative.find('\0') != std::string_view::npos) return -EINVAL;
    if (mode == resolve_mode::walk) return open_walk(root_fd, relative);
    const int fd = open_openat2(root_fd, std::string(relative));
    // ENOSYS: a kernel before 5.6; EPERM: a seccomp filter that blocks the
    // call (open(2) itself never says EPERM for these flags).
    if (mode == resolve_mode::automatic && (fd == -ENOSYS || fd == -EPERM)) return open_walk(root_fd, relative);
    return fd;
}

result<std::shared_ptr<tool>> make_read_file_tool(const read_file_settings& settings) {
    if (settings.roots.empty()) return make_error(errc::invalid_argument, "read_file: no allowed root directory given");
    if (settings.max_bytes == 0) return make_error(errc::invalid_argument, "read_file: max_bytes must be at least 1");
    std::vector<fs::path> roots, spellings;
    std::vector<int> fds;
    const auto close_all = [&fds] {
        for (int fd : fds) ::close(fd);
    };
    for (const auto& root : settings.roots) {
        auto real = real_path(root);
        std::error_code ec;
        if (!real.ok() || !fs::is_directory(*real, ec)) {
            close_all();
            return make_error(errc::not_found, "read_file: root '" + root.string() + "' is not an existing directory");
        }
        const int fd = ::open(real->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            const int err = errno;
            close_all();
            return make_error(errc::io_error, "read_file: root '" + root.string() + "': " + std::strerror(err));
        }
        fds.push_back(fd);
        roots.push_back(*real);
        fs::path spelled = fs::absolute(root, ec).lexically_normal();
        if (ec || spelled.empty()) spelled = *real;
        if (!spelled.has_filename() && spelled != spelled.root_path()) spelled = spelled.parent_path();  // "/a/b/" -> "/a/b"
        spellings.push_back(std::move(spelled));
    }
    return std::shared_ptr<tool>(
        std::make_shared<read_file_tool>(std::move(roots), std::move(spellings), std::move(fds), settings.max_bytes, settings.resolve));
}

}  // namespace tachyon::tools
