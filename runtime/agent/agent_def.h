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
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "inference/engine/sampler.h"
#include "runtime/remote/remote_model.h"

namespace tachyon {

struct agent_tool {
    std::string name;                           // a built-in tool name
    std::map<std::string, std::string> settings;  // values as given (strings; {placeholders} allowed)
    std::optional<int64_t> timeout_ms;          // overrides budgets.tool_timeout_ms
    // Grounded argument → pattern its values must match (runtime/constrain/schema_pattern.h
    // subset). Narrows the values seen in the run to the right kind (trace ids,
    // line ids) without changing the schema the model reads.
    std::map<std::string, std::string> grounding;
    // Each call waits for a person's approval before it starts (the run is
    // parked in state awaiting_approval until then); a rejection is the
    // error the model reads.
    bool requires_approval = false;
};

// An MCP server whose tools join the agent's ("mcp_servers"): a process
// spoken to over stdio (`command`) or an endpoint of Streamable HTTP
// (`url`). Its tools (all it lists, or `tools` of them, in that
// order) come after the agent's `tools`, with the server's names and schemas.
struct agent_mcp_server {
    std::string name;
    std::vector<std::string> command;         // argv
    std::map<std::string, std::string> env;   // added to a minimal environment
    std::string cwd;                          // empty: the current directory
    std::string url;                          // http://host[:port]/path, instead of command
    std::map<std::string, std::string> headers;  // sent with every HTTP request
    std::string bearer_env;                   // environment variable holding a bearer token
    std::vector<std::string> tools;           // empty: every tool it lists
    std::vector<std::string> read_only;       // may run speculatively, beside those it annotates readOnlyHint
    std::map<std::string, std::vector<std::string>> grounded;  // tool -> arguments whose values are grounded
    std::optional<int64_t> timeout_ms;        // per request (progress extends it); default 30000
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

// What a run input holds. Path kinds are checked to exist when a run starts
// and, over HTTP, to resolve inside the server's data roots.
enum class agent_input_type {
    string,     // any text
    file,       // an existing regular file
    directory,  // an existing directory
    path,       // an existing file or directory
};

struct agent_input {
    agent_input_type type = agent_input_type::string;
    std::string description;
};

// "string", "file", "directory", "path".
std::string_view to_string(agent_input_type type);

struct agent_definition {
    std::string file;           // where it was loaded from
    std::string name;
    std::string description;
    std::string instructions;   // system prompt text, may hold {placeholders}
    std::string model;          // resolved path of the GGUF file; a remote model's "name at url"
    // Set: "model" named a server (an object, runtime/remote/remote_model.h)
    // instead of a GGUF file; runs generate their turns there.
    std::shared_ptr<const remote::remote_model> remote;
    std::string chat_format;    // empty: detect from the model's template
    sampling_params sampling = sampling_params::greedy();
    std::vector<agent_tool> tools;
    std::vector<agent_mcp_server> mcp_servers;
    agent_budgets budgets;
    std::vector<agent_verify_check> verify;
    int max_verify_retries = 2;
    std::string output_schema;  // minified JSON Schema of the final answer; empty: any JSON object
    // Declared run inputs ("inputs"), by name. Without the key (declares_inputs
    // false) a local run takes any --input, and an HTTP run takes none.
    bool declares_inputs = false;
    std::map<std::string, agent_input> inputs;

    // Placeholder names used anywhere ({name}), sorted, unique.
    std::vector<std::string> placeholders() const;
};

// Agent files and instructions_file are read only when they are regular
// files of at most this size.
inline constexpr size_t agent_file_max_bytes = size_t{1} << 20;

// Loads and validates an agent file. A relative model path resolves against
// the file's folder; the model file must exist and start with the GGUF magic.
// Tool names must be known to `known_tools` (when not empty); a built-in
// tool's grounding must name one of its grounded arguments. Placeholders must
// name declared inputs (when the file declares inputs); a literal tool root
// must be a directory.
result<agent_definition> load_agent_file(const std::string& path, const std::vector<std::string>& known_tools = {});
result<agent_definition> parse_agent_definition(std::string_view json_text, const std::string& file_name,
                                                const std::vector<std::string>& known_tools = {});

// Where a run's path inputs may point: the server's data roots. A path
// input must resolve (symlinks followed) to one of them or below; with no
// roots, path inputs are refused.
struct input_confinement {
    std::vector<std::string> data_roots;
};

// Checks a run's inputs against the agent's declarations before it starts:
// every declared input given, none undeclared, path kinds existing (and
// confined inside the data roots when `confinement` is given: a remote
// caller), and each tool root a directory once the placeholders are filled.
// Errors name the input ("inputs.incident_dir: ...") or the file and key of
// the tool root. Returns the inputs to run with: under confinement, path
// inputs are replaced by their resolved path, so the run reads the path that
// was checked rather than following the link again. An agent that declares
// no inputs takes any input locally; under confinement it takes none.
result<std::map<std::string, std::string>> check_run_inputs(const agent_definition& agent,
                                                            const std::map<std::string, std::string>& inputs,
                                                            const input_confinement* confinement = nullptr);

// A tool's settings object as the tools read it: strings as they are, other
// values as minified JSON. An error when `json_text` is not a JSON object.
result<std::map<std::string, std::string>> parse_tool_settings(std::string_view json_text);

// Replaces each {name} (name = [A-Za-z_][A-Za-z0-9_]*) with inputs[name].
// Other braces are left alone. An unknown name is an error naming it and `what`.
result<std::string> fill_placeholders(std::string_view text, const std::map<std::string, std::string>& inputs,
                                      std::string_view what);

}  // namespace tachyon
