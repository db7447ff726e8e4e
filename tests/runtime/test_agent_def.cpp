#include "runtime/agent_def.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "runtime/tool_catalog.h"

using namespace tachyon;

namespace {

struct agent_dir {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("tachyon_agent_def_" + std::to_string(::getpid()));
    agent_dir() {
        std::filesystem::create_directories(path);
        std::ofstream(path / "model.gguf") << "GGUF";
        std::ofstream(path / "prompt.txt") << "You analyse incidents in {incident_dir}.\n";
    }
    ~agent_dir() { std::filesystem::remove_all(path); }
    std::string file() const { return (path / "agent.json").string(); }
};

result<agent_definition> parse(const agent_dir& d, const std::string& json) {
    return parse_agent_definition(json, d.file(), builtin_tool_names());
}

std::string error_of(const agent_dir& d, const std::string& json) {
    auto r = parse(d, json);
    REQUIRE_FALSE(r.ok());
    return r.err().message;
}

}  // namespace

TEST_CASE("a complete agent file loads with every field") {
    agent_dir d;
    auto r = parse(d, R"({
        "name": "analyst", "description": "finds root causes",
        "instructions_file": "prompt.txt", "model": "model.gguf", "chat_format": "chatml",
        "sampling": {"temperature": 0.5, "top_k": 20, "top_p": 0.9, "seed": 7},
        "tools": ["list_services", {"name": "search_logs", "settings": {"root": "{incident_dir}"}, "timeout_ms": 500,
                                    "grounding": {"service": "^[a-z-]+$"}}],
        "budgets": {"max_steps": 6, "max_tokens": 900, "deadline_ms": 30000, "tool_timeout_ms": 2000},
        "verify": {"checks": [{"tool": "verify_root_cause", "arguments": {"service": "$.service", "fault_type": "oom_kill"},
                               "settings": {"root": "{incident_dir}"}}], "max_verify_retries": 3},
        "output_schema": {"type": "object", "properties": {"service": {"type": "string"}}}
    })");
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
    CHECK(r->name == "analyst");
    CHECK(r->instructions == "You analyse incidents in {incident_dir}.");
    CHECK(r->model == (d.path / "model.gguf").lexically_normal().string());
    CHECK(r->sampling.temperature == doctest::Approx(0.5));
    CHECK(r->sampling.top_k == 20);
    CHECK(r->sampling.seed == 7);
    REQUIRE(r->tools.size() == 2);
    CHECK(r->tools[1].settings.at("root") == "{incident_dir}");
    CHECK(*r->tools[1].timeout_ms == 500);
    CHECK(r->tools[1].grounding.at("service") == "^[a-z-]+$");
    CHECK(r->budgets.max_steps == 6);
    CHECK(r->max_verify_retries == 3);
    REQUIRE(r->verify.size() == 1);
    CHECK(r->verify[0].arguments[0].second == "$.service");
    CHECK(r->verify[0].arguments[1].second == "\"oom_kill\"");  // a literal, as JSON
    CHECK(r->output_schema == R"({"type":"object","properties":{"service":{"type":"string"}}})");
    CHECK(r->placeholders() == std::vector<std::string>{"incident_dir"});
}

TEST_CASE("each kind of mistake is named with the file, the key path and what was expected") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    CHECK(error_of(d, "{not json") .find(d.file() + ": not valid JSON") == 0);
    CHECK(error_of(d, R"([1])") == f + "top level: expected an object, got an array");
    CHECK(error_of(d, R"({"model": "model.gguf", "instructions": "x"})") == f + "name: missing (required)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "colour": 1})") ==
          f + "colour: unknown key (expected one of: name, description, instructions, instructions_file, model, chat_format, "
              "sampling, tools, budgets, verify, output_schema)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "budgets": {"max_stpes": 3}})") ==
          f + "budgets.max_stpes: unknown key (expected one of: max_steps, max_tokens, deadline_ms, tool_timeout_ms)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "budgets": {"max_steps": "ten"}})") ==
          f + "budgets.max_steps: expected an integer, got a string");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "budgets": {"max_steps": 0}})") ==
          f + "budgets.max_steps: expected an integer in [1, 1000], got 0");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "sampling": {"top_p": 2}})") ==
          f + "sampling.top_p: expected a number in [1e-06, 1], got 2");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": ["grep_logs"]})")
              .find(f + "tools[0].name: unknown tool 'grep_logs' (built-in tools: list_services") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": ["shell", "shell"]})") ==
          f + "tools[1].name: tool 'shell' is listed twice");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": [{"name": "shell", "timeout": 5}]})") ==
          f + "tools[0].timeout: unknown key (expected one of: name, settings, timeout_ms, grounding)");
    CHECK(error_of(d, R"js({"name": "a", "model": "model.gguf", "instructions": "x", "tools": [{"name": "get_trace", "grounding": {"trace_id": "(a|b)"}}]})js")
              .find(f + "tools[0].grounding.trace_id: ") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "missing.gguf", "instructions": "x"})")
              .find(f + "model: model file " + (d.path / "missing.gguf").string() + " does not exist") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf"})") == f + "instructions: give exactly one of instructions or instructions_file");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "chat_format": "alpaca"})") ==
          f + "chat_format: expected \"chatml\" or \"llama3\", got \"alpaca\"");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "verify": {"checks": [{"tool": "nope"}]}})")
              .find(f + "verify.checks[0].tool: unknown tool 'nope'") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "output_schema": []})") ==
          f + "output_schema: expected an object, got an array");
}

TEST_CASE("placeholders: {identifier} forms are filled, JSON braces are left alone, a missing input is named") {
    std::map<std::string, std::string> in{{"dir", "/tmp/x"}};
    auto ok = fill_placeholders(R"(Look in {dir}; answer {"service": "..."} or {} or { dir })", in, "agent.json: instructions");
    REQUIRE(ok.ok());
    CHECK(*ok == R"(Look in /tmp/x; answer {"service": "..."} or {} or { dir })");
    auto missing = fill_placeholders("Look in {incident_dir}", in, "agent.json: instructions");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().message ==
          "agent.json: instructions: no value for placeholder {incident_dir} (give it as an input, e.g. --input incident_dir=...)");
}

TEST_CASE("the shipped incident-analyst agent file is valid") {
    const std::string path = std::string(TACHYON_SOURCE_DIR) + "/agents/incident-analyst.json";
    auto r = load_agent_file(path, builtin_tool_names());
    if (!r.ok() && r.err().message.find("does not exist") != std::string::npos) {
        MESSAGE("skipped: the shipped model is not built yet: " << r.err().message);
        return;
    }
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
    CHECK(r->name == "incident-analyst");
    CHECK(r->tools.size() == 5);
    CHECK(r->verify.size() == 1);
    CHECK_FALSE(r->output_schema.empty());
}
