// The family renderers of the chat-format table (chat_format.cpp) and what
// they share. Internal to runtime/formats/.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/formats/chat_format.h"
#include "runtime/formats/json_value.h"

namespace tachyon::formats {

using render_fn = result<std::string>(std::span<const chat_message>, const chat_render_options&);

render_fn render_chatml, render_qwen2_5, render_qwq, render_hermes, render_qwen3, render_smollm3;
render_fn render_llama3, render_llama3_1, render_llama3_2;
render_fn render_mistral, render_mistral_small3_2, render_devstral, render_ministral3;
render_fn render_phi3_5, render_phi4_mini;
render_fn render_granite3_3, render_granite4_0, render_granite4_1;
render_fn render_gemma2, render_gemma3;
render_fn render_deepseek_r1, render_deepseek_r1_qwen;

// An error of `family`'s template, as it raises it.
error template_error(std::string_view family, std::string_view message);

// The tool definitions parsed (each {"type": "function", "function": {...}}).
result<std::vector<json_value>> parse_tools(const chat_render_options& options, std::string_view family);
// tool.function when present, else the tool itself.
const json_value& function_of(const json_value& tool);
// A call's arguments as `tojson` writes them.
result<std::string> arguments_dumps(const chat_tool_call& call, std::string_view family);
result<json_value> arguments_value(const chat_tool_call& call, std::string_view family);

std::string bos_of(const chat_render_options& options);
std::string eos_of(const chat_render_options& options, chat_format format);

// Python's str.strip() / lstrip() / rstrip() (whitespace), and of one
// character set.
std::string_view py_strip(std::string_view s);
std::string_view strip_chars(std::string_view s, std::string_view chars);
std::string_view lstrip_chars(std::string_view s, std::string_view chars);
std::string_view rstrip_chars(std::string_view s, std::string_view chars);

// strftime of the options' date (today when unset) for the formats the
// templates use: "%d %b %Y" ("15 Jan 2026"), "%B %d, %Y" ("January 15,
// 2026"), "%Y-%m-%d", "%d %B %Y".
std::string format_date(const chat_render_options& options, std::string_view strftime_format);

}  // namespace tachyon::formats
