// One chat completion on a model host, independent of HTTP: renders the
// parsed request (runtime/chat/openai_chat.h), submits it on a fresh engine
// session (continuous batching and the engine's prefix cache apply), turns
// the token stream into content and tool-call deltas with the incremental
// tool-call parser in the model family's syntax (Qwen3's think block
// becomes reasoning_content), and constrains what the model may write:
// - tools present: a call, from the family's trigger on, holds a known
//   tool's name and arguments valid for its schema
//   (runtime/constrain/constraint.h); a family without tool calls refuses tools;
// - tool_choice required / named: the turn opens with the family's trigger
//   ("<tool_call>", "[TOOL_CALLS]", ...), so the output is a call (of the named tool);
// - response_format json_object / json_schema: the turn is one JSON object
//   valid for the schema.
// Engine callbacks run on the engine thread; everything they do is posted
// to the executor given here, where the caller's callbacks run too.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include <boost/asio/any_io_executor.hpp>

#include "runtime/chat/model_host.h"
#include "runtime/chat/openai_chat.h"

namespace tachyon::openai {

struct generation_limits {
    int default_max_tokens = 1024;  // when the request gives none (clamped to the context left)
    int max_stop_bytes = 256;       // longest stop sequence
    // Requests may carry tachyon_forced_tokens (a replaying benchmark's
    // in-process server); otherwise that field is refused.
    bool allow_forced_tokens = false;
    // The context is the engine's, at most the model's training context;
    // false: the engine's alone (a benchmark's server whose runs are
    // compared with runs on the engine itself, which are not capped).
    bool cap_at_training_context = true;
};

// Called on the executor for each piece of the answer, in order.
using delta_callback = std::function<void(const delta& d)>;
// Called once on the executor when generation ends: the whole completion, or
// an error (engine failure) after which no completion exists.
using completion_callback = std::function<void(result<completion> c)>;

class chat_generation : public std::enable_shared_from_this<chat_generation> {
public:
    // Checks the request against the model (chat format, context length),
    // tokenizes the prompt and compiles the constraint. Errors name the
    // request field at fault (errc::invalid_argument).
    static result<std::shared_ptr<chat_generation>> create(std::shared_ptr<model_host> host, chat_request request,
                                                           std::string model_id, boost::asio::any_io_executor ex,
                                                           const generation_limits& limits = {});
    ~chat_generation();

    // Id, model and created time; the same in every chunk.
    const completion& head() const { return head_; }
    int n_prompt_tokens() const { return static_cast<int>(prompt_.size()); }

    // Submits to the engine. on_delta may be empty (non-streamed).
    void start(delta_callback on_delta, completion_callback on_done);
    // Stops generation (client gone, shutdown); on_done still comes. Any thread.
    void cancel();

private:
    struct impl;
    explicit chat_generation(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
    completion head_;
    std::vector<int32_t> prompt_;
};

}  // namespace tachyon::openai
