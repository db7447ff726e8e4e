// Agent definition files (agents/*.json): what an agent is told, which model
// it runs on, which tools it may call with which settings, its budgets, how
// its final answer is verified, and the schema that answer must satisfy.
// The format is documented in agents/README.md and agents/agent.schema.json.
//
// Loading checks everything: an unknown key, a wrong type, a missing tool or
// model is an error naming the file, the key path and what was expected.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "inference/sampler.h"

namespace tachyon {

struct agent_tool {
    std::string name;                           // a built-in tool name
    std::map<std::string, std::string> settings;  // values as given (strings; {placeholders} allowed)
    std::optional<int64_t> timeout_ms;          // overrides budgets.tool_timeout_ms
    // Grounded argument → pattern its values must match (runtime/schema_pattern.h
    // subset). Narrows the values seen in the run to the right kind (trace ids,
    // line ids) without changing the schema the model reads.
    std::map<std::string, std::string> grounding;
};

struct agent_budgets {
    int max_steps = 8;            // model turns
    int max_tokens = 4096;        // generated tokens, all turns together
    int64_t deadline_ms = 120000; // wall time from start to verified answer
    int64_t tool_timeout_ms = 10000;
};

// One verification of the final answer: a tool called with arguments taken
// from the answer ("$.field" copies a field of the answer JSON; any other
// value is used literally).
struct agent_verify_check {
    std::string tool;
    std::vector<std::pair<std::string, std::string>> arguments;  // name → "$.field" or a JSON literal (minified)
    std::map<std::string, std::string> settings;                 // tool settings, as for agent_tool
};

struct agent_definition {
    std::string file;           // where it was loaded from
    std::string name;
    std::string description;
    std::string instructions;   // system prompt text, may hold {placeholders}
    std::string model;          // resolved path of the GGUF file
    std::string chat_format;    // empty: detect from the model's template
    sampling_params sampling = sampling_params::greedy();
    std::vector<agent_tool> tools;
    agent_budgets budgets;
    std::vector<agent_verify_check> verify;
    int max_verify_retries = 2;
    std::string output_schema;  // minified JSON Schema of the final answer; empty: any JSON object

    // Placeholder names used anywhere ({name}), sorted, unique.
    std::vector<std::string> placeholders() const;
};

// Loads and validates an agent file. A relative model path resolves against
// the file's folder; the model file must exist. Tool names must be known to
// `known_tools` (when not empty).
result<agent_definition> load_agent_file(const std::string& path, const std::vector<std::string>& known_tools = {});
result<agent_definition> parse_agent_definition(std::string_view json_text, const std::string& file_name,
                                                const std::vector<std::string>& known_tools = {});

// Replaces each {name} (name = [A-Za-z_][A-Za-z0-9_]*) with inputs[name].
// Other braces are left alone. An unknown name is an error naming it and `what`.
result<std::string> fill_placeholders(std::string_view text, const std::map<std::string, std::string>& inputs,
                                      std::string_view what);

}  // namespace tachyon
