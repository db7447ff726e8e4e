// http_get {url}: one HTTP/1.1 GET over plain http to an allowlisted host.
// https is refused with a clear error (no TLS here). A host that is not
// allowlisted is refused before any DNS lookup, so a refused call sends
// nothing on the network. The name is resolved once and every address is
// checked; only checked addresses are connected to (no second lookup that a
// rebinding DNS server could answer differently). Loopback, private,
// link-local, CGNAT, unique-local, multicast and unspecified addresses (also
// as IPv4-mapped IPv6) are reached only through a HOST:PORT entry naming the
// port: a model must not read this machine's own services or the local
// network unless the agent file says which one. Connect and read have
// timeouts, the body a cap; redirects are reported, not followed (a call to
// the new location is checked like any other). The call's idempotency key
// (tools::call_context) goes out as an Idempotency-Key header.
//
// Beast stays inside http_get.cpp: it costs ~10 s of compile time wherever
// it is included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tools/core/tool.h"

namespace tachyon::tools {

struct http_get_settings {
    // Where calls may go, case-insensitive. "HOST" (a name or an address)
    // allows every port of a public host; "HOST:PORT" or "[IPV6]:PORT" one
    // port, and is the only way to reach a loopback, private or link-local
    // address ("127.0.0.1:8080", "localhost:9000", "[::1]:8080").
    std::vector<std::string> allowed_hosts;
    int64_t connect_timeout_ms = 2'000;      // resolve + connect
    int64_t read_timeout_ms = 10'000;        // send the request + read the whole response
    size_t max_body_bytes = 256 * 1024;      // a longer body is an error
};

// The argument schema every http_get tool declares (agent files check their
// grounding against it without making the tool).
std::string_view http_get_parameters_schema();
// Fails on a malformed allowed_hosts entry, and on a HOST entry without a
// port that can only name a restricted address ("localhost", "10.0.0.5").
result<std::shared_ptr<tool>> make_http_get_tool(const http_get_settings& settings);

// Why an IP address needs a HOST:PORT entry ("loopback", "private",
// "link-local", ...), or "" for a public address. IPv4-mapped, NAT64 and
// 6to4 IPv6 addresses are judged by the IPv4 address they carry. An error
// when `address` is not an IPv4 or IPv6 address.
result<std::string> restricted_address_kind(std::string_view address);

}  // namespace tachyon::tools
