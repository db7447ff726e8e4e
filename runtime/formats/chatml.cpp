// The ChatML families: tachyon's own ChatML, Qwen2.5, QwQ, the Hermes
// tool_use template, Qwen3 and SmolLM3. Each follows its model's template line by
// line; where they differ is noted.
#include "runtime/formats/renderers.h"

namespace tachyon::formats {
namespace {

constexpr std::string_view k_qwen_default_system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

constexpr std::string_view k_qwen_tools_head =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view k_qwen_tools_tail =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

// Consecutive tool results share one user turn of <tool_response> blocks.
void append_tool_result(std::string& out, std::span<const chat_message> messages, size_t i) {
    if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
    out += "\n<tool_response>\n" + messages[i].content + "\n</tool_response>";
    if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
}

result<std::string> qwen_tools_block(const chat_render_options& options, std::string_view family) {
    auto tools = parse_tools(options, family);
    if (!tools) return tools.err();
    std::string out(k_qwen_tools_head);
    for (const auto& t : *tools) out += "\n" + t.dumps();
    out += k_qwen_tools_tail;
    return out;
}

}  // namespace

// tachyon's ChatML (DESIGN.md "Prompt format"): the tools join the leading
// system message, or open the prompt; structured calls are written as the
// model writes them, after the content.
result<std::string> render_chatml(std::span<const chat_message> messages, const chat_render_options& options) {
    std::string out;
    size_t first = 0;
    if (!options.tools.empty()) {
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
            // Results of the turn's calls share one user turn, in call order.
            if (i == first || messages[i - 1].role != "tool") out += "<|im_start|>user";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
            if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
            continue;
        }
        std::string content = m.content;
        for (const auto& call : m.tool_calls) {
            if (!content.empty()) content += "\n";
            std::string name;
            append_python_json_string(name, call.name);
            content += "<tool_call>\n{\"name\": " + name + ", \"arguments\": " +
                       (call.arguments_json.empty() ? std::string("{}") : call.arguments_json) + "}\n</tool_call>";
        }
        out += "<|im_start|>" + m.role + "\n" + content + "<|im_end|>\n";
    }
    if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

result<std::string> render_qwen2_5(std::span<const chat_message> messages, const chat_render_options& options) {
    const bool has_system = !messages.empty() && messages[0].role == "system";
    std::string out;
    if (!options.tools.empty()) {
        out += "<|im_start|>system\n";
        out += has_system ? std::string_view(messages[0].content) : k_qwen_default_system;
        auto block = qwen_tools_block(options, "qwen2.5");
        if (!block) return block.err();
        out += "\n\n" + *block;
    } else {
        out += "<|im_start|>system\n";
        out += has_system ? std::string_view(messages[0].content) : k_qwen_default_system;
        out += "<|im_end|>\n";
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        if (m.role == "user" || (m.role == "system" && i > 0) || (m.role == "assistant" && m.tool_calls.empty())) {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            out += "<|im_start|>assistant";
            if (!m.content.empty()) out += "\n" + m.content;
            for (const auto& call : m.tool_calls) {
                auto args = arguments_dumps(call, "qwen2.5");
                if (!args) return args.err();
                out += "\n<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + *args + "}\n</tool_call>";
            }
            out += "<|im_end|>\n";
        } else if (m.role == "tool") {
            append_tool_result(out, messages, i);
        }
    }
    if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

// QwQ: Qwen2.5's tools block without a default system prompt, reasoning
// before the last </think> dropped from earlier answers, and a reply that
// opens with "<think>\n" (closed at once unless enable_thinking is true:
// the template tests `not enable_thinking`, so undefined closes it too).
result<std::string> render_qwq(std::span<const chat_message> messages, const chat_render_options& options) {
    constexpr std::string_view family = "qwq";
    const bool has_system = !messages.empty() && messages[0].role == "system";
    std::string out;
    if (!options.tools.empty()) {
        auto block = qwen_tools_block(options, family);
        if (!block) return block.err();
        out += "<|im_start|>system\n" + (has_system ? messages[0].content : std::string()) + "\n\n" + *block;
    } else if (has_system) {
        out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        if (m.role == "user" || (m.role == "system" && i > 0)) {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            std::string content = m.content;
            if (i + 1 < messages.size()) {
                const size_t end = content.rfind("</think>");
                if (end != std::string::npos) content = content.substr(end + 8);
                content = std::string(lstrip_chars(content, "\n"));
            }
            if (m.tool_calls.empty()) {
                out += "<|im_start|>assistant\n" + content + "<|im_end|>\n";
                continue;
            }
            out += "<|im_start|>assistant";
            if (!m.content.empty()) out += "\n" + content;
            for (const auto& call : m.tool_calls) {
                auto args = arguments_dumps(call, family);
                if (!args) return args.err();
                out += "\n<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + *args + "}\n</tool_call>";
            }
            out += "<|im_end|>\n";
        } else if (m.role == "tool") {
            append_tool_result(out, messages, i);
        }
    }
    if (options.add_generation_prompt) {
        out += "<|im_start|>assistant\n<think>\n";
        if (!options.enable_thinking.value_or(false)) out += "</think>";
    }
    return out;
}

namespace {

// The Hermes template's json_to_python_type macro.
std::string python_type(const json_value* spec) {
    const json_value* type = spec != nullptr ? spec->find("type") : nullptr;
    if (type == nullptr) return "Any";
    if (type->is_string()) {
        const std::string& t = type->str();
        if (t == "string") return "str";
        if (t == "number") return "float";
        if (t == "integer") return "int";
        if (t == "boolean") return "bool";
        // `json_spec|items` hands the macro a list, whose type is undefined.
        if (t == "array") return "list[Any]";
        if (t == "object") {
            const json_value* ap = spec->find("additionalProperties");
            return ap != nullptr ? "dict[str, " + python_type(ap) + "]" : "dict";
        }
        // A string is iterable in Jinja: one "Any" per character.
        std::string out = "Union[";
        for (size_t i = 0; i < t.size(); ++i) out += i ? ",Any" : "Any";
        return out + "]";
    }
    if (type->type() == json_value::kind::array) {
        std::string out = "Union[";
        for (size_t i = 0; i < type->items().size(); ++i) {
            if (i) out += ",";
            json_value one;
            if (type->items()[i].is_string()) {
                auto parsed = json_value::parse("{\"type\": " + type->items()[i].dumps() + "}", "type");
                out += parsed ? python_type(&*parsed) : "Any";
            } else {
                out += "Any";
            }
        }
        return out + "]";
    }
    return "Any";
}

std::string str_or_empty(const json_value* v) { return v != nullptr && v->is_string() ? v->str() : std::string(); }

}  // namespace

// The Hermes 2 Pro / Hermes 3 tool_use template. It loops over the tools
// unconditionally, so without tools it fails, as with Python Jinja2 (HF
// then uses the repository's default template).
result<std::string> render_hermes(std::span<const chat_message> messages, const chat_render_options& options) {
    if (options.tools.empty())
        return template_error("hermes", "the tool_use template renders only with tools (it iterates over none)");
    auto tools = parse_tools(options, "hermes");
    if (!tools) return tools.err();
    std::string out = bos_of(options);
    out +=
        "<|im_start|>system\nYou are a function calling AI model. You are provided with function signatures within "
        "<tools></tools> XML tags. You may call one or more functions to assist with the user query. Don't make "
        "assumptions about what values to plug into functions. Here are the available tools: <tools> ";
    for (size_t ti = 0; ti < tools->size(); ++ti) {
        const json_value& tool = function_of((*tools)[ti]);
        const std::string name = str_or_empty(tool.find("name"));
        const json_value* params = tool.find("parameters");
        const json_value* props = params != nullptr ? params->find("properties") : nullptr;
        static const std::vector<std::pair<std::string, json_value>> none;
        const auto& members = props != nullptr ? props->members() : none;
        out += "{\"type\": \"function\", \"function\": {\"name\": \"" + name + "\", \"description\": \"" + name + "(";
        for (size_t i = 0; i < members.size(); ++i) {
            if (i) out += ", ";
            out += members[i].first + ": " + python_type(&members[i].second);
        }
        out += ")";
        const json_value* ret = tool.find("return");
        if (ret != nullptr) out += " -> " + python_type(ret);
        out += " - " + str_or_empty(tool.find("description")) + "\n\n";
        for (size_t i = 0; i < members.size(); ++i) {
            if (i == 0) out += "    Args:\n";
            out += "        " + members[i].first + "(" + python_type(&members[i].second) +
                   "): " + std::string(py_strip(str_or_empty(members[i].second.find("description"))));
        }
        if (ret != nullptr && ret->find("description") != nullptr)
            out += "\n    Returns:\n        " + str_or_empty(ret->find("description"));
        out += "\", \"parameters\": ";
        out += members.empty() ? std::string("{}") : (params != nullptr ? params->dumps() : std::string("{}"));
        out += "}";
        if (ti + 1 < tools->size()) out += "\n";
    }
    out += " </tools>";
    out +=
        "Use the following pydantic model json schema for each tool call you will make: {\"properties\": {\"name\": "
        "{\"title\": \"Name\", \"type\": \"string\"}, \"arguments\": {\"title\": \"Arguments\", \"type\": \"object\"}}, "
        "\"required\": [\"name\", \"arguments\"], \"title\": \"FunctionCall\", \"type\": \"object\"}}\n"
        "For each function call return a json object with function name and arguments within <tool_call></tool_call> "
        "XML tags as follows:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-dict>}\n"
        "</tool_call><|im_end|>\n";
    for (size_t i = 0; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        const bool last = i + 1 == messages.size();
        if (m.role == "user" || m.role == "system" || (m.role == "assistant" && m.tool_calls.empty())) {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            out += "<|im_start|>assistant";
            for (const auto& call : m.tool_calls) {
                auto args = arguments_dumps(call, "hermes");
                if (!args) return args.err();
                out += "\n<tool_call>\n{\"name\": \"" + call.name + "\", \"arguments\": " + *args + "}\n</tool_call>";
            }
            out += "<|im_end|>\n";
        } else if (m.role == "tool") {
            if (i > 0 && messages[i - 1].role != "tool") out += "<|im_start|>tool\n";
            out += "<tool_response>\n" + m.content + (last ? "\n</tool_response>" : "\n</tool_response>\n");
            if (last || messages[i + 1].role != "tool") out += "<|im_end|>";
        }
    }
    if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

namespace {

std::string_view after_last(std::string_view s, std::string_view sep) {
    const size_t at = s.rfind(sep);
    return at == std::string_view::npos ? s : s.substr(at + sep.size());
}

std::string_view before_first(std::string_view s, std::string_view sep) {
    const size_t at = s.find(sep);
    return at == std::string_view::npos ? s : s.substr(0, at);
}

}  // namespace

// Qwen3: a <think> block is written for the assistant turns after the last
// user query (the turns of the current tool loop), taken from
// reasoning_content or split off the content at </think>.
result<std::string> render_qwen3(std::span<const chat_message> messages, const chat_render_options& options) {
    const bool has_system = !messages.empty() && messages[0].role == "system";
    std::string out;
    if (!options.tools.empty()) {
        out += "<|im_start|>system\n";
        if (has_system) out += messages[0].content + "\n\n";
        auto block = qwen_tools_block(options, "qwen3");
        if (!block) return block.err();
        out += *block;
    } else if (has_system) {
        out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
    }
    // The last user message that is not a wrapped tool response.
    size_t last_query = messages.empty() ? 0 : messages.size() - 1;
    for (size_t k = messages.size(); k-- > 0;) {
        const chat_message& m = messages[k];
        if (m.role == "user" && !(m.content.starts_with("<tool_response>") && m.content.ends_with("</tool_response>"))) {
            last_query = k;
            break;
        }
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        const bool last = i + 1 == messages.size();
        if (m.role == "user" || (m.role == "system" && i > 0)) {
            out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            std::string content = m.content;
            std::string reasoning;
            if (m.reasoning_content) {
                reasoning = *m.reasoning_content;
            } else if (m.content.find("</think>") != std::string::npos) {
                content = std::string(lstrip_chars(after_last(m.content, "</think>"), "\n"));
                reasoning = std::string(lstrip_chars(
                    after_last(rstrip_chars(before_first(m.content, "</think>"), "\n"), "<think>"), "\n"));
            }
            if (i > last_query && (last || !reasoning.empty())) {
                out += "<|im_start|>assistant\n<think>\n" + std::string(strip_chars(reasoning, "\n")) + "\n</think>\n\n" +
                       std::string(lstrip_chars(content, "\n"));
            } else {
                out += "<|im_start|>assistant\n" + content;
            }
            for (size_t c = 0; c < m.tool_calls.size(); ++c) {
                if ((c == 0 && !content.empty()) || c > 0) out += "\n";
                auto args = arguments_dumps(m.tool_calls[c], "qwen3");
                if (!args) return args.err();
                out += "<tool_call>\n{\"name\": \"" + m.tool_calls[c].name + "\", \"arguments\": " + *args +
                       "}\n</tool_call>";
            }
            out += "<|im_end|>\n";
        } else if (m.role == "tool") {
            append_tool_result(out, messages, i);
        }
    }
    if (options.add_generation_prompt) {
        out += "<|im_start|>assistant\n";
        if (options.enable_thinking == false) out += "<think>\n\n</think>\n\n";
    }
    return out;
}

// SmolLM3 (the template llama.cpp ships): a metadata system block whose
// reasoning mode is /think unless enable_thinking is false or the system
// text says /no_think; the template writes no tools and drops calls.
result<std::string> render_smollm3(std::span<const chat_message> messages, const chat_render_options& options) {
    bool think = options.enable_thinking.value_or(true);
    std::string custom;
    if (!messages.empty() && messages[0].role == "system") {
        const std::string& s = messages[0].content;
        if (s.find("/no_think") != std::string::npos) think = false;
        else if (s.find("/think") != std::string::npos) think = true;
        std::string c = s;
        for (std::string_view tag : {std::string_view("/no_think"), std::string_view("/think")}) {
            for (size_t at; (at = c.find(tag)) != std::string::npos;) c.erase(at, tag.size());
        }
        custom = std::string(rstrip_chars(c, " \t\n\r\v\f"));
    }
    std::string out = "<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: ";
    out += think ? "/think" : "/no_think";
    out += "\n\n## Custom Instructions\n\n";
    if (!custom.empty()) {
        out += custom + "\n\n";
    } else if (think) {
        out +=
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face. Your role as an assistant involves "
            "thoroughly exploring questions through a systematic thinking process before providing the final precise "
            "and accurate solutions. This requires engaging in a comprehensive cycle of analysis, summarizing, "
            "exploration, reassessment, reflection, backtracking, and iteration to develop well-considered thinking "
            "process. Please structure your response into two main sections: Thought and Solution using the specified "
            "format: <think> Thought section </think> Solution section. In the Thought section, detail your reasoning "
            "process in steps. Each step should include detailed considerations such as analysing questions, "
            "summarizing relevant findings, brainstorming new ideas, verifying the accuracy of the current steps, "
            "refining any errors, and revisiting previous steps. In the Solution section, based on various attempts, "
            "explorations, and reflections from the Thought section, systematically present the final solution that "
            "you deem correct. The Solution section should be logical, accurate, and concise and detail necessary "
            "steps needed to reach the conclusion.\n\n";
    } else {
        out += "You are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n";
    }
    out += "<|im_end|>\n";
    for (const chat_message& m : messages) {
        if (m.role == "user") {
            out += "<|im_start|>user\n" + m.content + "<|im_end|>\n";
        } else if (m.role == "assistant") {
            out += "<|im_start|>assistant\n";
            if (!think) out += "<think>\n\n</think>\n";
            out += std::string(lstrip_chars(m.content, "\n")) + "<|im_end|>\n";
        } else if (m.role == "tool") {
            out += "<|im_start|>user\n" + m.content + "<|im_end|>\n";
        }
    }
    if (options.add_generation_prompt) out += think ? "<|im_start|>assistant\n" : "<|im_start|>assistant\n<think>\n\n</think>\n";
    return out;
}

}  // namespace tachyon::formats
