// The conversation of one agent run and its rendering in the prompt format
// of DESIGN.md ("Prompt format": ChatML with Hermes-style tool calls). The
// rendering is cut into segments at every assistant turn so that training can
// learn the assistant's outputs only: segment boundaries fall right after
// "<|im_start|>assistant\n" and right after "<|im_end|>".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tools/core/tool.h"

namespace incident {

struct tool_call {
    std::string name;
    std::string arguments_json;  // compact object, ", " and ": " separators, fixed key order
};

// One assistant turn and what answered it. A turn with calls is answered by
// their results (one per call, in call order); a final answer may be answered
// by a verify feedback text (a rejection), else by nothing.
struct exchange {
    std::string content;                 // text before the calls, or the final answer JSON
    std::vector<tool_call> calls;
    std::vector<std::string> results;    // [calls.size()], or one feedback text after a final answer
    bool learn = true;                   // false: a deliberate mistake, context for a recovery but no training target
};

struct conversation {
    std::string system;  // the whole system prompt (instructions + tools section)
    std::string task;    // the user's first message
    std::vector<exchange> turns;
};

struct segment {
    std::string text;
    bool train = false;
};

// The system prompt: `instructions`, then the "# Tools" section listing
// `tool_names` (in that order) from `tools` with their parameters schema
// verbatim. Error when a name is not registered.
tachyon::result<std::string> render_system_prompt(std::string_view instructions, const tachyon::tools::registry& tools,
                                                  const std::vector<std::string>& tool_names);

// "<tool_call>\n{\"name\": \"...\", \"arguments\": {...}}\n</tool_call>"
std::string render_tool_call(const tool_call& call);
// The assistant's output of one turn (without <|im_start|>/<|im_end|>).
std::string render_assistant(const exchange& turn);

std::vector<segment> render_segments(const conversation& c);
std::string join_segments(const std::vector<segment>& segments);

// Reads the agent instructions (instructions.txt); trailing whitespace dropped.
tachyon::result<std::string> read_instructions(const std::string& path);

}  // namespace incident
