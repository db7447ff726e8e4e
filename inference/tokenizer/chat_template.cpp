#include "inference/tokenizer/chat_template.h"

namespace tachyon {
namespace {

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

bool known_role(std::string_view role) {
    return role == "system" || role == "user" || role == "assistant" || role == "tool";
}

std::string_view trim(std::string_view s) {
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

result<std::string> render_chatml(std::span<const chat_message> messages, const chat_render_options& options) {
    std::string out;
    size_t first = 0;
    if (!options.tools.empty()) {
        // The tools join the leading system message, or open the prompt.
        const bool has_system = !messages.empty() && messages[0].role == "system";
        result<std::string> system =
            system_prompt_with_tools(has_system ? std::string_view(messages[0].content) : std::string_view(),
                                     options.tools);
        if (!system) return system.err();
        out += "<|im_start|>system\n" + *system + "<|im_end|>\n";
        first = has_system ? 1 : 0;
    }
    for (size_t i = first; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        if (m.role == "tool") {
            // Consecutive tool results share one user turn, in call order.
            const bool opens = i == first || messages[i - 1].role != "tool";
            const bool closes = i + 1 == messages.size() || messages[i + 1].role != "tool";
            if (opens) out += "<|im_start|>user";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
            if (closes) out += "<|im_end|>\n";
            continue;
        }
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    }
    if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

result<std::string> render_llama3(std::span<const chat_message> messages, const chat_render_options& options) {
    if (!options.tools.empty()) {
        return make_error(errc::unsupported,
                          "chat template llama3: tool definitions in the prompt are rendered for chatml only");
    }
    std::string out;
    for (const chat_message& m : messages) {
        const std::string_view role = m.role == "tool" ? std::string_view("ipython") : std::string_view(m.role);
        out += "<|start_header_id|>";
        out += role;
        out += "<|end_header_id|>\n\n";
        out += trim(m.content);
        out += "<|eot_id|>";
    }
    if (options.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

}  // namespace

std::string_view to_string(chat_format format) {
    switch (format) {
        case chat_format::chatml: return "chatml";
        case chat_format::llama3: return "llama3";
    }
    return "unknown";
}

result<chat_format> chat_format_from_name(std::string_view name) {
    if (name == "chatml" || name == "qwen" || name == "hermes") return chat_format::chatml;
    if (name == "llama3" || name == "llama-3") return chat_format::llama3;
    return make_error(errc::invalid_argument,
                      "chat template '" + std::string(name) + "': unknown built-in format (expected chatml or llama3)");
}

result<chat_format> detect_chat_format(std::string_view template_text) {
    if (template_text.find("<|im_start|>") != std::string_view::npos) return chat_format::chatml;
    if (template_text.find("<|start_header_id|>") != std::string_view::npos) return chat_format::llama3;
    if (template_text.empty()) {
        return make_error(errc::not_found,
                          "tokenizer.chat_template: the model has no chat template; pass a built-in format "
                          "(chatml or llama3)");
    }
    constexpr size_t k_quote = 60;
    std::string start(template_text.substr(0, k_quote));
    for (char& c : start) {
        if (c == '\n') c = ' ';
    }
    return make_error(errc::unsupported, "tokenizer.chat_template: unrecognised template \"" + start +
                                             (template_text.size() > k_quote ? "...\"" : "\"") +
                                             "; pass a built-in format (chatml or llama3)");
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
    switch (format) {
        case chat_format::chatml: return render_chatml(messages, options);
        case chat_format::llama3: return render_llama3(messages, options);
    }
    return make_error(errc::internal, "render_chat: unhandled format");
}

}  // namespace tachyon
