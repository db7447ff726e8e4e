#include "runtime/sdk/bridge.h"

namespace tachyon::sdk {

sdk::error to_public(const ::tachyon::error& e) {
    errc code = errc::internal;
    switch (e.code) {
        case ::tachyon::errc::invalid_argument: code = errc::invalid_argument; break;
        case ::tachyon::errc::not_found: code = errc::not_found; break;
        case ::tachyon::errc::io_error: code = errc::io_error; break;
        case ::tachyon::errc::parse_error: code = errc::parse_error; break;
        case ::tachyon::errc::unsupported: code = errc::unsupported; break;
        case ::tachyon::errc::out_of_range: code = errc::out_of_range; break;
        case ::tachyon::errc::timeout: code = errc::timeout; break;
        case ::tachyon::errc::cancelled: code = errc::cancelled; break;
        case ::tachyon::errc::resource_exhausted: code = errc::resource_exhausted; break;
        case ::tachyon::errc::internal: code = errc::internal; break;
    }
    return sdk::error{code, e.message};
}

::tachyon::error to_internal(const sdk::error& e) {
    ::tachyon::errc code = ::tachyon::errc::internal;
    switch (e.code) {
        case errc::invalid_argument: code = ::tachyon::errc::invalid_argument; break;
        case errc::not_found: code = ::tachyon::errc::not_found; break;
        case errc::io_error: code = ::tachyon::errc::io_error; break;
        case errc::parse_error: code = ::tachyon::errc::parse_error; break;
        case errc::unsupported: code = ::tachyon::errc::unsupported; break;
        case errc::out_of_range: code = ::tachyon::errc::out_of_range; break;
        case errc::timeout: code = ::tachyon::errc::timeout; break;
        case errc::cancelled: code = ::tachyon::errc::cancelled; break;
        case errc::resource_exhausted: code = ::tachyon::errc::resource_exhausted; break;
        case errc::internal: code = ::tachyon::errc::internal; break;
    }
    return make_error(code, e.message);
}

sampling_params to_internal(const sampling_options& s) {
    sampling_params p;
    p.temperature = s.temperature;
    p.top_k = s.top_k;
    p.top_p = s.top_p;
    p.min_p = s.min_p;
    p.repeat_penalty = s.repeat_penalty;
    p.repeat_last_n = s.repeat_last_n;
    p.seed = s.seed;
    return p;
}

}  // namespace tachyon::sdk
