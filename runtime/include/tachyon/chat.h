// tachyon C++ SDK: plain chat completion on a model, without agents or
// tools: messages in, text out, streamed as it is generated. Open a model
// on its own with model::open(), or through runtime::open_model() to share
// it with agent runs.
//
//   auto m = tachyon::sdk::model::open("model.gguf").value();
//   tachyon::sdk::chat_options options;
//   options.on_text = [](std::string_view piece) { std::cout << piece << std::flush; return true; };
//   auto reply = m.chat({{"system", "You are terse."}, {"user", "Hello"}}, options);
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tachyon/result.h"
#include "tachyon/sampling.h"

namespace tachyon::sdk {

struct chat_message {
    std::string role;     // "system", "user", "assistant" or "tool"
    std::string content;
};

// Receives generated text as it arrives (complete UTF-8 pieces).
// Contract: return false to stop generating (the reply ends with finish "stop").
using text_callback = std::function<bool(std::string_view text)>;

struct chat_options {
    int max_tokens = 256;       // tokens to generate at most
    sampling_options sampling;  // greedy by default
    text_callback on_text;      // streaming; empty: none
};

struct chat_reply {
    std::string text;           // the assistant's reply
    std::string finish;         // "stop" (end of turn, or on_text returned false) or "length" (max_tokens)
    int prompt_tokens = 0;
    int completion_tokens = 0;
    double prefill_ms = 0;      // prompt processing
    double decode_ms = 0;       // first generated token → last
};

struct model_options {
    int n_threads = 1;          // inference threads
    int n_ctx = 4096;           // KV positions, all chats at once together
    std::string chat_format;    // "chatml", "llama3", or empty: from the model's template
    bool kv_f32 = false;        // hold the KV cache in f32 (default fp16: half the memory and the bytes attention reads)
};

// A GGUF model with its tokenizer, chat template and engine thread. Copies
// share the model; chat() may be called from several threads at once (the
// engine batches them).
class model {
public:
    // Loads a GGUF model file; the error names the file and what is wrong.
    static result<model> open(const std::string& path, const model_options& options = {});

    // Renders the conversation with the model's chat template and generates the assistant's reply (blocks).
    result<chat_reply> chat(const std::vector<chat_message>& messages, const chat_options& options = {}) const;

    // The model file.
    const std::string& path() const;
    // "chatml" or "llama3".
    std::string chat_format() const;

private:
    struct impl;
    explicit model(std::shared_ptr<impl> i) : impl_(std::move(i)) {}
    friend struct model_access;
    std::shared_ptr<impl> impl_;
};

}  // namespace tachyon::sdk
