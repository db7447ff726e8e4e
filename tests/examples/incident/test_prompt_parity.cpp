// Training and serving never drift: the prompt the runtime renders for the
// shipped agent (agents/incident-analyst.json) is byte for byte the prompt
// the expert transcripts were trained on.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "examples/incident/trajectories.h"
#include "examples/incident/world.h"
#include "runtime/agent/agent_run.h"
#include "runtime/agent/tool_catalog.h"
#include "tests/runtime/scripted_model.h"

using namespace tachyon;

TEST_CASE("the runtime renders the shipped agent's first prompt exactly as the training transcripts do") {
    const std::string source = TACHYON_SOURCE_DIR;
    // The agent file names the shipped model; parse it without requiring the model file.
    std::ifstream in(source + "/agents/incident-analyst.json");
    std::stringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    const std::string model_key = "\"model\": \"../examples/incident/model/incident-analyst.gguf\"";
    REQUIRE(json.find(model_key) != std::string::npos);
    const auto dir = std::filesystem::temp_directory_path() / ("tachyon_parity_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "agents");
    std::ofstream(dir / "agents" / "stand-in.gguf") << "GGUF";
    json.replace(json.find(model_key), model_key.size(), "\"model\": \"stand-in.gguf\"");
    json.replace(json.find("\"../examples/incident/instructions.txt\""), std::string("\"../examples/incident/instructions.txt\"").size(),
                 "\"" + source + "/examples/incident/instructions.txt\"");
    auto agent = parse_agent_definition(json, (dir / "agents" / "incident-analyst.json").string(), builtin_tool_names());
    REQUIRE_MESSAGE(agent.ok(), (agent.ok() ? "" : agent.err().message));

    for (uint64_t seed : {7u, 1000003u}) {
        CAPTURE(seed);
        // The expert's transcript of this seed, as the training data has it.
        incident::trajectory_options o;
        o.instructions = agent->instructions;
        o.work_dir = dir / "work";
        auto t = incident::make_trajectory(seed, o);
        REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.err().message));
        std::string transcript;
        for (const auto& s : t->segments) transcript += s.text;

        // The runtime's rendering of the same task over the same incident.
        const auto incident_dir = dir / ("incident-" + std::to_string(seed));
        auto generated = incident::generate_incident(incident::plan_incident(seed), incident_dir);
        REQUIRE(generated.ok());
        std::ifstream task_in(incident_dir / "task.txt");
        std::string task((std::istreambuf_iterator<char>(task_in)), std::istreambuf_iterator<char>());
        while (!task.empty() && task.back() == '\n') task.pop_back();
        auto tok = scripted::chatml_tokenizer();
        auto host = model_host::create(std::make_unique<scripted::model>(tok, std::vector<std::string>{}), tok, chat_format::chatml, engine_options{});
        auto prompt = render_initial_prompt(*agent, *host, {{"incident_dir", incident_dir.string()}}, task);
        REQUIRE_MESSAGE(prompt.ok(), (prompt.ok() ? "" : prompt.err().message));
        REQUIRE(transcript.size() > prompt->size());
        CHECK(transcript.substr(0, prompt->size()) == *prompt);
    }
    std::filesystem::remove_all(dir);
}
