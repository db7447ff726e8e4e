#include "runtime/prediction/call_drafts.h"

#include <doctest/doctest.h>

using namespace tachyon;

namespace {

// A tokenizer of one token per byte, except that "de" is one token (300):
// enough to tell text from tokens.
text_codec byte_codec() {
    return {[](std::string_view text) {
                std::vector<int32_t> out;
                for (size_t i = 0; i < text.size(); ++i) {
                    if (text.compare(i, 2, "de") == 0) {
                        out.push_back(300);
                        ++i;
                    } else {
                        out.push_back(static_cast<unsigned char>(text[i]));
                    }
                }
                return out;
            },
            [](std::span<const int32_t> tokens) {
                std::string out;
                for (int32_t t : tokens) out += t == 300 ? std::string("de") : std::string(1, static_cast<char>(t));
                return out;
            }};
}

std::vector<int32_t> tokens_of(std::string_view text) { return byte_codec().encode(text); }

std::vector<int32_t> draft_after(const draft_callback& propose, std::string_view generated_text) {
    std::vector<int32_t> generated;
    for (char c : generated_text) generated.push_back(static_cast<unsigned char>(c));  // split, as a model may write it
    std::vector<int32_t> draft;
    propose(generated, draft);
    return draft;
}

}  // namespace

TEST_CASE("predicted calls are written as the family's template writes an assistant turn holding them") {
    const std::vector<predicted_call> calls{{"get_trace", R"({"trace_id":"4bf92f35"})"}, {"recent_changes", R"({"service":"auth"})"}};
    auto chatml = predicted_calls_texts(chat_format::chatml, {}, calls);
    REQUIRE(chatml.size() == 1);
    CHECK(chatml[0] == "<tool_call>\n{\"name\": \"get_trace\", \"arguments\": {\"trace_id\": \"4bf92f35\"}}\n</tool_call>\n"
                       "<tool_call>\n{\"name\": \"recent_changes\", \"arguments\": {\"service\": \"auth\"}}\n</tool_call>");
    // Llama 3.1's template refuses two calls in one turn: each call alone.
    auto llama = predicted_calls_texts(chat_format::llama3_1, {}, calls);
    REQUIRE(llama.size() == 2);
    CHECK(llama[0].find("\"get_trace\"") != std::string::npos);
    CHECK(llama[0].find("\"4bf92f35\"") != std::string::npos);
    CHECK(llama[1].find("\"recent_changes\"") != std::string::npos);
    CHECK(predicted_calls_texts(chat_format::chatml, {}, {}).empty());
}

TEST_CASE("a call draft continues the candidate from where the generated text ends, however the model split it") {
    const std::string call = R"(<tool_call>{"name": "get_trace", "arguments": {"trace_id": "3de5814a"}}</tool_call>)";
    auto propose = predicted_call_drafts({call}, byte_codec(), nullptr, 128);
    // At the turn's start: the candidate from its beginning.
    CHECK(draft_after(propose, "") == tokens_of(call));
    // The model wrote "3", "d", "e" where the tokenizer writes "3", "de": the text still matches.
    CHECK(draft_after(propose, R"(<tool_call>{"name": "get_trace", "arguments": {"trace_id": "3de)") == tokens_of(R"(5814a"}}</tool_call>)"));
    // The model left the candidate (another trace id): the draft picks it up
    // again at the next stretch the candidate holds, and not before.
    CHECK(draft_after(propose, R"(<tool_call>{"name": "get_trace", "arguments": {"trace_id": "77)").empty());
    CHECK(draft_after(propose, R"(<tool_call>{"name": "get_trace", "arguments": {"trace_id": "77"}})") == tokens_of("</tool_call>"));
    // Nothing of it left to draft at its end.
    CHECK(draft_after(propose, call).empty());
    // At most max_draft tokens.
    auto short_drafts = predicted_call_drafts({call}, byte_codec(), nullptr, 5);
    CHECK(draft_after(short_drafts, "").size() == 5);
}

TEST_CASE("a call draft replaces the grammar's forced text only where it continues it") {
    const std::string call = R"({"name": "get_trace"})";
    const auto forced_with = [](std::string text) {
        return [text](std::span<const int32_t>, std::vector<int32_t>& draft) { draft = tokens_of(text); };
    };
    // The candidate starts with the forced text and goes further: the candidate's.
    auto longer = predicted_call_drafts({call}, byte_codec(), forced_with(R"({"name": ")"), 64);
    CHECK(draft_after(longer, "") == tokens_of(call));
    // The candidate disagrees with what the grammar forces: the forced text stays.
    auto other = predicted_call_drafts({call}, byte_codec(), forced_with(R"({"answer)"), 64);
    CHECK(draft_after(other, "") == tokens_of(R"({"answer)"));
    // No candidate continues the text: the forced text stays.
    auto none = predicted_call_drafts({"zzzz"}, byte_codec(), forced_with("abc"), 64);
    CHECK(draft_after(none, "xyz") == tokens_of("abc"));
}
