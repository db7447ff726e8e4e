// Runs an agent file and prints every event of the run as it happens: model
// turns, the text the model writes, tool calls starting (often while the
// model is still writing) and ending, and the verification of the answer.
//
// Usage: stream_events AGENT.json TASK [NAME=VALUE ...]
//   e.g. stream_events agents/incident-analyst.json "$(cat /tmp/incident/task.txt)" incident_dir=/tmp/incident
//
// Exit status: 0 verified answer, 1 no verified answer, 2 bad arguments or agent file.
#include <tachyon/tachyon.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <variant>

namespace sdk = tachyon::sdk;

namespace {

// One line per event; the model's text goes out as it streams. Called on the
// runtime's event loop: quick, and never waits on the runtime.
void print_event(const sdk::event& e) {
    if (auto* t = std::get_if<sdk::turn_start_event>(&e)) {
        std::printf("\n[turn %d] ", t->step);
    } else if (auto* t = std::get_if<sdk::text_event>(&e)) {
        std::fwrite(t->text.data(), 1, t->text.size(), stdout);
    } else if (auto* t = std::get_if<sdk::turn_end_event>(&e)) {
        std::printf("\n[turn %d end] %d tokens generated in %.0f ms\n", t->turn.step, t->turn.generated_tokens,
                    t->turn.end_ms - t->turn.start_ms);
    } else if (auto* t = std::get_if<sdk::tool_start_event>(&e)) {
        std::printf("\n[tool start] %s %s%s\n", t->call.name.c_str(), t->call.arguments.c_str(),
                    t->call.early ? " (while the model is decoding)" : "");
    } else if (auto* t = std::get_if<sdk::tool_end_event>(&e)) {
        std::printf("[tool end] %s %s in %.1f ms, %zu bytes\n", t->call.name.c_str(), t->call.ok ? "ok" : "failed",
                    t->call.end_ms - t->call.start_ms, t->call.result.size());
    } else if (auto* t = std::get_if<sdk::verify_event>(&e)) {
        std::printf("[verify %d] %s %s\n", t->attempt, t->ok ? "passed" : "failed", t->message.substr(0, t->message.find('\n')).c_str());
    }
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: stream_events AGENT.json TASK [NAME=VALUE ...]\n";
        return 2;
    }

    // Load the agent file.
    auto agent = sdk::agent::load(argv[1]);
    if (!agent) {
        std::cerr << agent.error().message << "\n";
        return 2;
    }

    // Fill the agent's {placeholders} and ask for every event of the run.
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
    options.on_event = print_event;

    // Start the run; start() returns at once with a handle (wait, cancel, future).
    sdk::runtime runtime;
    sdk::run_handle run = runtime.start(*agent, argv[2], options);

    // Wait for the end while the events print, then summarise.
    const sdk::run_result& result = run.wait();
    std::printf("\nstate: %s, verified: %s, %d steps, %zu tool calls\n", std::string(sdk::to_string(result.state)).c_str(),
                result.verified ? "yes" : "no", result.steps, result.calls.size());
    if (!result.answer.empty()) std::printf("answer: %s\n", result.answer.c_str());
    return result.verified ? 0 : 1;
}
