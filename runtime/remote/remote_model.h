// A model served by another machine behind an OpenAI-compatible API (vLLM,
// SGLang, llama.cpp's server, TGI, another tachyon serve): where it is, what
// it is called there, how to authenticate, how tool calls travel, and how
// long to wait. Agent files, the SDK and `tachyon serve --model` name one as
// a JSON object instead of a GGUF path:
//   {"url": "http://host:8000/v1", "name": "qwen2.5-7b", "api_key_env": "MY_KEY",
//    "tools": "server" | "text", "timeout_s": 60, "headers": {"X-Team": "sre"}}
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"

namespace tachyon::remote {

// How tool calls travel between the agent loop and the server.
enum class tool_mode {
    // `tools`, `tool_choice` and `response_format` go out with the request
    // (the server constrains what it can), calls come back as tool_calls deltas.
    server,
    // No tools in the request: the tool list is written into the system
    // message and calls are parsed from the model's text by tachyon's own
    // per-family parser (runtime/formats/tool_call_parser.h). For servers whose
    // tool-call support is missing or broken for a model.
    text,
};

std::string_view to_string(tool_mode mode);

struct remote_timeouts {
    std::chrono::milliseconds connect{10000};      // TCP connect (each attempt)
    std::chrono::milliseconds first_token{60000};  // request sent -> response header and first event
    std::chrono::milliseconds idle{30000};         // silence between two events of the stream
};

struct remote_model {
    std::string url;   // the API base, "http://host:port/v1"; /chat/completions is appended
    std::string name;  // the model name the server knows ("model" of the request)
    std::string api_key_env;  // environment variable holding the bearer token; empty: none
    tool_mode tools = tool_mode::server;
    // Text mode: the family whose call syntax the model writes (its chat
    // format name, "chatml" when not given: Hermes <tool_call> blocks).
    std::string chat_format;
    remote_timeouts timeouts;
    std::map<std::string, std::string> headers;  // sent with every request
    int max_retries = 3;  // connect errors, 429 and 503 before the first token
    // Most tokens one turn may generate (the request's max_tokens, at most
    // what the run's budget has left). Servers refuse a max_tokens that does
    // not fit their context beside the prompt, so the budget is not sent whole.
    int max_turn_tokens = 1024;
    // Who serves it, as traces name it (gen_ai.provider.name): "openai" by
    // default (the API it speaks); "vllm", "sglang", ... when given.
    std::string provider = "openai";

    // "qwen2.5-7b at http://host:8000/v1", for messages and journals.
    std::string describe() const { return name + " at " + url; }
};

// Parses the model object of an agent file or a --model argument. Errors
// name `what` and the key ("agents/x.json: model.tools: expected \"server\"
// or \"text\", got \"both\""). The URL must be http:// (https is refused with
// the advice to use a local TLS proxy).
result<remote_model> parse_remote_model(std::string_view json_text, std::string_view what);

// True when `text` (a --model argument) is a JSON object rather than a path.
bool looks_like_remote_model(std::string_view text);

// A remote model from a bare URL (`tachyon serve --remote URL --remote-model
// NAME`), with the defaults of the object form.
result<remote_model> remote_model_from_url(std::string_view url, std::string name = {});

struct endpoint {
    std::string host, port, base_target;  // base_target: the URL's path without a trailing '/'
};
// The URL's host, port and path. Errors name the URL and what was expected.
result<endpoint> parse_endpoint(std::string_view url);

}  // namespace tachyon::remote
