// The Llama 3 families. Llama 3.0 writes only headers and trimmed content;
// 3.1 / 3.3 and 3.2 add the system block of Meta's template: "Environment:
// ipython" with tools, the knowledge and today's dates, and the tool
// definitions (indented JSON) in the first user turn; a call is a bare
// {"name": ..., "parameters": ...} object, its result an ipython turn.
#include "runtime/formats/renderers.h"

namespace tachyon::formats {
namespace {

constexpr std::string_view k_header_end = "<|end_header_id|>\n\n";

// The 3.1+ template. `date`: the "Today Date" text.
result<std::string> render_meta(std::span<const chat_message> messages, const chat_render_options& options,
                                std::string_view family, const std::string& date) {
    auto tools = parse_tools(options, family);
    if (!tools) return tools.err();
    const bool with_tools = !options.tools.empty();
    std::string out = bos_of(options);
    std::string system;
    size_t first = 0;
    if (!messages.empty() && messages[0].role == "system") {
        system = std::string(py_strip(messages[0].content));
        first = 1;
    }
    out += "<|start_header_id|>system";
    out += k_header_end;
    if (with_tools) out += "Environment: ipython\n";
    out += "Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n";
    out += system + "<|eot_id|>";
    if (with_tools) {
        // The tools go into the first user message, as the template's default
        // tools_in_user_message does.
        if (first == messages.size())
            return template_error(family, "Cannot put tools in the first user message when there's no first user message!");
        out += "<|start_header_id|>user";
        out += k_header_end;
        out += "Given the following functions, please respond with a JSON for a function call with its proper "
               "arguments that best answers the given prompt.\n\n";
        out += "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its "
               "value}.Do not use variables.\n\n";
        for (const auto& t : *tools) out += t.dumps(4) + "\n\n";
        out += std::string(py_strip(messages[first].content)) + "<|eot_id|>";
        ++first;
    }
    for (size_t i = first; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        if (m.role == "tool") {
            out += "<|start_header_id|>ipython";
            out += k_header_end;
            // The template tests `content is iterable`, which a string is:
            // the result goes in as a JSON string.
            append_python_json_string(out, m.content);
            out += "<|eot_id|>";
        } else if (!m.tool_calls.empty()) {
            if (m.tool_calls.size() != 1)
                return template_error(family, "This model only supports single tool-calls at once!");
            auto args = arguments_dumps(m.tool_calls[0], family);
            if (!args) return args.err();
            out += "<|start_header_id|>assistant";
            out += k_header_end;
            out += "{\"name\": \"" + m.tool_calls[0].name + "\", \"parameters\": " + *args + "}<|eot_id|>";
        } else {
            out += "<|start_header_id|>" + m.role + std::string(k_header_end) + std::string(py_strip(m.content)) +
                   "<|eot_id|>";
        }
    }
    if (options.add_generation_prompt) {
        out += "<|start_header_id|>assistant";
        out += k_header_end;
    }
    return out;
}

}  // namespace

// Llama 3 (3.0): tool results are ipython turns; content is trimmed as the
// reference template does; it has no tool definitions.
result<std::string> render_llama3(std::span<const chat_message> messages, const chat_render_options& options) {
    if (!options.tools.empty())
        return template_error("llama3", "the Llama 3 template has no tool definitions (use llama3.1 for tools)");
    std::string out = bos_of(options);
    for (const chat_message& m : messages) {
        const std::string_view role = m.role == "tool" ? std::string_view("ipython") : std::string_view(m.role);
        out += "<|start_header_id|>";
        out += role;
        out += k_header_end;
        out += py_strip(m.content);
        out += "<|eot_id|>";
    }
    if (options.add_generation_prompt) {
        out += "<|start_header_id|>assistant";
        out += k_header_end;
    }
    return out;
}

// Llama 3.1 and 3.3: their templates fall back to a fixed date.
result<std::string> render_llama3_1(std::span<const chat_message> messages, const chat_render_options& options) {
    return render_meta(messages, options, "llama3.1", "26 Jul 2024");
}

// Llama 3.2: today's date (strftime_now).
result<std::string> render_llama3_2(std::span<const chat_message> messages, const chat_render_options& options) {
    return render_meta(messages, options, "llama3.2", format_date(options, "%d %b %Y"));
}

}  // namespace tachyon::formats
