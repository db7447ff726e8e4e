// How an MCP client reaches its server: a channel of JSON-RPC messages.
// stdio_transport (a child process) and http_transport (Streamable HTTP)
// implement it.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace tachyon::tools::mcp {

// The transport calls these from its own thread. `message` gets each
// message's text; `closed` is called once, after the last message, with why
// the peer is gone ("exited with status 1"). Neither may call close().
struct transport_handlers {
    std::function<void(std::string_view)> message;
    std::function<void(std::string)> closed;
};

class transport {
public:
    virtual ~transport() = default;
    virtual status open(transport_handlers handlers) = 0;
    // Sends one message; an error when the peer is gone or stops reading.
    virtual status send(std::string_view message) = 0;
    // The same, for a request made inside a traced span: `traceparent` (W3C
    // trace context) goes along where the transport has a place of its own
    // for it (an HTTP header). The client puts it in the message's
    // params._meta as well, which every transport carries.
    virtual status send_traced(std::string_view message, std::string_view traceparent) {
        (void)traceparent;
        return send(message);
    }
    // Ends the channel and the peer. Idempotent; on return no handler runs
    // any more and nothing the transport made (process, fd, thread) is left.
    virtual void close() = 0;
    // The protocol revision initialize agreed on (HTTP sends it as a header).
    virtual void set_protocol_version(std::string version) { (void)version; }
};

}  // namespace tachyon::tools::mcp
