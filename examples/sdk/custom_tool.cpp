// Builds an agent in code with a tool written in C++: the incident analyst,
// whose `recent_changes` tool reads the deploy history from "your own
// system" (here, the incident's change log) instead of the built-in tool.
// The other tools are built-ins, configured in code.
//
// Usage: custom_tool MODEL.gguf INSTRUCTIONS.txt INCIDENT_DIR TASK
//   e.g. custom_tool examples/incident/model/incident-analyst.gguf examples/incident/instructions.txt
//            /tmp/incident "$(cat /tmp/incident/task.txt)"   (one line)
//
// Exit status: 0 verified answer, 1 no verified answer, 2 bad arguments or agent.
#include <tachyon/tachyon.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

namespace sdk = tachyon::sdk;

namespace {

// The answer the agent must give: a JSON Schema the runtime enforces while
// the model writes (fields marked x-grounded may only hold values seen in the run).
const char* k_answer_schema = R"({
  "type": "object",
  "properties": {
    "root_cause_service": {"type": "string", "x-grounded": true, "pattern": "^[a-z][a-z0-9-]*[a-z0-9]$"},
    "fault_type": {"type": "string", "enum": ["connection_pool_exhaustion", "oom_kill", "bad_deploy", "certificate_expiry",
                   "disk_full", "upstream_timeout", "rate_limited", "cache_stampede", "config_error", "slow_query", "deadlock", "dns_failure"]},
    "first_bad_timestamp": {"type": "string", "x-grounded": true, "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"},
    "evidence": {"type": "array", "items": {"type": "string", "x-grounded": true, "pattern": "^[a-z][a-z0-9-]*:[0-9]+$"},
                 "minItems": 1, "maxItems": 5}
  },
  "required": ["root_cause_service", "fault_type", "first_bad_timestamp", "evidence"],
  "additionalProperties": false
})";

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5) {
        std::cerr << "usage: custom_tool MODEL.gguf INSTRUCTIONS.txt INCIDENT_DIR TASK\n";
        return 2;
    }
    const std::string model = argv[1], instructions = read_file(argv[2]), incident_dir = argv[3], task = argv[4];
    if (instructions.empty()) {
        std::cerr << argv[2] << ": cannot read the instructions\n";
        return 2;
    }

    // The C++ tool: name, description and argument schema are what the model
    // reads; the lambda runs on the tool pool with arguments already valid
    // for the schema, and returns the text the model reads (or an error it reads).
    std::atomic<int> n_calls{0};
    const std::string change_log = incident_dir + "/changes/changes.log";
    auto recent_changes = sdk::make_tool(
        {"recent_changes", "Deploys, config changes, feature flags and scaling events, newest last.",
         R"({"type":"object","properties":{"service":{"type":"string","x-grounded":true},"since":{"type":"string"}},"required":[],"additionalProperties":false})"},
        [&n_calls, change_log](std::string_view arguments_json) -> sdk::result<std::string> {
            ++n_calls;
            auto args = sdk::tool_arguments::parse(arguments_json);
            if (!args) return args.error();
            const std::string service = args->string("service").value_or("");
            const std::string since = args->string("since").value_or("");
            std::ifstream in(change_log);
            if (!in) return sdk::error{sdk::errc::not_found, "recent_changes: no change log at " + change_log};
            std::string out, line;
            for (int line_no = 1; std::getline(in, line); ++line_no) {
                if (!service.empty() && line.find(" " + service + " ") == std::string::npos) continue;
                if (!since.empty() && line.compare(0, since.size(), since) < 0) continue;  // ISO times sort as text
                out += "changes:" + std::to_string(line_no) + " " + line + "\n";
            }
            return out.empty() ? std::string("no changes found\n") : out;
        });

    // The agent, built in code: instructions, model, tools in the order the
    // model sees them (built-ins with their settings, and the C++ tool),
    // budgets, the check that verifies the answer, and the answer's schema.
    const std::map<std::string, std::string> root{{"root", incident_dir}};
    sdk::agent_spec spec;
    spec.name = "incident-analyst-cpp";
    spec.instructions = instructions;
    spec.model = model;
    spec.chat_format = "chatml";
    spec.tools = {{"error_summary", root}, {"get_trace", root}, {"search_logs", root}, recent_changes, {"read_lines", root}};
    spec.tools[1].grounding = {{"trace_id", "^[0-9a-f]{8,32}$"}};
    spec.tools[2].grounding = {{"service", "^[a-z][a-z0-9-]*[a-z0-9]$"}};
    spec.tools[3].grounding = {{"service", "^[a-z][a-z0-9-]*[a-z0-9]$"}};
    spec.tools[4].grounding = {{"id", "^[a-z][a-z0-9-]*:[0-9]+$"}};
    spec.budgets.max_steps = 10;
    spec.budgets.max_tokens = 3000;
    spec.verify = {{"verify_root_cause",
                    {{"service", "$.root_cause_service"}, {"fault_type", "$.fault_type"},
                     {"first_bad_timestamp", "$.first_bad_timestamp"}, {"evidence", "$.evidence"}},
                    root}};
    spec.output_schema = k_answer_schema;

    // Validate it: a bad key or value is an error naming the agent and the field.
    auto agent = sdk::agent::build(spec);
    if (!agent) {
        std::cerr << agent.error().message << "\n";
        return 2;
    }

    // Run it and print the outcome, with how often the model used the C++ tool.
    sdk::runtime runtime;
    sdk::run_result result = runtime.run(*agent, task);
    std::cout << "state: " << sdk::to_string(result.state) << "\n"
              << "verified: " << (result.verified ? "yes" : "no") << "\n"
              << "answer: " << (result.answer.empty() ? "(none)" : result.answer) << "\n"
              << "tool calls: " << result.calls.size() << "\n"
              << "C++ tool calls: " << n_calls.load() << "\n";
    return result.verified ? 0 : 1;
}
