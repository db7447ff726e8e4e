// libFuzzer target for the agent-file loader: any bytes as an agent file
// (JSON parse, key checks, model, inputs, tools and their settings,
// grounding patterns, budgets, verify checks, output schema). The file
// "lives" in a scratch folder that holds a model with the GGUF magic, an
// instructions file and a directory for tool roots, so that valid-looking
// files get past the path checks and reach the deeper validation.
// Invariants: no crash; an accepted definition has a name, its placeholders
// are sorted and unique, and filling them with declared inputs never crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "runtime/agent/agent_def.h"
#include "runtime/agent/tool_catalog.h"

using namespace tachyon;

namespace {
std::string folder;  // the scratch folder, set up once

void write(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::error_code ec;
    const auto dir = std::filesystem::temp_directory_path(ec) / ("tachyon-fuzz-agent-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "incident" / "logs", ec);
    write(dir / "model.gguf", std::string("GGUF\x03\x00\x00\x00", 8));
    write(dir / "instructions.txt", "Find the root cause in {incident_dir}.\n");
    folder = dir.string();
    std::atexit([] {
        std::error_code e;
        std::filesystem::remove_all(folder, e);
    });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    static const std::vector<std::string> known = builtin_tool_names();
    auto agent = parse_agent_definition(text, folder + "/agent.json", (size > 0 && data[0] % 2) ? known : std::vector<std::string>{});
    if (!agent) {
        if (agent.err().message.empty()) std::abort();  // an error must say what is wrong
        return 0;
    }
    if (agent->name.empty()) std::abort();
    const std::vector<std::string> names = agent->placeholders();
    for (std::size_t i = 1; i < names.size(); ++i)
        if (!(names[i - 1] < names[i])) std::abort();
    std::map<std::string, std::string> inputs;
    for (const auto& n : names) inputs[n] = folder + "/incident";
    (void)fill_placeholders(agent->instructions, inputs, "instructions");
    (void)check_run_inputs(*agent, inputs);
    (void)parse_tool_settings(text);
    return 0;
}
