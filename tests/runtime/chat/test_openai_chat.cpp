#include "runtime/chat/openai_chat.h"

#include <doctest/doctest.h>

#include <simdjson.h>

using namespace tachyon;
using namespace tachyon::openai;

namespace {

std::string parse_error(std::string_view body) {
    auto r = parse_chat_request(body);
    REQUIRE_FALSE(r.ok());
    return r.err().message;
}

// Strings moved in, not assigned from literals (see the -Wrestrict note below).
delta tool_delta(int index, std::string id, std::string name, std::string arguments) {
    delta d;
    d.tool_index = index;
    d.tool_id = std::move(id);
    d.tool_name = std::move(name);
    d.arguments = std::move(arguments);
    return d;
}

}  // namespace

TEST_CASE("openai_chat: a full request parses") {
    auto r = parse_chat_request(R"({
        "model": "incident-analyst",
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Find "}, {"type": "text", "text": "the cause."}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "search_logs", "arguments": "{\"service\":\"db\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "db: pool exhausted"}
        ],
        "tools": [{"type": "function", "function": {"name": "search_logs", "description": "Searches logs.",
                   "parameters": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]}}}],
        "tool_choice": {"type": "function", "function": {"name": "search_logs"}},
        "parallel_tool_calls": false, "temperature": 0, "top_p": 0.5, "max_completion_tokens": 64,
        "stop": ["END"], "seed": 7, "stream": true, "stream_options": {"include_usage": true}
    })");
    REQUIRE(r.ok());
    CHECK(r->model == "incident-analyst");
    REQUIRE(r->messages.size() == 4);
    CHECK(r->messages[0].role == "system");
    CHECK(r->messages[1].content == "Find the cause.");
    REQUIRE(r->messages[2].tool_calls.size() == 1);
    CHECK(r->messages[2].tool_calls[0].arguments_json == R"({"service": "db"})");
    CHECK(r->messages[3].tool_call_id == "call_1");
    CHECK(r->tool_choice == tool_choice_mode::named);
    CHECK(r->tool_choice_name == "search_logs");
    CHECK_FALSE(r->parallel_tool_calls);
    CHECK(r->temperature == 0);
    CHECK(r->max_tokens == 64);
    CHECK(r->stop == std::vector<std::string>{"END"});
    CHECK(r->seed == 7u);
    CHECK(r->stream);
    CHECK(r->include_usage);
}

TEST_CASE("openai_chat: errors name the JSON path and what was expected") {
    CHECK(parse_error("{nope") .rfind("body: not valid JSON", 0) == 0);
    CHECK(parse_error("[]") == "body: expected a JSON object, got an array");
    CHECK(parse_error(R"({"messages": []})") == "model: missing (required)");
    CHECK(parse_error(R"({"model": "m", "messages": []})") == "messages: expected at least one message");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "robot", "content": "x"}]})") ==
          "messages[0].role: expected one of system, developer, user, assistant, tool; got 'robot'");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": 5}]})") ==
          "messages[0].content: expected a string or an array of text parts, got an integer");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "tool", "content": "x"}]})") == "messages[0].tool_call_id: missing (required)");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 3})") ==
          "temperature: expected a number in [0, 2], got 3");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": "9"})") ==
          "max_tokens: expected an integer, got a string");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "bogus": 1})").rfind("bogus: unrecognized argument", 0) == 0);
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})") ==
          "tool_choice: a tool is required but 'tools' is empty");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
                          "tools": [{"type": "function", "function": {"name": "a"}}],
                          "tool_choice": {"type": "function", "function": {"name": "b"}}})") ==
          "tool_choice.function.name: no tool named 'b' in 'tools'");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
                          "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": 5}}}]})")
              .rfind("tools[0].function.parameters: ", 0) == 0);
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "assistant", "tool_calls": [
                          {"id": "c", "type": "function", "function": {"name": "a", "arguments": "[1]"}}]}]})") ==
          "messages[0].tool_calls[0].function.arguments: expected a JSON object encoded as a string");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})") ==
          "response_format.type: expected 'text', 'json_object' or 'json_schema'; got 'xml'");
    CHECK(parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}})") ==
          "stream_options: only allowed when 'stream' is true");
}

TEST_CASE("openai_chat: parse errors map to 400 with the path as param") {
    auto r = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": 1}]})");
    REQUIRE_FALSE(r.ok());
    api_error e = to_api_error(r.err());
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == "messages[0].content");
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.parse(simdjson::padded_string(error_json(e)));
    CHECK(std::string_view(doc["error"]["param"]) == "messages[0].content");
    CHECK(doc["error"]["code"].is_null());
    CHECK(to_api_error(make_error(errc::not_found, "model 'x' not found")).status == 404);
    CHECK(to_api_error(make_error(errc::not_found, "x")).param.empty());
}

TEST_CASE("openai_chat: a schema no value satisfies is a 400 whose param is the keyword's path") {
    // An empty enum once reached the grammar and crashed the server at the first constrained token.
    auto r = parse_chat_request(R"({"model": "incident-analyst", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x",
            "schema": {"type": "object", "properties": {"a": {"enum": []}}}}}})");
    REQUIRE_FALSE(r.ok());
    api_error e = to_api_error(r.err());
    CHECK(e.status == 400);
    CHECK(e.param == "response_format.json_schema.schema.properties.a.enum");
    CHECK(e.message == "response_format.json_schema.schema.properties.a.enum: empty enum (expected at least one value)");
    // a required tool's parameters, checked where the tools are read
    r = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": "required",
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 5, "maximum": 1}}}}}]})");
    REQUIRE_FALSE(r.ok());
    e = to_api_error(r.err());
    CHECK(e.status == 400);
    CHECK(e.param == "tools[0].function.parameters.properties.n.minimum");
}

TEST_CASE("openai_chat: assistant tool calls render as Hermes blocks, tool results as tool_response turns") {
    auto r = parse_chat_request(R"({"model": "m", "messages": [
        {"role": "system", "content": "Sys."},
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": "two"}],
        "tools": [{"type": "function", "function": {"name": "f", "description": "F.", "parameters": {"type": "object"}}},
                  {"type": "function", "function": {"name": "g"}}]})");
    REQUIRE(r.ok());
    auto text = render_prompt(*r, chat_format::chatml);
    REQUIRE(text.ok());
    CHECK(text->find("<|im_start|>system\nSys.\n\n# Tools") == 0);
    CHECK(text->find(R"({"type": "function", "function": {"name": "f", "description": "F.", "parameters": {"type": "object"}}})") != std::string::npos);
    CHECK(text->find("<|im_start|>assistant\nLooking.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
                     "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call><|im_end|>") != std::string::npos);
    CHECK(text->find("<|im_start|>user\n<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n</tool_response><|im_end|>") !=
          std::string::npos);
    CHECK(text->substr(text->size() - 22) == "<|im_start|>assistant\n");

    r->tool_choice = tool_choice_mode::none;  // tools not shown
    auto plain = render_prompt(*r, chat_format::chatml);
    REQUIRE(plain.ok());
    CHECK(plain->find("# Tools") == std::string::npos);
}

TEST_CASE("openai_chat: completion and chunk JSON follow the API's shapes") {
    // Initialised, not assigned: g++ 12 warns falsely (-Wrestrict) on assigning short literals.
    const completion c{.id = "chatcmpl-1",
                       .model = "m",
                       .created = 42,
                       .content = {},
                       .tool_calls = {{"call_1", "f", R"({"x": 1})"}},
                       .finish_reason = "tool_calls",
                       .tokens = {10, 5, 3}};
    simdjson::dom::parser p;
    simdjson::dom::element doc = p.parse(simdjson::padded_string(completion_json(c)));
    CHECK(std::string_view(doc["object"]) == "chat.completion");
    auto choice = doc["choices"].at(0);
    CHECK(choice["message"]["content"].is_null());
    CHECK(std::string_view(choice["message"]["tool_calls"].at(0)["function"]["arguments"]) == R"({"x": 1})");
    CHECK(std::string_view(choice["finish_reason"]) == "tool_calls");
    CHECK(int64_t(doc["usage"]["total_tokens"]) == 15);
    CHECK(int64_t(doc["usage"]["prompt_tokens_details"]["cached_tokens"]) == 3);

    delta first;
    first.role = true;
    simdjson::dom::parser p2;
    doc = p2.parse(simdjson::padded_string(chunk_json(c, first)));
    CHECK(std::string_view(doc["object"]) == "chat.completion.chunk");
    CHECK(std::string_view(doc["choices"].at(0)["delta"]["role"]) == "assistant");
    CHECK(doc["choices"].at(0)["finish_reason"].is_null());

    const delta call = tool_delta(0, "call_1", "f", "");
    simdjson::dom::parser p3;
    doc = p3.parse(simdjson::padded_string(chunk_json(c, call)));
    auto tc = doc["choices"].at(0)["delta"]["tool_calls"].at(0);
    CHECK(int64_t(tc["index"]) == 0);
    CHECK(std::string_view(tc["id"]) == "call_1");
    CHECK(std::string_view(tc["function"]["name"]) == "f");
    CHECK(std::string_view(tc["function"]["arguments"]).empty());

    const delta args = tool_delta(0, "", "", "{\"x\"");
    simdjson::dom::parser p4;
    doc = p4.parse(simdjson::padded_string(chunk_json(c, args)));
    tc = doc["choices"].at(0)["delta"]["tool_calls"].at(0);
    CHECK(tc["id"].error() == simdjson::NO_SUCH_FIELD);
    CHECK(std::string_view(tc["function"]["arguments"]) == "{\"x\"");

    simdjson::dom::parser p5;
    doc = p5.parse(simdjson::padded_string(usage_chunk_json(c, c.tokens)));
    CHECK(simdjson::dom::array(doc["choices"]).size() == 0);
    CHECK(int64_t(doc["usage"]["completion_tokens"]) == 5);
}

TEST_CASE("openai_chat: sampling follows temperature, top_p and seed") {
    chat_request r;
    r.temperature = 0;
    r.seed = 9;
    auto s = sampling_of(r);
    CHECK(s.temperature == 0);
    CHECK(s.seed == 9u);
    CHECK(s.validate().ok());
    CHECK(make_completion_id().rfind("chatcmpl-", 0) == 0);
    CHECK(make_tool_call_id() != make_tool_call_id());
}
