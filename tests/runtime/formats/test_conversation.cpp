#include "runtime/formats/conversation.h"

#include <doctest/doctest.h>

using namespace tachyon;

TEST_CASE("a conversation file gives messages, structured calls, tools and settings") {
    auto c = parse_conversation(R"({"messages": [{"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}],
        "tools": [{"type": "function", "function": {"name": "f"}}], "add_generation_prompt": false,
        "enable_thinking": false})",
                                "conv.json");
    REQUIRE(c.ok());
    REQUIRE(c->messages.size() == 3);
    CHECK(c->messages[1].content.empty());
    REQUIRE(c->messages[1].tool_calls.size() == 1);
    CHECK(c->messages[1].tool_calls[0].name == "f");
    CHECK(c->messages[1].tool_calls[0].arguments_json == R"({"a":1})");
    CHECK(c->messages[2].tool_call_id == "c1");
    CHECK(c->options.tools.size() == 1);
    CHECK_FALSE(c->options.add_generation_prompt);
    CHECK(c->options.enable_thinking == false);
}

TEST_CASE("a file of cases needs --case, errors name the file and the field") {
    const std::string cases = R"({"tools": [{"type": "function"}], "cases": {"x": {"messages": [], "with_tools": true}}})";
    auto none = parse_conversation(cases, "c.json");
    REQUIRE_FALSE(none.ok());
    CHECK(none.err().message == "c.json: a file of cases; choose one with --case (x)");
    auto x = parse_conversation(cases, "c.json", "x");
    REQUIRE(x.ok());
    CHECK(x->options.tools.size() == 1);
    CHECK_FALSE(parse_conversation(cases, "c.json", "y").ok());
    auto bad = parse_conversation(R"({"messages": [{"content": "x"}]})", "c.json");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message == "c.json.messages[0].role: missing (expected a string)");
    CHECK_FALSE(parse_conversation("{", "c.json").ok());
}
