// Chat prompt rendering for the two built-in formats: ChatML with
// Hermes-style tool calls (Qwen2.5, Hermes; the format tachyon's own model is
// trained on, see DESIGN.md "Prompt format") and Llama 3. The format is
// chosen from the model's tokenizer.chat_template text or by name; templates
// are not interpreted (no Jinja): a template of an unknown family is an
// error, so a prompt is never silently rendered in the wrong format.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon {

enum class chat_format { chatml, llama3 };

std::string_view to_string(chat_format format);

struct chat_message {
    std::string role;     // "system", "user", "assistant" or "tool"
    std::string content;  // assistant tool calls are part of the text (<tool_call> blocks)
};

struct chat_render_options {
    // End with the opening of an assistant turn, for the model to continue.
    bool add_generation_prompt = true;
    // Tool definitions, each one JSON object on one line
    // ({"type": "function", "function": {...}}), written into the system
    // prompt (ChatML only). Empty: no tools section.
    std::vector<std::string> tools;
};

// "chatml" or "llama3" (also "llama-3", "qwen", "hermes").
result<chat_format> chat_format_from_name(std::string_view name);

// Recognises the family of a tokenizer.chat_template text by the markers
// it writes (<|im_start|>, <|start_header_id|>). Unknown: an error that
// quotes the start of the template and names the built-in formats.
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

// Renders the conversation. ChatML: consecutive tool messages become one
// user turn of <tool_response> blocks, in order; tools (if any) go into the
// first system message, or into a system message of their own placed first.
// Llama 3: tool results are "ipython" turns; content is trimmed as the
// reference template does; BOS is not written (the tokenizer adds it).
// Errors: an unknown role; tools with a format that has no tools section.
result<std::string> render_chat(chat_format format, std::span<const chat_message> messages,
                                const chat_render_options& options = {});

}  // namespace tachyon
