#include "base/result.h"

#include <cstdio>
#include <cstdlib>

namespace tachyon {

std::string_view to_string(errc code) {
    switch (code) {
        case errc::invalid_argument: return "invalid_argument";
        case errc::not_found: return "not_found";
        case errc::io_error: return "io_error";
        case errc::parse_error: return "parse_error";
        case errc::unsupported: return "unsupported";
        case errc::out_of_range: return "out_of_range";
        case errc::timeout: return "timeout";
        case errc::cancelled: return "cancelled";
        case errc::resource_exhausted: return "resource_exhausted";
        case errc::internal: return "internal";
    }
    return "unknown";
}

std::string error::describe() const {
    std::string out(to_string(code));
    out += ": ";
    out += message;
    return out;
}

namespace detail {
void assert_fail(const char* expr, const char* file, int line, std::string_view message) {
    std::fprintf(stderr, "tachyon: assertion failed at %s:%d: %s: %.*s\n", file, line, expr,
                 static_cast<int>(message.size()), message.data());
    std::fflush(stderr);
    std::abort();
}
}  // namespace detail

}  // namespace tachyon
