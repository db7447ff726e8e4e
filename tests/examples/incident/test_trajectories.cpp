#include "examples/incident/trajectories.h"

#include <doctest/doctest.h>

#include <simdjson.h>

using namespace incident;

namespace {

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("a trajectory line is JSON whose segments concatenate to the rendered transcript") {
    trajectory_options o;
    o.instructions = "Investigate with the tools and answer with the JSON object.";
    o.work_dir = std::filesystem::temp_directory_path();
    for (uint64_t seed : {0, 1, 2, 40, 41}) {
        CAPTURE(seed);
        auto t = make_trajectory(seed, o);
        REQUIRE(t.ok());
        const std::string line = trajectory_json(*t);
        CHECK(line.find('\n') == std::string::npos);
        simdjson::dom::parser parser;
        simdjson::dom::element doc;
        REQUIRE_FALSE(parser.parse(line).get(doc));
        uint64_t s = 0;
        REQUIRE_FALSE(doc["seed"].get(s));
        CHECK(s == seed);
        simdjson::dom::array segs;
        REQUIRE_FALSE(doc["segments"].get(segs));
        std::string text;
        size_t n = 0;
        for (auto seg : segs) {
            std::string_view piece;
            bool train = false;
            REQUIRE_FALSE(seg["text"].get(piece));
            REQUIRE_FALSE(seg["train"].get(train));
            REQUIRE(n < t->segments.size());
            CHECK(piece == t->segments[n].text);
            CHECK(train == t->segments[n].train);
            if (train) {
                CHECK(piece.substr(piece.size() - 10) == "<|im_end|>");
                CHECK(text.ends_with("<|im_start|>assistant\n"));
            }
            text += piece;
            ++n;
        }
        CHECK(n == t->segments.size());
        // well-formed ChatML: balanced markers, system prompt with the agent's tools
        CHECK(count(text, "<|im_start|>") == count(text, "<|im_end|>"));
        CHECK(count(text, "<tool_call>") == count(text, "</tool_call>"));
        CHECK(count(text, "<tool_response>") == count(text, "</tool_response>"));
        CHECK(text.rfind("<|im_start|>system\nInvestigate with the tools", 0) == 0);
        for (const auto& name : agent_tool_names())
            CHECK(text.find("{\"type\": \"function\", \"function\": {\"name\": \"" + name + "\"") != std::string::npos);
        CHECK(text.find("\"name\": \"verify_root_cause\"") == std::string::npos);
        // the last turn is the final answer, keys in the contract's order
        const std::string& last = t->segments.back().text;
        CHECK(last.rfind("{\"root_cause_service\": \"" + t->truth.root_cause_service + "\", \"fault_type\": \"", 0) == 0);
        CHECK(last.find("\"first_bad_timestamp\": ") != std::string::npos);
        CHECK(last.find("\"evidence\": [\"") != std::string::npos);
    }
}

TEST_CASE("trajectories are deterministic per seed") {
    trajectory_options o;
    o.instructions = "Investigate.";
    o.work_dir = std::filesystem::temp_directory_path();
    auto a = make_trajectory(17, o);
    auto b = make_trajectory(17, o);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(trajectory_json(*a) == trajectory_json(*b));
}

TEST_CASE("deliberate mistakes are a fixed share of seeds") {
    int n = 0;
    for (uint64_t seed = 0; seed < 2000; ++seed) n += wants_mistake(seed, 0.15);
    CHECK(n > 240);
    CHECK(n < 360);
    CHECK_FALSE(wants_mistake(5, 0.0));
    CHECK(wants_mistake(5, 1.0));
}
