// Runs an agent file on a task and prints how the run ended: the SDK's
// counterpart of `tachyon run`.
//
// Usage: run_agent_file AGENT.json TASK [NAME=VALUE ...]
//   e.g. run_agent_file agents/incident-analyst.json "$(cat /tmp/incident/task.txt)" incident_dir=/tmp/incident
//
// Exit status: 0 verified answer, 1 no verified answer, 2 bad arguments or agent file.
#include <tachyon/tachyon.h>

#include <iostream>
#include <string>

namespace sdk = tachyon::sdk;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: run_agent_file AGENT.json TASK [NAME=VALUE ...]\n";
        return 2;
    }

    // Load the agent file. Every key and value is checked; an error names the file and the key.
    sdk::result<sdk::agent> agent = sdk::agent::load(argv[1]);
    if (!agent) {
        std::cerr << agent.error().message << "\n";
        return 2;
    }

    // Fill the agent's {placeholders} (incident_dir for the incident analyst) from NAME=VALUE arguments.
    sdk::run_options options;
    for (int i = 3; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::cerr << "'" << arg << "': expected NAME=VALUE\n";
            return 2;
        }
        options.inputs[arg.substr(0, eq)] = arg.substr(eq + 1);
    }

    // Start the runtime: the event loop and the tool pool. The model opens on first use.
    sdk::runtime runtime;

    // Run the agent to a verified answer or a spent budget; this blocks.
    sdk::run_result result = runtime.run(*agent, argv[2], options);

    // Print how the run ended and what it cost.
    std::cout << "state: " << sdk::to_string(result.state) << "\n";
    if (!result.error.empty()) std::cout << "error: " << result.error << "\n";
    std::cout << "verified: " << (result.verified ? "yes" : "no") << "\n"
              << "answer: " << (result.answer.empty() ? "(none)" : result.answer) << "\n"
              << "steps: " << result.steps << "\n"
              << "tool calls: " << result.calls.size() << "\n"
              << "tokens: " << result.prefill_tokens << " prefilled, " << result.reused_tokens << " reused, "
              << result.generated_tokens << " generated\n"
              << "time to answer: " << result.time_to_answer_ms << " ms\n";
    return result.verified ? 0 : 1;
}
