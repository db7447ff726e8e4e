#include "runtime/constrain/json_grammar.h"

#include <doctest/doctest.h>

#include <string>

using namespace tachyon;

namespace {

std::shared_ptr<const json_grammar> call_grammar(tool_call_syntax syntax) {
    auto args = json_schema::parse(R"({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]})",
                                   "get_trace", "argument");
    REQUIRE(args.ok());
    auto g = json_grammar::build({{"get_trace", std::make_shared<const json_schema>(std::move(*args))},
                                  {"get", nullptr}},
                                 nullptr, {}, syntax);
    REQUIRE_MESSAGE(g.ok(), (g.ok() ? "" : g.err().message));
    return *g;
}

// The region takes `text` whole and ends with its last byte.
bool accepts(tool_call_syntax syntax, std::string_view text) {
    auto g = call_grammar(syntax);
    json_automaton a(g.get());
    a.start_tool_call();
    return a.advance(text) && a.done();
}

}  // namespace

TEST_CASE("json_grammar calls: Mistral Nemo's calls carry a 9-character alphanumeric id after the arguments") {
    CHECK(accepts(tool_call_syntax::mistral, R"([{"name": "get_trace", "arguments": {"id": "t"}, "id": "a1B2c3D4e"}])"));
    CHECK(accepts(tool_call_syntax::mistral, R"([{"name": "get_trace", "arguments": {"id": "a"}, "id": "aaaaaaaaa"}, )"
                                             R"({"name": "get", "arguments": {}, "id": "bbbbbbbbb"}])"));
    // Without an id, too short or too long an id, or one that is not alphanumeric: the template would raise.
    CHECK_FALSE(accepts(tool_call_syntax::mistral, R"([{"name": "get_trace", "arguments": {"id": "t"}}])"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral, R"([{"name": "get_trace", "arguments": {"id": "t"}, "id": "a1b2"}])"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral, R"([{"name": "get_trace", "arguments": {"id": "t"}, "id": "a1b2c3d4e5"}])"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral, R"([{"name": "get_trace", "arguments": {"id": "t"}, "id": "a1b2c3d4_"}])"));
}

TEST_CASE("json_grammar calls: the [SYSTEM_PROMPT] Mistral families write one bare-named call per [TOOL_CALLS]") {
    // Devstral, Ministral 3: name[ARGS]{...}; the region ends with the arguments.
    CHECK(accepts(tool_call_syntax::mistral_named, R"(get_trace[ARGS]{"id": "t"})"));
    CHECK(accepts(tool_call_syntax::mistral_named, R"(get[ARGS]{})"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral_named, R"("get_trace"[ARGS]{"id": "t"})"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral_named, R"(other[ARGS]{})"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral_named, R"(get_trace[CALL_ID]a1b2c3d4e[ARGS]{"id": "t"})"));
    // Mistral Small 3.2: name[CALL_ID]id[ARGS]{...}.
    CHECK(accepts(tool_call_syntax::mistral_named_id, R"(get_trace[CALL_ID]a1b2c3d4e[ARGS]{"id": "t"})"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral_named_id, R"(get_trace[ARGS]{"id": "t"})"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral_named_id, R"(get_trace[CALL_ID]a1b2[ARGS]{"id": "t"})"));
    // Nothing after the arguments: the next call opens with its own trigger.
    auto g = call_grammar(tool_call_syntax::mistral_named);
    json_automaton a(g.get());
    a.start_tool_call();
    REQUIRE(a.advance(R"(get[ARGS]{})"));
    CHECK(a.done());
    CHECK(g->call_trigger() == "[TOOL_CALLS]");
    CHECK(call_grammar(tool_call_syntax::mistral_named_id)->call_trigger() == "[TOOL_CALLS]");
}

TEST_CASE("json_grammar calls: every family's region keeps its literals (hermes, llama3, lists)") {
    CHECK(accepts(tool_call_syntax::hermes, "\n{\"name\": \"get\", \"arguments\": {}}\n</tool_call>"));
    CHECK(accepts(tool_call_syntax::qwen3, "\n{\"name\": \"get\", \"arguments\": {}}\n</tool_call>"));
    CHECK(accepts(tool_call_syntax::llama3, ": \"get\", \"parameters\": {}}"));
    CHECK(accepts(tool_call_syntax::granite, "[{\"name\": \"get\", \"arguments\": {}}]"));
    CHECK(accepts(tool_call_syntax::phi4, "[{\"name\": \"get\", \"arguments\": {}}]<|/tool_call|>"));
}
