// The families with their own markers: Phi-3.5 / Phi-4-mini, Granite 3.3,
// Gemma 2 / 3 and the DeepSeek-R1 distills.
#include "runtime/formats/renderers.h"

namespace tachyon::formats {

// Phi-3.5-mini: system (when not empty), user and assistant turns; the
// template has no tools and drops tool turns.
result<std::string> render_phi3_5(std::span<const chat_message> messages, const chat_render_options& options) {
    std::string out;
    for (const chat_message& m : messages) {
        if (m.role == "system" && !m.content.empty()) out += "<|system|>\n" + m.content + "<|end|>\n";
        else if (m.role == "user") out += "<|user|>\n" + m.content + "<|end|>\n";
        else if (m.role == "assistant") out += "<|assistant|>\n" + m.content + "<|end|>\n";
    }
    out += options.add_generation_prompt ? std::string("<|assistant|>\n") : eos_of(options, chat_format::phi3_5);
    return out;
}

// Phi-4-mini: '<|role|>' + content + '<|end|>'; the tools (a JSON list of
// functions) follow the system text inside <|tool|>...<|/tool|>, a system
// turn of its own when there is none; calls are <|tool_call|>[...] lists.
result<std::string> render_phi4_mini(std::span<const chat_message> messages, const chat_render_options& options) {
    auto tools = parse_tools(options, "phi4-mini");
    if (!tools) return tools.err();
    std::string tool_list;
    if (!tools->empty()) {
        tool_list = "[";
        for (size_t i = 0; i < tools->size(); ++i) tool_list += (i ? ", " : "") + function_of((*tools)[i]).dumps();
        tool_list += "]";
    }
    std::string out;
    const bool has_system = !messages.empty() && messages[0].role == "system";
    if (!tool_list.empty() && !has_system) out += "<|system|><|tool|>" + tool_list + "<|/tool|><|end|>";
    for (size_t i = 0; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        std::string content = m.content;
        if (!m.tool_calls.empty()) {
            content += "<|tool_call|>[";
            for (size_t c = 0; c < m.tool_calls.size(); ++c) {
                auto args = arguments_dumps(m.tool_calls[c], "phi4-mini");
                if (!args) return args.err();
                std::string name;
                append_python_json_string(name, m.tool_calls[c].name);
                content += (c ? ", " : "") + std::string("{\"name\": ") + name + ", \"arguments\": " + *args + "}";
            }
            content += "]<|/tool_call|>";
        }
        if (i == 0 && has_system && !tool_list.empty()) content += "<|tool|>" + tool_list + "<|/tool|>";
        out += "<|" + m.role + "|>" + content + "<|end|>";
    }
    out += options.add_generation_prompt ? std::string("<|assistant|>") : eos_of(options, chat_format::phi4_mini);
    return out;
}

// Granite 3.3: a default system text with the dates (and, with tools, how
// to call them), the tools as indented JSON in an available_tools turn;
// the template writes content only (calls are dropped).
result<std::string> render_granite3_3(std::span<const chat_message> messages, const chat_render_options& options) {
    auto tools = parse_tools(options, "granite3.3");
    if (!tools) return tools.err();
    std::string system;
    size_t first = 0;
    if (!messages.empty() && messages[0].role == "system") {
        system = messages[0].content;
        first = 1;
    } else {
        system = "Knowledge Cutoff Date: April 2024. Today's Date: " + format_date(options, "%B %d, %Y") +
                 ". You are Granite, developed by IBM.";
        if (!tools->empty()) {
            system +=
                " You are a helpful assistant with access to the following tools. When a tool is required to answer "
                "the user's query, respond only with <|tool_call|> followed by a JSON list of tools used. If a tool "
                "does not exist in the provided list of tools, notify the user that you do not have the ability to "
                "fulfill the request.";
        } else {
            system += " You are a helpful AI assistant.";
        }
    }
    std::string out = "<|start_of_role|>system<|end_of_role|>" + system + "<|end_of_text|>\n";
    if (!tools->empty()) {
        json_value list;
        std::string dumped = "[";
        // tojson(indent=4) of the list: each tool indented one level.
        for (size_t i = 0; i < tools->size(); ++i) {
            std::string t = (*tools)[i].dumps(4);
            std::string indented;
            for (char c : t) {
                indented += c;
                if (c == '\n') indented += "    ";
            }
            dumped += (i ? ",\n    " : "\n    ") + indented;
        }
        dumped += "\n]";
        out += "<|start_of_role|>available_tools<|end_of_role|>" + dumped + "<|end_of_text|>\n";
    }
    for (size_t i = first; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        out += "<|start_of_role|>" + m.role + "<|end_of_role|>" + m.content + "<|end_of_text|>\n";
        if (i + 1 == messages.size() && options.add_generation_prompt) out += "<|start_of_role|>assistant<|end_of_role|>";
    }
    return out;
}

namespace {

// Granite 4.0 and 4.1: the tools, one JSON object per line, in the system
// text; calls as <tool_call> blocks; consecutive results share one user
// turn. Without a system text or tools, 4.0 writes a default system turn
// and 4.1 none.
result<std::string> render_granite4(std::span<const chat_message> messages, const chat_render_options& options,
                                    bool default_system) {
    const std::string_view family = default_system ? "granite4.0" : "granite4.1";
    auto tools = parse_tools(options, family);
    if (!tools) return tools.err();
    std::string tools_text;
    if (!tools->empty()) {
        tools_text =
            "You are a helpful assistant with access to the following tools. You may call one or more tools to assist "
            "with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n"
            "<tools>";
        for (const auto& t : *tools) tools_text += "\n" + t.dumps();
        tools_text +=
            "\n</tools>\n\nFor each tool call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call>. If a tool does not exist in the provided list of tools, notify the user "
            "that you do not have the ability to fulfill the request.";
    }
    std::string system;
    if (!messages.empty() && messages[0].role == "system") {
        system = messages[0].content;
        if (!tools_text.empty()) system += "\n\n" + tools_text;
    } else {
        system = tools_text;
    }
    std::string out;
    if (!system.empty())
        out += "<|start_of_role|>system<|end_of_role|>" + system + "<|end_of_text|>\n";
    else if (default_system)
        out += "<|start_of_role|>system<|end_of_role|>You are a helpful assistant. Please ensure responses are "
               "professional, accurate, and safe.<|end_of_text|>\n";
    for (size_t i = 0; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        if (m.role == "user" || (m.role == "system" && i > 0)) {
            out += "<|start_of_role|>" + m.role + "<|end_of_role|>" + m.content + "<|end_of_text|>\n";
        } else if (m.role == "assistant") {
            out += "<|start_of_role|>assistant<|end_of_role|>" + m.content;
            for (size_t c = 0; c < m.tool_calls.size(); ++c) {
                if (c > 0 || !m.content.empty()) out += "\n";
                auto args = arguments_dumps(m.tool_calls[c], family);
                if (!args) return args.err();
                out += "<tool_call>\n{\"name\": \"" + m.tool_calls[c].name + "\", \"arguments\": " + *args +
                       "}\n</tool_call>";
            }
            out += "<|end_of_text|>\n";
        } else if (m.role == "tool") {
            if (i == 0 || messages[i - 1].role != "tool") out += "<|start_of_role|>user<|end_of_role|>";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
            if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|end_of_text|>\n";
        }
    }
    if (options.add_generation_prompt) out += "<|start_of_role|>assistant<|end_of_role|>";
    return out;
}

}  // namespace

result<std::string> render_granite4_0(std::span<const chat_message> messages, const chat_render_options& options) {
    return render_granite4(messages, options, true);
}

result<std::string> render_granite4_1(std::span<const chat_message> messages, const chat_render_options& options) {
    return render_granite4(messages, options, false);
}

namespace {

result<std::string> render_gemma(std::span<const chat_message> messages, const chat_render_options& options,
                                 bool merge_system) {
    const std::string_view family = merge_system ? "gemma3" : "gemma2";
    std::string prefix;
    std::span<const chat_message> turns = messages;
    if (!messages.empty() && messages[0].role == "system") {
        if (!merge_system) return template_error(family, "System role not supported");
        prefix = messages[0].content + "\n\n";
        turns = messages.subspan(1);
    }
    std::string out = bos_of(options);
    for (size_t i = 0; i < turns.size(); ++i) {
        const chat_message& m = turns[i];
        if ((m.role == "user") != (i % 2 == 0))
            return template_error(family, "Conversation roles must alternate user/assistant/user/assistant/...");
        out += "<start_of_turn>" + std::string(m.role == "assistant" ? "model" : m.role) + "\n";
        if (i == 0) out += prefix;
        out += std::string(py_strip(m.content)) + "<end_of_turn>\n";
    }
    if (options.add_generation_prompt) out += "<start_of_turn>model\n";
    return out;
}

}  // namespace

// Gemma 2 refuses a system message; Gemma 3 writes it at the start of the
// first user turn. Neither has a tool role.
result<std::string> render_gemma2(std::span<const chat_message> messages, const chat_render_options& options) {
    return render_gemma(messages, options, false);
}

result<std::string> render_gemma3(std::span<const chat_message> messages, const chat_render_options& options) {
    return render_gemma(messages, options, true);
}

namespace {

// The DeepSeek-R1 distill templates. `with_calls`: the newer Qwen distill
// copy, which writes the calls (tool_calls) and closes the think block
// unless enable_thinking is true; the older copies write calls only for a
// content of None, which a tachyon message never has.
result<std::string> render_r1(std::span<const chat_message> messages, const chat_render_options& options,
                              bool with_calls) {
    const std::string_view family = with_calls ? "deepseek-r1-qwen" : "deepseek-r1";
    std::string system;
    for (const chat_message& m : messages)
        if (m.role == "system") system = m.content;
    std::string out = bos_of(options) + system;
    bool is_tool = false, first_call = true, first_output = true;
    for (const chat_message& m : messages) {
        if (m.role == "user") {
            is_tool = false;
            out += "<｜User｜>" + m.content;
        }
        if (m.role == "assistant" && with_calls && !m.tool_calls.empty()) {
            is_tool = false;
            for (const auto& call : m.tool_calls) {
                auto args = arguments_dumps(call, family);
                if (!args) return args.err();
                out += first_call ? "<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>" : "\n<｜tool▁call▁begin｜>";
                out += "function<｜tool▁sep｜>" + call.name + "\n```json\n" + *args + "\n```<｜tool▁call▁end｜>";
                first_call = false;
            }
            out += "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>";
        }
        if (m.role == "assistant") {
            if (is_tool) {
                out += "<｜tool▁outputs▁end｜>" + m.content + "<｜end▁of▁sentence｜>";
                is_tool = false;
            } else {
                std::string_view content = m.content;
                if (const size_t at = content.rfind("</think>"); at != std::string_view::npos)
                    content = content.substr(at + 8);
                out += "<｜Assistant｜>" + std::string(content) + "<｜end▁of▁sentence｜>";
            }
        }
        if (m.role == "tool") {
            is_tool = true;
            out += first_output ? "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>" : "\n<｜tool▁output▁begin｜>";
            out += m.content + "<｜tool▁output▁end｜>";
            first_output = false;
        }
    }
    if (is_tool) out += "<｜tool▁outputs▁end｜>";
    if (options.add_generation_prompt && !is_tool) {
        out += "<｜Assistant｜><think>\n";
        if (with_calls && options.enable_thinking != true) out += "</think>";
    }
    return out;
}

}  // namespace

result<std::string> render_deepseek_r1(std::span<const chat_message> messages, const chat_render_options& options) {
    return render_r1(messages, options, false);
}

result<std::string> render_deepseek_r1_qwen(std::span<const chat_message> messages, const chat_render_options& options) {
    return render_r1(messages, options, true);
}

}  // namespace tachyon::formats
