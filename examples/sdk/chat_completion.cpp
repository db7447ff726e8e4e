// Embeds the inference engine for plain chat completion: no agent, no
// tools. The reply streams to stdout as it is generated.
//
// Usage: chat_completion MODEL.gguf PROMPT [SYSTEM]
//   e.g. chat_completion examples/incident/model/incident-analyst.gguf "checkout returns 502s since 14:05"
//
// Exit status: 0 reply generated, 1 the model failed, 2 bad arguments or model file.
#include <tachyon/tachyon.h>

#include <iostream>
#include <string_view>
#include <vector>

namespace sdk = tachyon::sdk;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: chat_completion MODEL.gguf PROMPT [SYSTEM]\n";
        return 2;
    }

    // Open the model: GGUF weights, tokenizer, chat template, and the engine thread.
    sdk::model_options model_options;
    model_options.n_ctx = 2048;
    auto model = sdk::model::open(argv[1], model_options);
    if (!model) {
        std::cerr << model.error().message << "\n";
        return 2;
    }

    // The conversation: an optional system message, then the user's prompt.
    std::vector<sdk::chat_message> messages;
    if (argc > 3) messages.push_back({"system", argv[3]});
    messages.push_back({"user", argv[2]});

    // Sampling and streaming: greedy, at most 200 tokens, each piece printed as it arrives.
    sdk::chat_options options;
    options.max_tokens = 200;
    options.on_text = [](std::string_view piece) {
        std::cout << piece << std::flush;
        return true;  // false would stop generating
    };

    // Generate the assistant's reply (blocks until it ends).
    auto reply = model->chat(messages, options);
    if (!reply) {
        std::cerr << "\n" << reply.error().message << "\n";
        return 1;
    }

    // Report how it ended.
    std::cout << "\n\nchat format: " << model->chat_format() << "\n"
              << "finish: " << reply->finish << "\n"
              << "prompt tokens: " << reply->prompt_tokens << "\n"
              << "completion tokens: " << reply->completion_tokens << "\n"
              << "decode: " << reply->decode_ms << " ms\n";
    return 0;
}
