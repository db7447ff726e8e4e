#include "tachyon/result.h"

namespace tachyon::sdk {

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
    return "internal";
}

}  // namespace tachyon::sdk
