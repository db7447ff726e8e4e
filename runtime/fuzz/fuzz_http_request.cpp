// libFuzzer target for the HTTP request path of `tachyon serve`, without
// sockets: any bytes as what a client sends, read as the server reads a
// request (Beast's request_parser with the server's header and body limits,
// fed in chunks of fuzzer-chosen sizes, as reads from a socket arrive), and
// the body of a chat completion through parse_chat_request.
// Invariants: no crash; a parsed body never exceeds the body limit; an
// accepted chat request has at least one message; a rejected one says why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "runtime/chat/openai_chat.h"
#include "runtime/serve/http_server.h"

namespace bhttp = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    // the first byte: how the bytes are cut into reads (1..32 bytes, or all at once)
    const std::size_t cut = data[0] % 33;
    std::string_view wire(reinterpret_cast<const char*>(data) + 1, size - 1);

    const tachyon::http::server_options limits;  // the server's defaults
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(limits.header_limit);
    parser.body_limit(limits.body_limit);
    parser.eager(true);
    // bytes read from the "socket" and not yet consumed by the parser, as in the server's flat_buffer
    std::string pending;
    std::size_t pos = 0;
    boost::beast::error_code ec;
    while (!parser.is_done()) {
        if (pos < wire.size()) {
            const std::size_t n = cut == 0 ? wire.size() - pos : std::min(cut, wire.size() - pos);
            pending.append(wire.substr(pos, n));
            pos += n;
        } else if (pending.empty()) {
            break;  // the client stopped sending: the server's read times out
        }
        ec = {};
        const std::size_t used = parser.put(boost::asio::buffer(pending.data(), pending.size()), ec);
        pending.erase(0, used);
        if (ec == bhttp::error::need_more) {
            if (pos >= wire.size()) break;
            continue;
        }
        if (ec) return 0;  // a malformed request or a limit: the server answers 400/413/431 and closes
        if (used == 0 && pos >= wire.size()) break;
    }
    if (!parser.is_done()) {
        if (parser.is_header_done()) {
            (void)parser.get().target();
            (void)parser.get()[bhttp::field::authorization];
        }
        return 0;
    }
    const auto& req = parser.get();
    if (req.body().size() > limits.body_limit) std::abort();
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == "/v1/chat/completions" || (size > 1 && data[1] % 4 == 0)) {
        auto parsed = tachyon::openai::parse_chat_request(req.body());
        if (parsed) {
            if (parsed->messages.empty()) std::abort();
        } else {
            if (parsed.err().message.empty()) std::abort();
            (void)tachyon::openai::to_api_error(parsed.err());
        }
    }
    return 0;
}
