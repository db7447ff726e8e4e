// http_get {url}: one HTTP/1.1 GET over plain http to loopback or to an
// allowlisted host. https is refused with a clear error (no TLS here); a
// name that is neither allowlisted nor "localhost" is refused before any DNS
// lookup, so a refused call sends nothing on the network. Connect and read
// have timeouts, the body a cap; redirects are reported, not followed.
//
// Beast stays inside http_get.cpp: it costs ~10 s of compile time wherever
// it is included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "tools/tool.h"

namespace tachyon::tools {

struct http_get_settings {
    std::vector<std::string> allowed_hosts;  // host names or addresses allowed besides loopback (case-insensitive)
    int64_t connect_timeout_ms = 2'000;      // resolve + connect
    int64_t read_timeout_ms = 10'000;        // send the request + read the whole response
    size_t max_body_bytes = 256 * 1024;      // a longer body is an error
};

result<std::shared_ptr<tool>> make_http_get_tool(const http_get_settings& settings);

}  // namespace tachyon::tools
