// tachyon C++ SDK: agents. An agent is instructions, a model, the tools it
// may call (built-ins with settings, or C++ tools), budgets, checks that
// verify its final answer, and the JSON Schema that answer must satisfy.
// Load one from an agent file (agents/README.md documents the format) or
// build one in code from an agent_spec; both validate everything up front
// and return an error naming the file or agent, the key and what was
// expected.
//
//   tachyon::sdk::agent_spec spec;
//   spec.name = "support";
//   spec.instructions = "Answer from the order database.";
//   spec.model = "model.gguf";
//   spec.tools = {lookup_order};            // a tool from make_tool()
//   auto agent = tachyon::sdk::agent::build(spec);
//   if (!agent) std::cerr << agent.error().message << "\n";
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tachyon/mcp.h"
#include "tachyon/result.h"
#include "tachyon/sampling.h"
#include "tachyon/tool.h"

namespace tachyon::sdk {

// One tool an agent may call: a built-in by name with its settings, or a C++ tool.
struct tool_use {
    // A built-in tool (error_summary, search_logs, read_file, shell, ...) with its settings.
    tool_use(std::string builtin_name, std::map<std::string, std::string> builtin_settings = {})
        : name(std::move(builtin_name)), settings(std::move(builtin_settings)) {}
    // A C++ tool (make_tool() or a class derived from sdk::tool).
    template <class T>
        requires std::is_base_of_v<tool, T>
    tool_use(std::shared_ptr<T> custom_tool) : custom(std::move(custom_tool)) {
        if (custom) name = custom->name();
    }

    std::string name;
    std::map<std::string, std::string> settings;  // built-ins only; values may hold {placeholders}
    std::optional<int64_t> timeout_ms;            // overrides agent_budgets::tool_timeout_ms
    std::map<std::string, std::string> grounding; // argument → pattern its values must match (values seen in the run)
    std::shared_ptr<tool> custom;                 // set for a C++ tool
};

// When a run stops without a verified answer.
struct agent_budgets {
    int max_steps = 8;               // model turns
    int max_tokens = 4096;           // generated tokens, all turns together
    int64_t deadline_ms = 120000;    // wall time from start to verified answer
    int64_t tool_timeout_ms = 10000; // per tool call
};

// One check of the final answer: a tool (built-in or one of the agent's C++
// tools) called with arguments taken from the answer. It passes when the
// tool succeeds with a text that starts with "verified"; otherwise the
// tool's text (or error) is fed back to the model, which tries again.
struct verify_check {
    std::string tool;
    // argument name → "$.field" (copies that field of the answer) or a JSON literal ("42", "\"text\"")
    std::vector<std::pair<std::string, std::string>> arguments;
    std::map<std::string, std::string> settings;  // built-in tool settings
};

// An agent described in code (the fields of an agent file).
struct agent_spec {
    std::string name;                 // required
    std::string description;
    std::string instructions;         // the system prompt; {placeholders} come from run_options::inputs
    // Path of a GGUF model file (must exist), or a model served elsewhere
    // as the JSON object agent files take (agents/README.md, "Remote models"):
    // R"({"url": "http://gpu-box:8000/v1", "name": "qwen2.5-7b", "tools": "server"})".
    std::string model;
    std::string chat_format;          // "chatml", "llama3", or empty: from the model's template
    sampling_options sampling;        // greedy by default
    std::vector<tool_use> tools;      // in the order the model sees them
    std::vector<mcp_server> mcp_servers;  // their tools follow `tools` (tachyon/mcp.h)
    agent_budgets budgets;
    std::vector<verify_check> verify;
    int max_verify_retries = 2;       // failed verifications fed back before the run fails
    std::string output_schema;        // JSON Schema of the final answer; empty: the agent answers in prose
};

// A validated agent, cheap to copy and safe to run many times at once.
class agent {
public:
    // Loads an agent file; `custom_tools` supplies tools the file names that are not built-ins.
    static result<agent> load(const std::string& path, std::vector<std::shared_ptr<tool>> custom_tools = {});
    // Parses agent file text; `file_name` names it in errors and anchors relative paths.
    static result<agent> parse(std::string_view json, const std::string& file_name,
                               std::vector<std::shared_ptr<tool>> custom_tools = {});
    // Validates an agent described in code.
    static result<agent> build(const agent_spec& spec);

    // The agent's name.
    const std::string& name() const;
    // The agent's description.
    const std::string& description() const;
    // The model file the agent runs on.
    const std::string& model_path() const;
    // The tools the model sees, in order.
    std::vector<std::string> tool_names() const;
    // The {placeholder} names run_options::inputs must fill, sorted.
    std::vector<std::string> placeholders() const;

private:
    struct impl;
    explicit agent(std::shared_ptr<const impl> i) : impl_(std::move(i)) {}
    friend struct agent_access;
    std::shared_ptr<const impl> impl_;
};

}  // namespace tachyon::sdk
