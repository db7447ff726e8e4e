// Chat formats: how a conversation becomes the prompt text a model family
// was trained on, and how that family writes a tool call. One native
// renderer per family reproduces the family's own chat template byte for
// byte (tested against the Jinja2 renders in the conformance folder);
// templates are not interpreted. Each family is one row of the table in
// chat_format.cpp: its name, how its template text is recognised, its
// renderer, its tool-call syntax (runtime/formats/tool_call_parser.h) and the
// text that opens a call (the trigger of constrained decoding).
//
// The family is detected from the model's tokenizer.chat_template by the
// features of the text (markers, fixed sentences), or named by the user
// (--chat-format, an agent's "chat_format"). A template of an unknown
// family is an error naming the known ones, so a prompt is never rendered
// in the wrong format; templates of families tachyon does not run are
// recognised and named as such.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon {

enum class chat_format {
    chatml,       // ChatML, Hermes <tool_call> blocks (tachyon's own model, SmolLM2, generic ChatML)
    qwen2_5,      // Qwen2.5: ChatML with Qwen's default system prompt
    hermes,       // Hermes 2 Pro / Hermes 3 tool_use template
    qwen3,        // Qwen3: ChatML with <think> blocks
    qwq,          // QwQ: ChatML, the reply opens a <think> block
    smollm3,      // SmolLM3: ChatML with a metadata system block, /think and /no_think
    llama3,       // Llama 3 (3.0): header tokens, no tools
    llama3_1,     // Llama 3.1 / 3.3: fixed "Today Date" fallback, JSON calls
    llama3_2,     // Llama 3.2: today's date
    mistral,      // Mistral v3-tekken (Nemo): [AVAILABLE_TOOLS], [TOOL_CALLS]
    mistral_small3_2,  // Mistral Small 3.2: [SYSTEM_PROMPT], [TOOL_CALLS]name[CALL_ID]id[ARGS]
    devstral,     // Devstral Small 2507: [SYSTEM_PROMPT], [TOOL_CALLS]name[ARGS]
    ministral3,   // Ministral 3 (Reasoning): [SYSTEM_PROMPT] with [THINK], [TOOL_CALLS]name[ARGS]
    phi3_5,       // Phi-3.5-mini: <|user|> ... <|end|>, no tools
    phi4_mini,    // Phi-4-mini: <|tool|> definitions, <|tool_call|> calls
    granite3_3,   // Granite 3.3: <|start_of_role|>, <|tool_call|> arrays
    granite4_0,   // Granite 4.0: <|start_of_role|>, <tool_call> blocks, a default system turn
    granite4_1,   // Granite 4.1: as 4.0 without the default system turn
    gemma2,       // Gemma 2: no system role
    gemma3,       // Gemma 3: the system text opens the first user turn
    deepseek_r1,  // DeepSeek-R1 distills: <｜User｜>/<｜Assistant｜>, <think>
    deepseek_r1_qwen,  // the newer DeepSeek-R1-Distill-Qwen template: writes calls, enable_thinking
};

// How a family's model writes tool calls (runtime/formats/tool_call_parser.h).
enum class tool_call_syntax {
    hermes,   // <tool_call>{"name": ..., "arguments": ...}</tool_call> blocks
    llama3,   // a bare {"name": ..., "parameters": ...} object, or after <|python_tag|>
    mistral,  // [TOOL_CALLS][{"name": ..., "arguments": ..., "id": ...}, ...] (Nemo)
    mistral_named,     // [TOOL_CALLS]name[ARGS]{...}, one per call (Devstral, Ministral 3)
    mistral_named_id,  // [TOOL_CALLS]name[CALL_ID]id[ARGS]{...} (Mistral Small 3.2)
    phi4,     // <|tool_call|>[{"name": ..., "arguments": ...}]<|/tool_call|>
    granite,  // <|tool_call|>[{"name": ..., "arguments": ...}, ...] to the end of the turn
    qwen3,    // hermes blocks after a <think>...</think> reasoning block
    none,     // the family's template has no tool calls
};

std::string_view to_string(chat_format format);
// "hermes", "llama3", ... ("none" for a family without tool calls).
std::string_view to_string(tool_call_syntax syntax);
// How `format` writes a call, for messages and `tachyon inspect`: the
// syntax and the text that opens a call ("hermes <tool_call>",
// "mistral [TOOL_CALLS]"), or "none".
std::string describe_tool_calls(chat_format format);
// The text that opens a call of `syntax` (the trigger of constrained
// decoding), from the family table; empty for none.
std::string_view call_trigger_of(tool_call_syntax syntax);

struct chat_date {
    int year = 2026, month = 1, day = 1;
    static chat_date today();  // the local date
};

struct chat_tool_call {
    std::string id;              // empty: none given (Mistral writes it, others ignore it)
    std::string name;
    std::string arguments_json;  // a JSON object
};

struct chat_message {
    std::string role;     // "system", "user", "assistant" or "tool"
    std::string content;  // an assistant turn may hold its calls as raw model text instead of tool_calls
    std::vector<chat_tool_call> tool_calls;        // assistant: structured calls, written in the family's syntax
    std::string tool_call_id;                      // tool: the call it answers
    std::string name;                              // tool: the tool's name
    std::optional<std::string> reasoning_content;  // assistant: the thinking text, apart from content
};

struct chat_render_options {
    // End with the opening of an assistant turn, for the model to continue.
    bool add_generation_prompt = true;
    // Tool definitions, each one JSON object on one line
    // ({"type": "function", "function": {...}}). Empty: no tools.
    std::vector<std::string> tools;
    // The text of the BOS token where the template writes it; unset: not
    // written (the tokenizer adds BOS).
    std::optional<std::string> bos_token;
    // The text of the EOS token where the template writes it (Mistral after
    // each answer); unset: the family's usual one.
    std::optional<std::string> eos_token;
    // Thinking families: false renders the template's enable_thinking=false.
    std::optional<bool> enable_thinking;
    // The template's strftime_now() date; unset: today.
    std::optional<chat_date> date;
};

// One row of the family table.
struct chat_family {
    chat_format format;
    std::string_view name;    // what --chat-format and "chat_format" accept
    std::string_view models;  // which models use it, for help texts and errors
    tool_call_syntax syntax;
    std::string_view call_trigger;  // the text that opens a call; empty: no tool calls
    std::string_view default_eos;
    // Recognises the family's template text.
    bool (*matches)(std::string_view template_text);
    result<std::string> (*render)(std::span<const chat_message> messages, const chat_render_options& options);
};

// Every family, in detection order.
std::span<const chat_family> chat_families();
const chat_family& family_of(chat_format format);
// "chatml, qwen2.5, hermes, ..." for messages.
std::string chat_format_names();

// A family by its name (and a few aliases: "qwen", "llama-3", ...).
result<chat_format> chat_format_from_name(std::string_view name);

// Recognises the family of a tokenizer.chat_template text. Unknown, or a
// family tachyon does not run: an error that says which, names the known
// families and how to choose one.
result<chat_format> detect_chat_format(std::string_view template_text);

// `name` if not empty (it overrides the template), else detection.
result<chat_format> select_chat_format(std::string_view template_text, std::string_view name = {});

// The "# Tools" section of a ChatML system prompt, exactly as DESIGN.md
// shows it, from "# Tools" to the closing </tool_call> (no trailing newline).
// Errors: a tool definition that is empty or spans lines.
result<std::string> render_tools_section(std::span<const std::string> tools);

// The system prompt text: `instructions`, a blank line, then the tools
// section; the section alone when there are no instructions.
result<std::string> system_prompt_with_tools(std::string_view instructions, std::span<const std::string> tools);

// Renders the conversation in the family's format, as its template does.
// Errors: an unknown role; whatever the family's template refuses (a
// system message for Gemma 2, two calls in one Llama 3.1 turn, ...), with
// the template's reason.
result<std::string> render_chat(chat_format format, std::span<const chat_message> messages,
                                const chat_render_options& options = {});

}  // namespace tachyon
