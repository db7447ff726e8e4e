#include "examples/incident/transcript.h"

#include <fstream>
#include <sstream>

#include "examples/incident/json_text.h"

namespace incident {

tachyon::result<std::string> render_system_prompt(std::string_view instructions, const tachyon::tools::registry& tools,
                                                  const std::vector<std::string>& tool_names) {
    std::string out(instructions);
    out += "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
           "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n";
    for (const auto& name : tool_names) {
        auto t = tools.find(name);
        if (!t)
            return tachyon::make_error(tachyon::errc::not_found,
                                       "system prompt: tool '" + name + "' is not registered");
        out += "{\"type\": \"function\", \"function\": {\"name\": ";
        append_json_string(out, t->name());
        out += ", \"description\": ";
        append_json_string(out, t->description());
        out += ", \"parameters\": ";
        out += t->parameters_schema();
        out += "}}\n";
    }
    out += "</tools>\n\nFor each function call, return a json object with function name and arguments within "
           "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
           "<args-json-object>}\n</tool_call>";
    return out;
}

std::string render_tool_call(const tool_call& call) {
    std::string out = "<tool_call>\n{\"name\": ";
    append_json_string(out, call.name);
    out += ", \"arguments\": " + call.arguments_json + "}\n</tool_call>";
    return out;
}

std::string render_assistant(const exchange& turn) {
    std::string out = turn.content;
    for (const auto& call : turn.calls) {
        if (!out.empty()) out += "\n";
        out += render_tool_call(call);
    }
    return out;
}

std::vector<segment> render_segments(const conversation& c) {
    std::vector<segment> out;
    std::string pending = "<|im_start|>system\n" + c.system + "<|im_end|>\n<|im_start|>user\n" + c.task +
                          "<|im_end|>\n<|im_start|>assistant\n";
    for (size_t k = 0; k < c.turns.size(); ++k) {
        const exchange& turn = c.turns[k];
        out.push_back({std::move(pending), false});
        out.push_back({render_assistant(turn) + "<|im_end|>", turn.learn});
        pending.clear();
        if (turn.results.empty()) continue;
        pending = "\n<|im_start|>user\n";
        for (size_t i = 0; i < turn.results.size(); ++i) {
            if (i) pending += "\n";
            pending += "<tool_response>\n" + turn.results[i] + "\n</tool_response>";
        }
        pending += "<|im_end|>\n<|im_start|>assistant\n";
    }
    if (!pending.empty()) out.push_back({std::move(pending), false});
    return out;
}

std::string join_segments(const std::vector<segment>& segments) {
    std::string out;
    for (const auto& s : segments) out += s.text;
    return out;
}

tachyon::result<std::string> read_instructions(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return tachyon::make_error(tachyon::errc::io_error, "instructions: cannot read " + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
    if (text.empty()) return tachyon::make_error(tachyon::errc::parse_error, "instructions: " + path + " is empty");
    return text;
}

}  // namespace incident
