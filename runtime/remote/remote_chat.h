// One chat completion of the HTTP API passed on to a remote server
// (`tachyon serve --remote`): the parsed request goes out as a streamed
// request of runtime/remote/chat_client.h, and what comes back is handed to
// the caller as chat_generation (runtime/chat/chat_generation.h) hands out
// the local engine's: the same deltas and completion, so the HTTP layer
// writes both the same way. tool_choice "required" and named choices are
// sent as "auto" (the agent loop needs no more; a server that honours them
// is asked through its own API).
#pragma once

#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "runtime/chat/chat_generation.h"
#include "runtime/remote/chat_client.h"

namespace tachyon::remote {

class remote_chat : public std::enable_shared_from_this<remote_chat> {
public:
    // `model_id`: the id clients ask for; `session_id`: passed on for the
    // backend's session affinity (the client's X-Session-Id), may be empty;
    // `traceparent`: the W3C trace context the backend's spans continue.
    static std::shared_ptr<remote_chat> create(remote_model model, openai::chat_request request, std::string model_id,
                                               boost::asio::any_io_executor ex, const openai::generation_limits& limits,
                                               std::string session_id = {}, std::string traceparent = {});

    const openai::completion& head() const { return head_; }
    // Starts the stream on the executor; callbacks run there.
    void start(openai::delta_callback on_delta, openai::completion_callback on_done);
    // Closes the stream; on_done still comes. Any thread.
    void cancel();

private:
    remote_chat() = default;
    boost::asio::any_io_executor ex_;
    std::shared_ptr<chat_stream> stream_;
    turn_request request_;
    openai::completion head_;
};

}  // namespace tachyon::remote
