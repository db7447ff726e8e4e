#include "runtime/remote/stream_chunk.h"

#include <doctest/doctest.h>

using namespace tachyon;
using namespace tachyon::remote;

TEST_CASE("stream_chunk: content, finish reason, usage and [DONE]") {
    auto c = parse_chunk(R"({"id": "x", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]})");
    REQUIRE(c.ok());
    CHECK(c->content == "hi");
    CHECK(c->finish_reason.empty());
    auto u = parse_chunk(R"({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}})");
    REQUIRE(u.ok());
    REQUIRE(u->usage.has_value());
    CHECK(u->usage->prompt_tokens == 9);
    CHECK(parse_chunk("[DONE]")->done);
    auto bad = parse_chunk(R"({"object": "chat.completion.chunk"})");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("choices: missing") != std::string::npos);
}

TEST_CASE("tool_call_assembler: fragments keyed by index, by id, or by neither, interleaved calls, a call completes when its object closes") {
    tool_call_assembler a;
    std::vector<assembled_call> done;
    a.add({0, "a", "get_trace", ""}, done);
    a.add({1, "b", "search_logs", "{\"service\": "}, done);
    a.add({0, "", "", "{\"trace_id\": \"{[\\\"\""}, done);  // brackets and an escaped quote inside a string
    CHECK(done.empty());
    a.add({0, "", "", "}"}, done);
    REQUIRE(done.size() == 1);
    CHECK(done[0].name == "get_trace");
    CHECK(done[0].arguments_json == "{\"trace_id\": \"{[\\\"\"}");
    a.add({1, "", "", "\"db\"}"}, done);
    REQUIRE(done.size() == 2);
    CHECK(done[1].index == 1);
    CHECK(done[1].id == "b");
    // By id only, then fragments with no key continue the last call.
    a.add({-1, "c", "read_lines", "{\"id\""}, done);
    a.add({-1, "", "", ": \"db:1\"}"}, done);
    REQUIRE(done.size() == 3);
    CHECK(done[2].arguments_json == "{\"id\": \"db:1\"}");
    std::vector<tool_call_assembler::broken_call> broken;
    a.finish(done, broken);
    CHECK(done.size() == 3);
    CHECK(broken.empty());
    CHECK(a.n_calls() == 3);
}
