// The OpenAI chat completions API, independent of HTTP: parsing a request
// body (every error names the JSON path and what was expected), rendering its
// messages in the model's chat format (tools into the system prompt,
// assistant tool calls as the Hermes <tool_call> blocks the model was trained
// on, tool results as <tool_response> turns), and writing the response and
// stream chunk JSON. runtime/chat/chat_generation.h runs a parsed request on an
// engine; runtime/serve/http_server.h serves both over HTTP.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runtime/formats/chat_format.h"
#include "inference/engine/engine.h"

namespace tachyon::openai {

// An error as the API reports it: {"error": {"message", "type", "param", "code"}}.
struct api_error {
    int status = 400;
    std::string type = "invalid_request_error";
    std::string message;
    std::string param;  // the JSON path of the offending value ("messages[1].content"); empty: none
    std::string code;   // "model_not_found", "rate_limit_exceeded" ...; empty: null
};

// {"error": {...}} as one JSON object.
std::string error_json(const api_error& e);

// A parse error of a request: errc::invalid_argument, message "<path>: <what>".
// Maps an error value to the API error (status, type, param = the path).
api_error to_api_error(const error& e);

struct function_tool {
    std::string name;
    std::string description;
    std::string parameters_json = R"({"type": "object", "properties": {}})";  // as given, spaced
};

struct tool_call {
    std::string id;              // "call_..."
    std::string name;
    std::string arguments_json;  // a JSON object text
};

struct message {
    std::string role;  // system (developer maps here), user, assistant, tool
    std::string content;
    std::vector<tool_call> tool_calls;  // assistant
    std::string tool_call_id;           // tool
};

enum class tool_choice_mode { none, automatic, required, named };
enum class response_format_kind { text, json_object, json_schema };

struct chat_request {
    std::string model;
    std::vector<message> messages;
    std::vector<function_tool> tools;
    tool_choice_mode tool_choice = tool_choice_mode::automatic;  // "auto"; "none" when there are no tools
    std::string tool_choice_name;  // named
    bool parallel_tool_calls = true;
    double temperature = 1.0;
    double top_p = 1.0;
    std::optional<int> max_tokens;  // max_tokens or max_completion_tokens
    std::vector<std::string> stop;  // at most 4
    std::optional<uint64_t> seed;
    response_format_kind response_format = response_format_kind::text;
    std::string response_schema_json;  // json_schema: the schema (json_object: {"type": "object"})
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    // "tachyon_forced_tokens": the token ids the completion generates, one
    // real forward each, whatever the sampler picks (engine request::forced):
    // `tachyon bench agents --replay` replays recorded turns through a
    // server with it. Refused unless the server allows it
    // (generation_limits::allow_forced_tokens; `tachyon serve` never does).
    std::vector<int32_t> forced_tokens;
};

// Parses a request body. Errors: errc::invalid_argument with a message that
// starts with the JSON path ("messages[2].role: expected one of system,
// developer, user, assistant, tool; got 'robot'"), or "body: ..." for JSON
// that does not parse.
result<chat_request> parse_chat_request(std::string_view body);

// The conversation as chat_template messages; assistant tool calls stay
// structured, for the family's renderer to write in its syntax.
result<std::vector<chat_message>> to_chat_messages(const chat_request& request);

// The tool definitions as the system prompt lists them, one line each.
std::vector<std::string> tool_lines(const std::vector<function_tool>& tools);

// The whole prompt text, ending with the assistant prompt.
result<std::string> render_prompt(const chat_request& request, chat_format format);

struct usage {
    int prompt_tokens = 0;
    int completion_tokens = 0;
    int cached_tokens = 0;  // prompt tokens whose KV was already resident (prefix cache)
};

struct completion {
    std::string id;  // "chatcmpl-..."
    std::string model;
    int64_t created = 0;  // unix seconds
    std::string content;
    std::string reasoning_content;  // thinking families: the text of the think block, apart from content
    std::vector<tool_call> tool_calls;
    std::string finish_reason = "stop";  // stop, length, tool_calls
    usage tokens;
};

// The non-streamed response (object chat.completion).
std::string completion_json(const completion& c);

// One streamed piece of the assistant message.
struct delta {
    bool role = false;             // the first chunk: {"role": "assistant", "content": ""}
    std::string content;           // text (may be empty)
    std::string reasoning_content; // thinking text (may be empty)
    int tool_index = -1;           // >= 0: a tool_calls fragment for this index
    std::string tool_id;           // first fragment of a call: id, type and name
    std::string tool_name;
    std::string arguments;         // a fragment of the arguments text, in order
    std::string finish_reason;     // not empty: the last content chunk
};

// One chunk (object chat.completion.chunk), without the SSE framing.
std::string chunk_json(const completion& head, const delta& d);
// The final usage chunk (choices: []).
std::string usage_chunk_json(const completion& head, const usage& u);

// "chatcmpl-" and 24 random hex digits; "call_" and 24 hex digits, or for
// Mistral, whose template takes only 9 alphanumeric characters, 9 hex digits.
std::string make_completion_id();
std::string make_tool_call_id(tool_call_syntax syntax = tool_call_syntax::hermes);

// Sampling of a request: temperature 0 is greedy; seed given or random.
sampling_params sampling_of(const chat_request& request);

}  // namespace tachyon::openai
