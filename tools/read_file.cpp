#include "tools/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <simdjson.h>

namespace tachyon::tools {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view schema = R"js({"type":"object","properties":{)js"
                                     R"js("path":{"type":"string","description":"file path, relative to the first allowed root or absolute inside a root"},)js"
                                     R"js("offset":{"type":"integer","minimum":0,"description":"first byte to read (default 0)"},)js"
                                     R"js("max_bytes":{"type":"integer","minimum":1,"description":"bytes to read at most"}},)js"
                                     R"js("required":["path"],"additionalProperties":false})js";

error fail(errc code, std::string message) { return make_error(code, "read_file: " + std::move(message)); }

// realpath(3): the canonical absolute path, every symlink resolved.
result<fs::path> real_path(const fs::path& p) {
    char buf[PATH_MAX];
    if (::realpath(p.c_str(), buf) == nullptr) return make_error(errc::not_found, std::strerror(errno));
    return fs::path(buf);
}

// Component-wise: /data/logs2 is not inside /data/logs.
bool is_inside(const fs::path& path, const fs::path& root) {
    auto p = path.begin();
    for (auto r = root.begin(); r != root.end(); ++r, ++p)
        if (p == path.end() || *p != *r) return false;
    return true;
}

class read_file_tool final : public tool {
public:
    read_file_tool(std::vector<fs::path> roots, size_t max_bytes) : roots_(std::move(roots)), max_bytes_(max_bytes) {
        for (size_t i = 0; i < roots_.size(); ++i) roots_text_ += (i ? ", " : "") + roots_[i].string();
    }

    std::string_view name() const override { return "read_file"; }
    std::string_view description() const override {
        return "Read a text file (or part of it, from a byte offset) under the allowed directories.";
    }
    std::string_view parameters_schema() const override { return schema; }

    result<std::string> invoke(std::string_view arguments_json, const call_context& ctx) override {
        if (ctx.cancelled()) return fail(errc::cancelled, "cancelled");
        simdjson::dom::parser parser;
        simdjson::dom::object args;
        if (parser.parse(arguments_json.data(), arguments_json.size()).get_object().get(args) != simdjson::SUCCESS)
            return fail(errc::invalid_argument, "arguments must be a JSON object");
        std::string_view path_arg;
        if (args["path"].get_string().get(path_arg) != simdjson::SUCCESS)
            return fail(errc::invalid_argument, "'path' must be a string");
        int64_t offset = 0;
        if (auto v = args["offset"]; v.error() != simdjson::NO_SUCH_FIELD) {
            if (v.get_int64().get(offset) != simdjson::SUCCESS || offset < 0)
                return fail(errc::invalid_argument, "'offset' must be an integer >= 0");
        }
        int64_t max_bytes = static_cast<int64_t>(max_bytes_);
        if (auto v = args["max_bytes"]; v.error() != simdjson::NO_SUCH_FIELD) {
            if (v.get_int64().get(max_bytes) != simdjson::SUCCESS || max_bytes < 1)
                return fail(errc::invalid_argument, "'max_bytes' must be an integer >= 1");
            max_bytes = std::min<int64_t>(max_bytes, static_cast<int64_t>(max_bytes_));
        }
        if (path_arg.empty() || path_arg.find('\0') != std::string_view::npos)
            return fail(errc::invalid_argument, "'path' must be a non-empty file path");

        const fs::path requested(path_arg);
        const fs::path joined = requested.is_absolute() ? requested : roots_[0] / requested;
        auto resolved = real_path(joined);
        if (!resolved.ok()) return fail(errc::not_found, std::string("'").append(path_arg) + "': " + resolved.err().message);
        bool allowed = false;
        for (const auto& root : roots_) allowed = allowed || is_inside(*resolved, root);
        if (!allowed)
            return fail(errc::invalid_argument, std::string("'").append(path_arg) + "' is outside the allowed directories (" +
                                                    roots_text_ + ")");

        // O_NOFOLLOW: the resolved path has no symlink left as its last part;
        // one put there since (a race) is refused rather than followed.
        // O_NONBLOCK: opening a FIFO must not hang; it is refused below.
        const int fd = ::open(resolved->c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) return fail(errc::io_error, std::string("'").append(path_arg) + "': " + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            return fail(errc::invalid_argument, std::string("'").append(path_arg) + "' is not a regular file");
        }
        const auto size = static_cast<int64_t>(st.st_size);
        if (offset > size) {
            ::close(fd);
            return fail(errc::out_of_range, "offset " + std::to_string(offset) + " is past the end of '" +
                                                std::string(path_arg) + "' (" + std::to_string(size) + " bytes)");
        }
        const auto n_want = static_cast<size_t>(std::min<int64_t>(max_bytes, size - offset));
        std::string out(n_want, '\0');  // bounded by the cap, not by the file
        size_t n_read = 0;
        while (n_read < n_want) {
            if (ctx.cancelled()) {
                ::close(fd);
                return fail(errc::cancelled, "cancelled");
            }
            const ssize_t n = ::pread(fd, out.data() + n_read, n_want - n_read, offset + static_cast<off_t>(n_read));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                ::close(fd);
                return fail(errc::io_error, std::string("'").append(path_arg) + "': " + std::strerror(errno));
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
    std::vector<fs::path> roots_;  // canonical
    std::string roots_text_;
    size_t max_bytes_;
};

}  // namespace

result<std::shared_ptr<tool>> make_read_file_tool(const read_file_settings& settings) {
    if (settings.roots.empty()) return make_error(errc::invalid_argument, "read_file: no allowed root directory given");
    if (settings.max_bytes == 0) return make_error(errc::invalid_argument, "read_file: max_bytes must be at least 1");
    std::vector<fs::path> roots;
    for (const auto& root : settings.roots) {
        auto real = real_path(root);
        std::error_code ec;
        if (!real.ok() || !fs::is_directory(*real, ec))
            return make_error(errc::not_found, "read_file: root '" + root.string() + "' is not an existing directory");
        roots.push_back(*real);
    }
    return std::shared_ptr<tool>(std::make_shared<read_file_tool>(std::move(roots), settings.max_bytes));
}

}  // namespace tachyon::tools
