#include "runtime/agent/agent_prompt.h"

#include <doctest/doctest.h>

#include "runtime/agent/tool_catalog.h"

using namespace tachyon;

TEST_CASE("tool_definitions lists each tool as the model reads it, in the agent's order") {
    agent_definition a;
    a.file = "test-agent.json";
    a.tools.push_back({"read_file", {{"roots", "{dir}"}}, std::nullopt, {}});
    auto tools = make_agent_tools(a, {{"dir", "/tmp"}});
    REQUIRE_MESSAGE(tools.ok(), (tools.ok() ? "" : tools.err().message));
    auto defs = tool_definitions(*tools);
    REQUIRE(defs.size() == 1);
    CHECK(defs[0].rfind(R"({"type": "function", "function": {"name": "read_file", "description": )", 0) == 0);
    CHECK(defs[0].find(R"("parameters": {)") != std::string::npos);

    // A placeholder without an input is an error naming the setting.
    auto missing = make_agent_tools(a, {});
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().message.find("tools.read_file.settings.roots") != std::string::npos);
}
