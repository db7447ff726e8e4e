#include "examples/incident/transcript.h"

#include <doctest/doctest.h>

#include <memory>

using namespace incident;

namespace {

class fake_tool : public tachyon::tools::tool {
public:
    fake_tool(std::string name, std::string schema) : name_(std::move(name)), schema_(std::move(schema)) {}
    std::string_view name() const override { return name_; }
    std::string_view description() const override { return "Does \"things\"."; }
    std::string_view parameters_schema() const override { return schema_; }
    tachyon::result<std::string> invoke(std::string_view, const tachyon::tools::call_context&) override {
        return std::string("ok");
    }

private:
    std::string name_, schema_;
};

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

conversation sample() {
    conversation c;
    c.system = "SYSTEM";
    c.task = "checkout 502s since ~14:05 UTC";
    exchange one;
    one.calls = {{"error_summary", "{}"}};
    one.results = {"summary text"};
    exchange two;
    two.calls = {{"search_logs", "{\"service\": \"payments\", \"level\": \"ERROR\", \"limit\": 3}"},
                 {"recent_changes", "{\"service\": \"payments\"}"}};
    two.results = {"payments:12 ERROR x", "no changes found"};
    exchange wrong;
    wrong.content = "{\"root_cause_service\": \"checkout\"}";
    wrong.results = {"verify_root_cause: rejected: checkout depends on payments"};
    exchange right;
    right.content = "{\"root_cause_service\": \"payments\"}";
    c.turns = {one, two, wrong, right};
    return c;
}

}  // namespace

TEST_CASE("the system prompt lists the chosen tools in order with their schemas verbatim") {
    tachyon::tools::registry tools;
    REQUIRE(tools.add(std::make_shared<fake_tool>("b_tool", R"({"type":"object","properties":{}})")).ok());
    REQUIRE(tools.add(std::make_shared<fake_tool>("a_tool", R"({"type":"object"})")).ok());
    auto prompt = render_system_prompt("Investigate.", tools, {"a_tool", "b_tool"});
    REQUIRE(prompt.ok());
    const std::string a = R"({"type": "function", "function": {"name": "a_tool", "description": "Does \"things\".", "parameters": {"type":"object"}}})";
    const std::string b = R"({"type": "function", "function": {"name": "b_tool", "description": "Does \"things\".", "parameters": {"type":"object","properties":{}}}})";
    CHECK(prompt->rfind("Investigate.\n\n# Tools\n\n", 0) == 0);
    CHECK(prompt->find("<tools>\n" + a + "\n" + b + "\n</tools>\n") != std::string::npos);
    CHECK(prompt->size() > 200);
    const std::string tail = "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
    CHECK(prompt->substr(prompt->size() - tail.size()) == tail);
    CHECK_FALSE(render_system_prompt("x", tools, {"missing"}).ok());
}

TEST_CASE("tool calls render in the Hermes format, several calls separated by a newline") {
    exchange turn;
    turn.calls = {{"get_trace", "{\"trace_id\": \"4bf92f3577b34da6\"}"}, {"error_summary", "{}"}};
    CHECK(render_assistant(turn) ==
          "<tool_call>\n{\"name\": \"get_trace\", \"arguments\": {\"trace_id\": \"4bf92f3577b34da6\"}}\n</tool_call>\n"
          "<tool_call>\n{\"name\": \"error_summary\", \"arguments\": {}}\n</tool_call>");
}

TEST_CASE("segments concatenate to well-formed ChatML; train segments are the assistant outputs") {
    const auto segments = render_segments(sample());
    const std::string text = join_segments(segments);
    CHECK(text.rfind("<|im_start|>system\nSYSTEM<|im_end|>\n<|im_start|>user\ncheckout 502s since ~14:05 UTC<|im_end|>\n"
                     "<|im_start|>assistant\n",
                     0) == 0);
    CHECK(count(text, "<|im_start|>") == count(text, "<|im_end|>"));
    CHECK(count(text, "<tool_call>") == count(text, "</tool_call>"));
    CHECK(count(text, "<tool_call>") == 3);
    CHECK(count(text, "<tool_response>") == count(text, "</tool_response>"));
    CHECK(count(text, "<tool_response>") == 4);  // 1 + 2 results, 1 verify feedback
    CHECK(text.find("<tool_response>\npayments:12 ERROR x\n</tool_response>\n<tool_response>\nno changes found\n"
                    "</tool_response><|im_end|>") != std::string::npos);
    int n_train = 0;
    for (size_t i = 0; i < segments.size(); ++i) {
        const segment& s = segments[i];
        if (!s.train) {
            // a boundary right after "<|im_start|>assistant\n" (or at the end)
            if (i + 1 < segments.size()) CHECK(s.text.ends_with("<|im_start|>assistant\n"));
            continue;
        }
        ++n_train;
        CHECK(s.text.substr(s.text.size() - 10) == "<|im_end|>");
        CHECK(s.text.find("<|im_start|>") == std::string::npos);
        CHECK(count(s.text, "<|im_end|>") == 1);
        CHECK(i > 0);
    }
    CHECK(n_train == 4);
    CHECK(segments.back().train);
    CHECK(segments.back().text == "{\"root_cause_service\": \"payments\"}<|im_end|>");
}
