#include "runtime/formats/chat_format.h"

#include <ctime>

#include "base/assert.h"

#include "runtime/formats/renderers.h"

namespace tachyon {
namespace {

bool has(std::string_view text, std::string_view marker) { return text.find(marker) != std::string_view::npos; }

bool is_hermes(std::string_view t) { return has(t, "<|im_start|>") && has(t, "function calling AI model"); }
bool is_smollm3(std::string_view t) { return has(t, "<|im_start|>") && has(t, "/no_think"); }
bool is_qwen3(std::string_view t) {
    return has(t, "<|im_start|>") && has(t, "<think>") && has(t, "last_query_index");
}
bool is_qwen2_5(std::string_view t) { return has(t, "<|im_start|>") && has(t, "You are Qwen, created by Alibaba Cloud"); }
bool is_chatml(std::string_view t) { return has(t, "<|im_start|>"); }
bool is_llama3_2(std::string_view t) {
    return has(t, "<|start_header_id|>") && has(t, "Cutting Knowledge Date") && has(t, "strftime_now");
}
bool is_llama3_1(std::string_view t) { return has(t, "<|start_header_id|>") && has(t, "Cutting Knowledge Date"); }
bool is_llama3(std::string_view t) { return has(t, "<|start_header_id|>"); }
bool is_mistral(std::string_view t) { return has(t, "[AVAILABLE_TOOLS]") && !has(t, "[SYSTEM_PROMPT]"); }
bool is_mistral_small3_2(std::string_view t) { return has(t, "[SYSTEM_PROMPT]") && has(t, "[CALL_ID]"); }
bool is_devstral(std::string_view t) { return has(t, "[SYSTEM_PROMPT]") && has(t, "You are Devstral"); }
bool is_ministral3(std::string_view t) { return has(t, "[SYSTEM_PROMPT]") && has(t, "[THINK]"); }
bool is_qwq(std::string_view t) {
    return has(t, "<|im_start|>") && has(t, "<think>") && !has(t, "last_query_index") && !has(t, "/no_think");
}
bool is_phi4_mini(std::string_view t) { return has(t, "<|assistant|>") && has(t, "<|tool|>"); }
bool is_phi3_5(std::string_view t) { return has(t, "<|user|>") && has(t, "<|end|>"); }
bool is_granite3_3(std::string_view t) {
    return has(t, "<|start_of_role|>") && has(t, "Knowledge Cutoff Date: April 2024");
}
bool is_granite4_0(std::string_view t) { return has(t, "<|start_of_role|>") && has(t, "g4_default_system_message"); }
bool is_granite4_1(std::string_view t) {
    return has(t, "<|start_of_role|>") && has(t, "tools_system_message_prefix") && !is_granite4_0(t);
}
bool is_gemma3(std::string_view t) { return has(t, "<start_of_turn>") && has(t, "first_user_prefix"); }
bool is_gemma2(std::string_view t) { return has(t, "<start_of_turn>"); }
bool is_deepseek_r1(std::string_view t) { return has(t, "<｜User｜>") && has(t, "<｜Assistant｜>"); }
bool is_deepseek_r1_qwen(std::string_view t) { return is_deepseek_r1(t) && has(t, "enable_thinking"); }

using namespace formats;

// The family table, in detection order: the more specific templates of a
// marker family (Hermes, Qwen3 ... inside ChatML) before the generic one.
// Adding a family: a row here and its renderer in runtime/formats/.
const chat_family k_families[] = {
    {chat_format::hermes, "hermes", "Hermes 2 Pro, Hermes 3 (tool_use template)", tool_call_syntax::hermes, "<tool_call>",
     "<|im_end|>", is_hermes, render_hermes},
    {chat_format::smollm3, "smollm3", "SmolLM3", tool_call_syntax::none, "", "<|im_end|>", is_smollm3,
     render_smollm3},
    {chat_format::qwen3, "qwen3", "Qwen3", tool_call_syntax::qwen3, "<tool_call>", "<|im_end|>", is_qwen3, render_qwen3},
    {chat_format::qwq, "qwq", "QwQ", tool_call_syntax::qwen3, "<tool_call>", "<|im_end|>", is_qwq, render_qwq},
    {chat_format::qwen2_5, "qwen2.5", "Qwen2.5", tool_call_syntax::hermes, "<tool_call>", "<|im_end|>", is_qwen2_5,
     render_qwen2_5},
    {chat_format::chatml, "chatml", "ChatML with Hermes tool calls (tachyon's own models, SmolLM2)",
     tool_call_syntax::hermes, "<tool_call>", "<|im_end|>", is_chatml, render_chatml},
    {chat_format::llama3_2, "llama3.2", "Llama 3.2", tool_call_syntax::llama3, "{\"name\"", "<|eot_id|>", is_llama3_2,
     render_llama3_2},
    {chat_format::llama3_1, "llama3.1", "Llama 3.1, Llama 3.3", tool_call_syntax::llama3, "{\"name\"", "<|eot_id|>",
     is_llama3_1, render_llama3_1},
    {chat_format::llama3, "llama3", "Llama 3", tool_call_syntax::none, "", "<|eot_id|>", is_llama3,
     render_llama3},
    {chat_format::mistral, "mistral", "Mistral v3-tekken (Mistral Nemo)", tool_call_syntax::mistral, "[TOOL_CALLS]",
     "</s>", is_mistral, render_mistral},
    {chat_format::mistral_small3_2, "mistral-small3.2", "Mistral Small 3.2", tool_call_syntax::mistral_named_id,
     "[TOOL_CALLS]", "</s>", is_mistral_small3_2, render_mistral_small3_2},
    {chat_format::devstral, "devstral", "Devstral Small 2507", tool_call_syntax::mistral_named, "[TOOL_CALLS]", "</s>",
     is_devstral, render_devstral},
    {chat_format::ministral3, "ministral3", "Ministral 3 (Reasoning)", tool_call_syntax::mistral_named,
     "[TOOL_CALLS]", "</s>", is_ministral3, render_ministral3},
    {chat_format::phi4_mini, "phi4-mini", "Phi-4-mini", tool_call_syntax::phi4, "<|tool_call|>", "<|endoftext|>",
     is_phi4_mini, render_phi4_mini},
    {chat_format::phi3_5, "phi3.5", "Phi-3.5-mini", tool_call_syntax::none, "", "<|endoftext|>", is_phi3_5,
     render_phi3_5},
    {chat_format::granite3_3, "granite3.3", "Granite 3.3", tool_call_syntax::granite, "<|tool_call|>",
     "<|end_of_text|>", is_granite3_3, render_granite3_3},
    {chat_format::granite4_0, "granite4.0", "Granite 4.0", tool_call_syntax::hermes, "<tool_call>", "<|end_of_text|>",
     is_granite4_0, render_granite4_0},
    {chat_format::granite4_1, "granite4.1", "Granite 4.1", tool_call_syntax::hermes, "<tool_call>", "<|end_of_text|>",
     is_granite4_1, render_granite4_1},
    {chat_format::gemma3, "gemma3", "Gemma 3", tool_call_syntax::none, "", "<eos>", is_gemma3, render_gemma3},
    {chat_format::gemma2, "gemma2", "Gemma 2", tool_call_syntax::none, "", "<eos>", is_gemma2, render_gemma2},
    {chat_format::deepseek_r1_qwen, "deepseek-r1-qwen", "DeepSeek-R1-Distill-Qwen (the template with enable_thinking)",
     tool_call_syntax::none, "", "<｜end▁of▁sentence｜>", is_deepseek_r1_qwen, render_deepseek_r1_qwen},
    {chat_format::deepseek_r1, "deepseek-r1", "DeepSeek-R1 distills (Llama, Qwen)", tool_call_syntax::none, "",
     "<｜end▁of▁sentence｜>", is_deepseek_r1, render_deepseek_r1},
};

// Templates of families tachyon recognises but does not run, checked
// before the table (several are ChatML underneath).
struct foreign_family {
    std::string_view name;
    bool (*matches)(std::string_view);
};
const foreign_family k_foreign[] = {
    {"gpt-oss (harmony)", [](std::string_view t) { return has(t, "<|channel|>"); }},
    {"LFM2", [](std::string_view t) { return has(t, "List of tools: ["); }},
    {"Qwen3-Coder / Qwen3.5 (XML <function=...> tool calls)", [](std::string_view t) { return has(t, "<function="); }},
    {"Gemma 4", [](std::string_view t) { return has(t, "<|turn>"); }},
    // Newer templates of known families that none of the table's rows matches.
    {"Mistral [SYSTEM_PROMPT] (other than Small 3.2, Devstral, Ministral 3)", [](std::string_view t) {
         return has(t, "[SYSTEM_PROMPT]") && !is_mistral_small3_2(t) && !is_devstral(t) && !is_ministral3(t);
     }},
    {"Granite (other than 3.3, 4.0, 4.1)", [](std::string_view t) {
         return has(t, "<|start_of_role|>") && !is_granite3_3(t) && !is_granite4_0(t) && !is_granite4_1(t);
     }},
    // llama.cpp's rewrite of the R1 template, not a model's own.
    {"llama.cpp DeepSeek-R1", [](std::string_view t) { return has(t, "flush_tool_outputs"); }},
};

struct alias {
    std::string_view name;
    chat_format format;
};
const alias k_aliases[] = {
    {"qwen", chat_format::chatml},       {"llama-3", chat_format::llama3},    {"llama3.3", chat_format::llama3_1},
    {"qwen2", chat_format::qwen2_5},     {"mistral-nemo", chat_format::mistral}, {"gemma", chat_format::gemma3},
    {"phi4", chat_format::phi4_mini},    {"granite", chat_format::granite3_3}, {"granite4", chat_format::granite4_1},
    {"mistral-small", chat_format::mistral_small3_2}, {"ministral", chat_format::ministral3},
};

bool known_role(std::string_view role) {
    return role == "system" || role == "user" || role == "assistant" || role == "tool";
}

constexpr std::string_view k_tools_head =
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n";

constexpr std::string_view k_tools_tail =
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n"
    "<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call>";

}  // namespace

chat_date chat_date::today() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    return {tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday};
}

std::span<const chat_family> chat_families() { return k_families; }

const chat_family& family_of(chat_format format) {
    for (const auto& f : k_families)
        if (f.format == format) return f;
    TACHYON_ASSERT(false, "chat format missing from the family table");
    return k_families[0];
}

std::string_view to_string(chat_format format) { return family_of(format).name; }

std::string_view to_string(tool_call_syntax syntax) {
    switch (syntax) {
        case tool_call_syntax::hermes: return "hermes";
        case tool_call_syntax::llama3: return "llama3";
        case tool_call_syntax::mistral: return "mistral";
        case tool_call_syntax::mistral_named: return "mistral-named";
        case tool_call_syntax::mistral_named_id: return "mistral-named-id";
        case tool_call_syntax::phi4: return "phi4";
        case tool_call_syntax::granite: return "granite";
        case tool_call_syntax::qwen3: return "qwen3";
        case tool_call_syntax::none: break;
    }
    return "none";
}

std::string_view call_trigger_of(tool_call_syntax syntax) {
    for (const auto& f : k_families)
        if (f.syntax == syntax) return f.call_trigger;
    return {};
}

std::string describe_tool_calls(chat_format format) {
    const chat_family& f = family_of(format);
    if (f.syntax == tool_call_syntax::none || f.call_trigger.empty()) return "none";
    return std::string(to_string(f.syntax)) + " " + std::string(f.call_trigger);
}

std::string chat_format_names() {
    std::string out;
    for (const auto& f : k_families) {
        if (!out.empty()) out += ", ";
        out += f.name;
    }
    return out;
}

result<chat_format> chat_format_from_name(std::string_view name) {
    for (const auto& f : k_families)
        if (f.name == name) return f.format;
    for (const auto& a : k_aliases)
        if (a.name == name) return a.format;
    if (name == "hermes") return chat_format::chatml;  // kept: "hermes" named the ChatML format before
    return make_error(errc::invalid_argument,
                      "chat format '" + std::string(name) + "': unknown (expected one of " + chat_format_names() + ")");
}

result<chat_format> detect_chat_format(std::string_view template_text) {
    const std::string how = "; choose a format with --chat-format or an agent's \"chat_format\" (one of " +
                            chat_format_names() + ")";
    if (template_text.empty())
        return make_error(errc::not_found, "tokenizer.chat_template: the model has no chat template" + how);
    for (const auto& f : k_foreign) {
        if (f.matches(template_text))
            return make_error(errc::unsupported, "tokenizer.chat_template: a " + std::string(f.name) +
                                                     " template; tachyon does not run this chat format" + how);
    }
    for (const auto& f : k_families)
        if (f.matches(template_text)) return f.format;
    constexpr size_t k_quote = 60;
    std::string start(template_text.substr(0, k_quote));
    for (char& c : start)
        if (c == '\n') c = ' ';
    return make_error(errc::unsupported, "tokenizer.chat_template: unrecognised template \"" + start +
                                             (template_text.size() > k_quote ? "...\"" : "\"") + how);
}

result<chat_format> select_chat_format(std::string_view template_text, std::string_view name) {
    if (!name.empty()) return chat_format_from_name(name);
    return detect_chat_format(template_text);
}

result<std::string> render_tools_section(std::span<const std::string> tools) {
    std::string out(k_tools_head);
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string& tool = tools[i];
        if (tool.empty() || tool.find('\n') != std::string::npos) {
            return make_error(errc::invalid_argument, "tool definition " + std::to_string(i) +
                                                          ": expected one JSON object on a single line");
        }
        out += tool;
        out += '\n';
    }
    out += k_tools_tail;
    return out;
}

result<std::string> system_prompt_with_tools(std::string_view instructions, std::span<const std::string> tools) {
    result<std::string> section = render_tools_section(tools);
    if (!section) return section.err();
    if (instructions.empty()) return section;
    return std::string(instructions) + "\n\n" + *section;
}

result<std::string> render_chat(chat_format format, std::span<const chat_message> messages,
                                const chat_render_options& options) {
    for (size_t i = 0; i < messages.size(); ++i) {
        if (!known_role(messages[i].role)) {
            return make_error(errc::invalid_argument, "chat message " + std::to_string(i) + ": unknown role '" +
                                                          messages[i].role +
                                                          "' (expected system, user, assistant or tool)");
        }
    }
    return family_of(format).render(messages, options);
}

namespace formats {

error template_error(std::string_view family, std::string_view message) {
    return make_error(errc::invalid_argument, "chat format " + std::string(family) + ": " + std::string(message));
}

result<std::vector<json_value>> parse_tools(const chat_render_options& options, std::string_view family) {
    std::vector<json_value> out;
    for (size_t i = 0; i < options.tools.size(); ++i) {
        auto v = json_value::parse(options.tools[i], "chat format " + std::string(family) + ": tool definition " +
                                                         std::to_string(i));
        if (!v) return v.err();
        if (!v->is_object())
            return template_error(family, "tool definition " + std::to_string(i) + ": expected a JSON object");
        out.push_back(std::move(v).value());
    }
    return out;
}

const json_value& function_of(const json_value& tool) {
    const json_value* f = tool.find("function");
    return f != nullptr ? *f : tool;
}

result<json_value> arguments_value(const chat_tool_call& call, std::string_view family) {
    auto v = json_value::parse(call.arguments_json.empty() ? std::string_view("{}") : call.arguments_json,
                               "chat format " + std::string(family) + ": arguments of the call to " + call.name);
    if (!v) return v.err();
    return v;
}

result<std::string> arguments_dumps(const chat_tool_call& call, std::string_view family) {
    auto v = arguments_value(call, family);
    if (!v) return v.err();
    return v->dumps();
}

std::string bos_of(const chat_render_options& options) { return options.bos_token.value_or(""); }

std::string eos_of(const chat_render_options& options, chat_format format) {
    return options.eos_token ? *options.eos_token : std::string(family_of(format).default_eos);
}

namespace {
bool is_py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
}  // namespace

std::string_view py_strip(std::string_view s) {
    while (!s.empty() && is_py_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_py_space(s.back())) s.remove_suffix(1);
    return s;
}

std::string_view lstrip_chars(std::string_view s, std::string_view chars) {
    while (!s.empty() && chars.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
    return s;
}

std::string_view rstrip_chars(std::string_view s, std::string_view chars) {
    while (!s.empty() && chars.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
    return s;
}

std::string_view strip_chars(std::string_view s, std::string_view chars) {
    return rstrip_chars(lstrip_chars(s, chars), chars);
}

std::string format_date(const chat_render_options& options, std::string_view f) {
    static constexpr std::string_view months[] = {"January", "February", "March",     "April",   "May",      "June",
                                                  "July",    "August",   "September", "October", "November", "December"};
    const chat_date d = options.date ? *options.date : chat_date::today();
    const std::string_view month = months[(d.month - 1 + 12) % 12];
    auto two = [](int v) { return (v < 10 ? "0" : "") + std::to_string(v); };
    std::string out;
    for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] != '%' || i + 1 == f.size()) {
            out += f[i];
            continue;
        }
        switch (f[++i]) {
            case 'd': out += two(d.day); break;
            case 'm': out += two(d.month); break;
            case 'Y': out += std::to_string(d.year); break;
            case 'b': out += month.substr(0, 3); break;
            case 'B': out += month; break;
            default: out += '%'; out += f[i];
        }
    }
    return out;
}

}  // namespace formats
}  // namespace tachyon
