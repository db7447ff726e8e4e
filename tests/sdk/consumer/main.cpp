// An outside program using the installed SDK: a C++ tool, an agent built in
// code (one with a bad setting first), a chat completion and an agent run
// on the model given on the command line. Prints "consumer: ok" when every
// step behaves as documented.
//
// Usage: consumer MODEL.gguf
#include <tachyon/tachyon.h>

#include <iostream>
#include <string>

namespace sdk = tachyon::sdk;

namespace {

int fail(const std::string& what) {
    std::cerr << "consumer: " << what << "\n";
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) return fail("usage: consumer MODEL.gguf");
    const std::string model_path = argv[1];

    // A C++ tool from a lambda.
    auto clock = sdk::make_tool({"clock", "The current time.", R"({"type":"object","properties":{}})"},
                                [](std::string_view) { return std::string("2026-11-30T12:00:00Z"); });

    // An agent with a misspelt setting is refused with a message naming the agent, the tool and the key.
    sdk::agent_spec spec;
    spec.name = "consumer";
    spec.instructions = "Tell the time.";
    spec.model = model_path;
    spec.tools = {clock, {"search_logs", {{"rooot", "/tmp"}}}};
    auto bad = sdk::agent::build(spec);
    if (bad.ok()) return fail("an agent with a misspelt setting was accepted");
    if (bad.error().message != "agent 'consumer': tools[1]: tool search_logs: unknown setting 'rooot' (expected: root, year, tz)") {
        return fail("unexpected error: " + bad.error().message);
    }

    // The same agent with only the C++ tool builds.
    spec.tools = {clock};
    spec.budgets.max_steps = 2;
    spec.budgets.max_tokens = 200;
    auto agent = sdk::agent::build(spec);
    if (!agent) return fail(agent.error().message);

    // A runtime: one agent run on the model, with events.
    sdk::runtime runtime;
    int n_events = 0;
    sdk::run_options options;
    options.on_event = [&](const sdk::event&) { ++n_events; };
    sdk::run_result result = runtime.run(*agent, "What time is it?", options);
    if (result.steps < 1 || n_events == 0) return fail("the run made no model turn: " + result.error);
    std::cout << "run: " << sdk::to_string(result.state) << " after " << result.steps << " steps, " << n_events << " events\n";

    // Plain chat on the model the runtime opened for the run.
    auto model = runtime.open_model(model_path);
    if (!model) return fail(model.error().message);
    sdk::chat_options chat;
    chat.max_tokens = 8;
    auto reply = model->chat({{"user", "hello"}}, chat);
    if (!reply) return fail(reply.error().message);
    if (reply->completion_tokens < 1) return fail("chat generated nothing");
    std::cout << "chat: " << reply->completion_tokens << " tokens, finish " << reply->finish << "\n";

    std::cout << "consumer: ok\n";
    return 0;
}
