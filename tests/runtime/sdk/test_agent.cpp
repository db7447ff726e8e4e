#include "tachyon/agent.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "tests/runtime/sdk/sdk_fixture.h"

using namespace tachyon::sdk;

namespace {

const char* k_schema = R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})";

std::shared_ptr<tool> weather_tool() {
    return make_tool({"weather", "Weather of a city.", k_schema}, [](std::string_view) { return std::string("sunny"); });
}

agent_spec valid_spec(const sdk_fixture::model_dir& d) {
    agent_spec s;
    s.name = "analyst";
    s.description = "finds root causes";
    s.instructions = "Look in {incident_dir}.";
    s.model = d.model_file();
    s.tools = {{"search_logs", {{"root", "{incident_dir}"}}}, weather_tool()};
    s.output_schema = R"({"type": "object", "properties": {"service": {"type": "string"}}})";
    return s;
}

std::string build_error(const agent_spec& s) {
    auto a = agent::build(s);
    REQUIRE_FALSE(a.ok());
    return a.error().message;
}

}  // namespace

TEST_CASE("an agent built in code validates and reports what it holds") {
    sdk_fixture::model_dir d;
    auto a = agent::build(valid_spec(d));
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    CHECK(a->name() == "analyst");
    CHECK(a->description() == "finds root causes");
    CHECK(a->model_path() == d.model_file());
    CHECK(a->tool_names() == std::vector<std::string>{"search_logs", "weather"});
    CHECK(a->placeholders() == std::vector<std::string>{"incident_dir"});
}

TEST_CASE("an agent built in code with a bad key or value gets an error naming the agent, the field and what was expected") {
    sdk_fixture::model_dir d;
    agent_spec s = valid_spec(d);

    s.tools[0].settings = {{"rooot", "/tmp"}};
    CHECK(build_error(s) == "agent 'analyst': tools[0]: tool search_logs: unknown setting 'rooot' (expected: root, year, tz)");

    s = valid_spec(d);
    s.tools[0].settings.clear();
    CHECK(build_error(s) == "agent 'analyst': tools[0]: tool search_logs: setting 'root' (the incident directory) is required");

    s = valid_spec(d);
    s.tools.push_back({"delete_database"});
    CHECK(build_error(s).find("agent 'analyst': tools[2]: unknown tool 'delete_database' (built-in tools: list_services,") == 0);
    CHECK(build_error(s).find("a C++ tool is given as a tool object (make_tool)") != std::string::npos);

    s = valid_spec(d);
    s.tools.push_back(weather_tool());
    CHECK(build_error(s) == "agent 'analyst': tools[2]: tool 'weather' is listed twice");

    s = valid_spec(d);
    s.tools[1].settings = {{"units", "metric"}};
    CHECK(build_error(s) == "agent 'analyst': tools[1]: C++ tool 'weather' takes no settings (settings are for built-in tools)");

    s = valid_spec(d);
    s.budgets.max_steps = 0;
    CHECK(build_error(s) == "agent 'analyst': budgets.max_steps: expected an integer in [1, 1000], got 0");

    s = valid_spec(d);
    s.model = (d.path / "missing.gguf").string();
    CHECK(build_error(s) == "agent 'analyst': model: model file " + s.model + " does not exist (expected a GGUF file)");

    s = valid_spec(d);
    s.chat_format = "alpaca";
    CHECK(build_error(s).find("agent 'analyst': chat_format: expected one of ") == 0);
    CHECK(build_error(s).find("llama3.1") != std::string::npos);
    CHECK(build_error(s).find("got \"alpaca\"") != std::string::npos);

    s = valid_spec(d);
    s.sampling.top_p = 2.0f;
    CHECK(build_error(s).find("agent 'analyst': sampling: ") == 0);

    s = valid_spec(d);
    s.output_schema = R"({"type": "objekt"})";
    CHECK(build_error(s).find("agent 'analyst': output_schema: ") == 0);
    s.output_schema = R"({"type": "object", "properties": {"a": {"type": "string", "minLength": 4, "maxLength": 2}}})";
    CHECK(build_error(s) == "agent 'analyst': output_schema.properties.a.minLength: minLength 4 is above maxLength 2 (expected minLength <= maxLength)");

    s = valid_spec(d);
    s.verify = {{"verify_root_cause", {{"service", "$.service"}, {"fault_type", "not json"}}, {{"root", "{incident_dir}"}}}};
    CHECK(build_error(s) == "agent 'analyst': verify[0].arguments.fault_type: expected \"$.field\" or a JSON literal, got 'not json'");

    s = valid_spec(d);
    s.name.clear();
    CHECK(build_error(s) == "agent: name: must not be empty");
}

TEST_CASE("a C++ tool with a bad schema or name is rejected when the agent is built") {
    sdk_fixture::model_dir d;
    agent_spec s = valid_spec(d);
    s.tools = {make_tool({"bad", "Bad schema.", R"({"type": "object", "properties": 3})"}, [](std::string_view) { return std::string(); })};
    CHECK(build_error(s).find("agent 'analyst': C++ tool 'bad': parameters_schema: ") == 0);
    s.tools = {make_tool({"bad", "No value fits.", R"({"type": "object", "properties": {"a": {"enum": []}}})"},
                         [](std::string_view) { return std::string(); })};
    CHECK(build_error(s) == "agent 'analyst': C++ tool 'bad': parameters_schema.properties.a.enum: empty enum (expected at least one value)");
    s.tools = {make_tool({"no spaces", "Bad name.", R"({"type": "object"})"}, [](std::string_view) { return std::string(); })};
    CHECK(build_error(s) == "agent 'analyst': C++ tool 'no spaces': a tool name must be letters, digits, '_' or '-'");
}

TEST_CASE("an agent may verify its answer with one of its C++ tools") {
    sdk_fixture::model_dir d;
    agent_spec s = valid_spec(d);
    s.verify = {{"weather", {{"city", "$.service"}}, {}}};
    CHECK(agent::build(s).ok());
    s.verify = {{"weather", {{"city", "$.service"}}, {{"units", "metric"}}}};
    CHECK(build_error(s) == "agent 'analyst': verify[0]: C++ tool 'weather' takes no settings");
}

TEST_CASE("the shipped agent file loads, and a file naming a C++ tool needs that tool") {
    auto a = agent::load(std::string(TACHYON_SOURCE_DIR) + "/agents/incident-analyst.json");
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    CHECK(a->name() == "incident-analyst");
    CHECK(a->placeholders() == std::vector<std::string>{"incident_dir"});
    CHECK(a->tool_names().front() == "error_summary");
    CHECK(std::filesystem::exists(a->model_path()));

    sdk_fixture::model_dir d;
    const std::string json = R"({"name": "w", "instructions": "Weather.", "model": ")" + d.model_file() + R"(", "tools": ["weather"]})";
    auto without = agent::parse(json, "w.json");
    REQUIRE_FALSE(without.ok());
    CHECK(without.error().message.find("w.json: tools[0].name: unknown tool 'weather'") == 0);
    auto with = agent::parse(json, "w.json", {weather_tool()});
    REQUIRE_MESSAGE(with.ok(), with.error().message);
    CHECK(with->tool_names() == std::vector<std::string>{"weather"});
}

TEST_CASE("agent file errors name the file and the key") {
    auto missing = agent::load("/nonexistent/agent.json");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == errc::not_found);
    CHECK(missing.error().message == "/nonexistent/agent.json: cannot open the agent file (No such file or directory)");

    sdk_fixture::model_dir d;
    auto bad_key = agent::parse(R"({"name": "x", "instructions": "i", "model": ")" + d.model_file() + R"(", "tols": []})", "x.json");
    REQUIRE_FALSE(bad_key.ok());
    CHECK(bad_key.error().code == errc::invalid_argument);
    CHECK(bad_key.error().message.find("x.json: tols: unknown key (expected one of: name, description,") == 0);
}
