#include "runtime/formats/tool_call_parser.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using namespace tachyon;
using kind = tool_call_event::kind;

namespace {

// Events with adjacent text merged: how text is cut into events depends on
// the chunking, the content does not.
std::vector<tool_call_event> normalise(const std::vector<tool_call_event>& in) {
    std::vector<tool_call_event> out;
    for (const auto& e : in) {
        const bool is_text = e.type == kind::text || e.type == kind::reasoning;
        if (is_text && !out.empty() && out.back().type == e.type) out.back().text += e.text;
        else out.push_back(e);
    }
    return out;
}

std::vector<tool_call_event> parse_chunks(const std::vector<std::string>& chunks,
                                          tool_call_syntax syntax = tool_call_syntax::hermes, size_t max_bytes = 65536) {
    tool_call_parser p(syntax, max_bytes);
    std::vector<tool_call_event> ev;
    for (const auto& c : chunks) p.feed(c, ev);
    p.finish(ev);
    return normalise(ev);
}

std::vector<tool_call_event> parse(std::string_view text, tool_call_syntax syntax = tool_call_syntax::hermes) {
    return parse_chunks({std::string(text)}, syntax);
}

std::string describe(const std::vector<tool_call_event>& ev) {
    std::string s;
    // Appends one piece at a time: `"C" + to_string()` chains trip a false -Wrestrict in g++ 12.
    for (const auto& e : ev) {
        if (e.type == kind::text || e.type == kind::reasoning) {
            s.append(e.type == kind::text ? "T[" : "R[").append(e.text).append("]");
            continue;
        }
        s.append(e.type == kind::call_complete ? "C" : "E").append(std::to_string(e.index)).append("[");
        if (e.type == kind::call_complete) s.append(e.name).append("|").append(e.arguments_json).append("|").append(e.id);
        else s.append(e.message);
        s.append("]");
    }
    return s;
}

// Every way of cutting `text` in two, three-way cuts, and byte-by-byte, all give the same events.
void check_split_invariance(std::string_view text, tool_call_syntax syntax) {
    const std::string whole = describe(parse(text, syntax));
    for (size_t i = 0; i <= text.size(); ++i) {
        const std::string a(text.substr(0, i)), b(text.substr(i));
        REQUIRE_MESSAGE(describe(parse_chunks({a, b}, syntax)) == whole, "split at " << i);
    }
    std::vector<std::string> bytes;
    for (char c : text) bytes.emplace_back(1, c);
    CHECK(describe(parse_chunks(bytes, syntax)) == whole);
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
        std::vector<std::string> chunks;
        for (size_t i = 0; i < text.size();) {
            const size_t n = std::min<size_t>(text.size() - i, 1 + rng() % 6);
            chunks.emplace_back(text.substr(i, n));
            i += n;
        }
        REQUIRE(describe(parse_chunks(chunks, syntax)) == whole);
    }
}

}  // namespace

TEST_CASE("hermes: text, two calls and text between them, at every split point") {
    const std::string text =
        "Let me look at the logs.\n<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {\"service\": \"checkout\", "
        "\"level\": \"ERROR\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_trace\", \"arguments\": {\"trace_id\": "
        "\"t-9f\"}}\n</tool_call>";
    const auto ev = parse(text);
    REQUIRE(ev.size() == 4);
    CHECK(ev[0].type == kind::text);
    CHECK(ev[0].text == "Let me look at the logs.\n");
    CHECK(ev[1].type == kind::call_complete);
    CHECK(ev[1].index == 0);
    CHECK(ev[1].name == "search_logs");
    CHECK(ev[1].arguments_json == "{\"service\": \"checkout\", \"level\": \"ERROR\"}");
    CHECK(ev[2].text == "\n");
    CHECK(ev[3].index == 1);
    CHECK(ev[3].name == "get_trace");
    CHECK(ev[3].arguments_json == "{\"trace_id\": \"t-9f\"}");
    check_split_invariance(text, tool_call_syntax::hermes);
}

TEST_CASE("hermes: a call is reported the moment its closing tag arrives") {
    tool_call_parser p;
    std::vector<tool_call_event> ev;
    p.feed("<tool_call>{\"name\": \"a\", \"arguments\": {}}\n</tool_cal", ev);
    CHECK(ev.empty());
    CHECK(p.in_call());
    p.feed("l>", ev);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::call_complete);
    CHECK(ev[0].name == "a");
    CHECK_FALSE(p.in_call());
}

TEST_CASE("hermes: a possible tag start is held back, a false start comes out as text") {
    tool_call_parser p;
    std::vector<tool_call_event> ev;
    p.feed("a <tool_", ev);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].text == "a ");
    p.feed("box> and <", ev);
    REQUIRE(ev.size() == 2);
    CHECK(ev[1].text == "<tool_box> and ");
    p.feed("<tool", ev);  // "<" then "<tool": the first '<' is text
    REQUIRE(ev.size() == 3);
    CHECK(ev[2].text == "<");
    p.finish(ev);
    REQUIRE(ev.size() == 4);
    CHECK(ev[3].text == "<tool");
    check_split_invariance("x <tool <tool_call <tool_calls> <<tool_call>{\"name\":\"n\"}</tool_call> </tool_call>",
                           tool_call_syntax::hermes);
}

TEST_CASE("hermes: whitespace around the JSON is tolerated, a missing arguments object is empty") {
    const auto ev = parse("<tool_call>  \r\n\t{\"name\":\"ping\"}  \n\n</tool_call>");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::call_complete);
    CHECK(ev[0].name == "ping");
    CHECK(ev[0].arguments_json == "{}");
}

TEST_CASE("hermes: malformed calls are errors for the model, and parsing goes on") {
    const std::string text =
        "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": 1,}}</tool_call>"
        "<tool_call>{\"arguments\": {}}</tool_call>"
        "<tool_call>{\"name\": \"b\", \"arguments\": \"x=1\"}</tool_call>"
        "<tool_call>[1]</tool_call>"
        "<tool_call>{\"name\": 3}</tool_call>"
        "ok<tool_call>{\"name\": \"c\", \"arguments\": {\"q\": \"</tool\"}}</tool_call>";
    const auto ev = parse(text);
    REQUIRE(ev.size() == 7);
    CHECK(ev[0].type == kind::call_error);
    CHECK(ev[0].index == 0);
    CHECK(ev[0].message.find("malformed JSON at offset 35") != std::string::npos);
    CHECK(ev[0].message.find("expected '\"'") != std::string::npos);
    CHECK(ev[1].message.find("missing \"name\"") != std::string::npos);
    CHECK(ev[2].message.find("\"arguments\" must be a JSON object; got a string") != std::string::npos);
    CHECK(ev[2].name == "b");
    CHECK(ev[3].message.find("expected a JSON object") != std::string::npos);
    CHECK(ev[4].message.find("\"name\" must be a string; got a number") != std::string::npos);
    CHECK(ev[5].text == "ok");
    CHECK(ev[6].type == kind::call_complete);
    CHECK(ev[6].index == 5);
    CHECK(ev[6].arguments_json == "{\"q\": \"</tool\"}");
    check_split_invariance(text, tool_call_syntax::hermes);
}

TEST_CASE("hermes: a call missing its closing tag at the end of the turn is read, an unfinished one is an error") {
    auto ev = parse("hi <tool_call>{\"name\": \"a\", \"arguments\": {}}\n</tool_c");
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].text == "hi ");
    CHECK(ev[1].type == kind::call_complete);
    CHECK(ev[1].name == "a");
    ev = parse("hi <tool_call>{\"name\": \"a\", \"arguments\": {\"x\": ");
    REQUIRE(ev.size() == 2);
    CHECK(ev[1].type == kind::call_error);
    CHECK(ev[1].message.find("unterminated") != std::string::npos);
}

TEST_CASE("hermes: a call over the size limit is an error and its rest is skipped") {
    std::string big = "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": \"" + std::string(500, 'y') + "\"}}</tool_call>after";
    const auto ev = parse_chunks({big}, tool_call_syntax::hermes, 100);
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].type == kind::call_error);
    CHECK(ev[0].message.find("longer than 100 bytes") != std::string::npos);
    CHECK(ev[1].text == "after");
}

TEST_CASE("hermes: unicode text split inside characters comes out whole") {
    const std::string text = "Ünïcödé → 日本語 🚀 <tool_call>{\"name\": \"note\", \"arguments\": {\"t\": \"é🚀\"}}</tool_call> ✓";
    tool_call_parser p;
    std::vector<tool_call_event> ev;
    for (char c : text) {
        p.feed(std::string(1, c), ev);
        for (const auto& e : ev) {
            if (e.type != kind::text) continue;
            // never ends inside a character
            const auto last = static_cast<unsigned char>(e.text.back());
            CHECK(((last & 0x80) == 0 || (last & 0xC0) == 0x80));
        }
    }
    p.finish(ev);
    const auto n = normalise(ev);
    REQUIRE(n.size() == 3);
    CHECK(n[0].text == "Ünïcödé → 日本語 🚀 ");
    CHECK(n[1].arguments_json == "{\"t\": \"é🚀\"}");
    CHECK(n[2].text == " ✓");
    check_split_invariance(text, tool_call_syntax::hermes);
}

TEST_CASE("llama3: one or several JSON calls separated by semicolons or newlines") {
    const std::string text =
        "{\"name\": \"search_logs\", \"parameters\": {\"service\": \"checkout\"}}; {\"name\": \"get_trace\", "
        "\"parameters\": {\"trace_id\": \"t1\"}}\n{\"name\": \"x\", \"arguments\": {}}";
    const auto ev = parse(text, tool_call_syntax::llama3);
    REQUIRE(ev.size() == 3);
    CHECK(ev[0].name == "search_logs");
    CHECK(ev[0].arguments_json == "{\"service\": \"checkout\"}");
    CHECK(ev[1].name == "get_trace");
    CHECK(ev[1].index == 1);
    CHECK(ev[2].name == "x");
    check_split_invariance(text, tool_call_syntax::llama3);
}

TEST_CASE("llama3: plain text turns and JSON final answers are text") {
    auto ev = parse("The root cause is a bad deploy.", tool_call_syntax::llama3);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].text == "The root cause is a bad deploy.");
    ev = parse("{\"root_cause\": \"db\", \"evidence\": [\"payments:1842\"]}", tool_call_syntax::llama3);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::text);
    CHECK(ev[0].text == "{\"root_cause\": \"db\", \"evidence\": [\"payments:1842\"]}");
}

TEST_CASE("llama3: malformed and unterminated calls are errors") {
    auto ev = parse("{\"name\": \"a\", \"parameters\": {\"x\": tru}}", tool_call_syntax::llama3);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::call_error);
    CHECK(ev[0].message.find("malformed JSON at offset") != std::string::npos);
    ev = parse("{\"name\": \"a\", \"parameters\": {\"x\": 1}", tool_call_syntax::llama3);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].message.find("unterminated") != std::string::npos);
    check_split_invariance("  {\"name\": \"a\", \"parameters\": {\"s\": \"}{\\\"\"}} ; then text", tool_call_syntax::llama3);
}

TEST_CASE("the parser is reusable: finish() starts a new turn") {
    tool_call_parser p;
    std::vector<tool_call_event> ev;
    p.feed("<tool_call>{\"name\": \"a\"}</tool_call>", ev);
    p.finish(ev);
    p.feed("<tool_call>{\"name\": \"b\"}</tool_call>", ev);
    REQUIRE(ev.size() == 2);
    CHECK(ev[1].index == 0);
    CHECK(ev[1].name == "b");
}

TEST_CASE("hermes: code fences around the JSON, a list of calls and arguments as a JSON string are read") {
    const std::string text =
        "<tool_call>\n```json\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n```\n</tool_call>"
        "<tool_call>[{\"name\": \"b\", \"arguments\": {}}, {\"name\": \"c\", \"arguments\": \"{\\\"y\\\": 2}\"}]</tool_call>";
    const auto ev = parse(text);
    REQUIRE(ev.size() == 3);
    CHECK(ev[0].name == "a");
    CHECK(ev[0].arguments_json == "{\"x\": 1}");
    CHECK(ev[1].name == "b");
    CHECK(ev[2].name == "c");
    CHECK(ev[2].index == 2);
    CHECK(ev[2].arguments_json == "{\"y\": 2}");
    check_split_invariance(text, tool_call_syntax::hermes);
}

TEST_CASE("qwen3: the think block is reasoning, a call inside an unclosed think block is not a call") {
    const std::string text =
        "<think>\nThe user wants logs. <tool_call> maybe\n</think>\n\nLooking.\n<tool_call>\n{\"name\": \"search_logs\", "
        "\"arguments\": {\"q\": \"err\"}}\n</tool_call>";
    const auto ev = parse(text, tool_call_syntax::qwen3);
    REQUIRE(ev.size() == 3);
    CHECK(ev[0].type == kind::reasoning);
    CHECK(ev[0].text == "The user wants logs. <tool_call> maybe\n");
    CHECK(ev[1].type == kind::text);
    CHECK(ev[1].text == "Looking.\n");
    CHECK(ev[2].type == kind::call_complete);
    CHECK(ev[2].name == "search_logs");
    check_split_invariance(text, tool_call_syntax::qwen3);

    const auto open = parse("<think>I will call <tool_call>{\"name\": \"a\"}</tool_call>", tool_call_syntax::qwen3);
    REQUIRE(open.size() == 1);
    CHECK(open[0].type == kind::reasoning);
    CHECK(open[0].text == "I will call <tool_call>{\"name\": \"a\"}</tool_call>");
}

TEST_CASE("llama3: <|python_tag|>, \"arguments\" and a fenced call are calls; a fence around text stays text") {
    const std::string text = "<|python_tag|>{\"name\": \"get_trace\", \"arguments\": {\"id\": \"t1\"}}";
    auto ev = parse(text, tool_call_syntax::llama3);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::call_complete);
    CHECK(ev[0].name == "get_trace");
    CHECK(ev[0].arguments_json == "{\"id\": \"t1\"}");
    check_split_invariance(text, tool_call_syntax::llama3);

    const std::string fenced = "```json\n{\"name\": \"a\", \"parameters\": {}}\n```";
    ev = parse(fenced, tool_call_syntax::llama3);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::call_complete);
    CHECK(ev[0].name == "a");
    check_split_invariance(fenced, tool_call_syntax::llama3);

    ev = parse("```python\nprint(1)\n```", tool_call_syntax::llama3);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].text == "```python\nprint(1)\n```");
    ev = parse("<|eot_id|> no", tool_call_syntax::llama3);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].text == "<|eot_id|> no");
}

TEST_CASE("mistral: [TOOL_CALLS] with a list, with ids, and the name[ARGS] form") {
    const std::string text =
        "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}, \"id\": \"abcdefghi\"}, {\"name\": \"b\", "
        "\"arguments\": {}}]";
    auto ev = parse(text, tool_call_syntax::mistral);
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].name == "a");
    CHECK(ev[0].id == "abcdefghi");
    CHECK(ev[0].arguments_json == "{\"x\": 1}");
    CHECK(ev[1].name == "b");
    CHECK(ev[1].index == 1);
    check_split_invariance(text, tool_call_syntax::mistral);

    const std::string named = "[TOOL_CALLS]get_trace[ARGS]{\"id\": \"t1\"}[TOOL_CALLS]ping[CALL_ID]a1b2[ARGS] {}";
    ev = parse(named, tool_call_syntax::mistral);
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].name == "get_trace");
    CHECK(ev[0].arguments_json == "{\"id\": \"t1\"}");
    CHECK(ev[1].name == "ping");
    CHECK(ev[1].id == "a1b2");
    CHECK(ev[1].arguments_json == "{}");
    check_split_invariance(named, tool_call_syntax::mistral);

    // Calls out one by one, before the list ends; a list cut at the end of the turn keeps its calls.
    tool_call_parser p(tool_call_syntax::mistral);
    std::vector<tool_call_event> out;
    p.feed("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}", out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].type == kind::call_complete);
    CHECK(p.in_call());
    p.finish(out);
    CHECK(out.size() == 1);

    ev = parse("Answer text [TOOL_CALLS] !oops", tool_call_syntax::mistral);
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].text == "Answer text ");
    CHECK(ev[1].type == kind::call_error);
    CHECK(ev[1].message.find("expected a JSON list of calls") != std::string::npos);
    ev = parse("[TOOL_CALLS]get_trace[ARGS]{\"id\": ", tool_call_syntax::mistral);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].message.find("unterminated") != std::string::npos);
    CHECK(ev[0].name == "get_trace");
}

TEST_CASE("the [SYSTEM_PROMPT] Mistral families' named calls are read by the Mistral reader") {
    for (tool_call_syntax syntax : {tool_call_syntax::mistral_named, tool_call_syntax::mistral_named_id}) {
        CAPTURE(to_string(syntax));
        tool_call_parser p(syntax);
        CHECK(p.syntax() == tool_call_syntax::mistral);
        const std::string text = "ok[TOOL_CALLS]get_trace[CALL_ID]a1b2c3d4e[ARGS]{\"id\": \"t1\"}[TOOL_CALLS]ping[ARGS]{}";
        auto ev = parse(text, syntax);
        REQUIRE(ev.size() == 3);
        CHECK(ev[0].text == "ok");
        CHECK(ev[1].name == "get_trace");
        CHECK(ev[1].id == "a1b2c3d4e");
        CHECK(ev[2].name == "ping");
        CHECK(ev[2].index == 1);
    }
}

TEST_CASE("phi4: <|tool_call|> lists closed by <|/tool_call|>, or missing the close at the end") {
    const std::string text =
        "Sure.<|tool_call|>[{\"name\": \"get_trace\", \"arguments\": {\"id\": \"t1\"}}]<|/tool_call|> done";
    auto ev = parse(text, tool_call_syntax::phi4);
    REQUIRE(ev.size() == 3);
    CHECK(ev[0].text == "Sure.");
    CHECK(ev[1].name == "get_trace");
    CHECK(ev[2].text == " done");
    check_split_invariance(text, tool_call_syntax::phi4);
    ev = parse("<|tool_call|>{\"name\": \"a\", \"arguments\": {}}", tool_call_syntax::phi4);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].name == "a");
    ev = parse("<|tool_call|>[{\"name\": \"a\", \"arguments\": {}},]<|/tool_call|>", tool_call_syntax::phi4);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::call_error);
    CHECK(ev[0].message.find("malformed JSON") != std::string::npos);
}

TEST_CASE("granite: a <|tool_call|> list up to its end, fenced or not, and what follows is text") {
    const std::string text =
        "<|tool_call|>```json\n[{\"name\": \"a\", \"arguments\": {\"s\": \"]}\"}}, {\"name\": \"b\", \"arguments\": {}}]";
    auto ev = parse(text, tool_call_syntax::granite);
    REQUIRE(ev.size() == 2);
    CHECK(ev[0].name == "a");
    CHECK(ev[0].arguments_json == "{\"s\": \"]}\"}");
    CHECK(ev[1].name == "b");
    check_split_invariance(text, tool_call_syntax::granite);
    ev = parse("<|tool_call|>[{\"name\": \"a\", \"arguments\": {}}] and text", tool_call_syntax::granite);
    REQUIRE(ev.size() == 2);
    CHECK(ev[1].text == " and text");
    ev = parse("<|tool_call|>[3]", tool_call_syntax::granite);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::call_error);
}

TEST_CASE("a family without tool calls reads everything as text") {
    const auto ev = parse("<tool_call>{\"name\": \"a\"}</tool_call>", tool_call_syntax::none);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].type == kind::text);
}

TEST_CASE("random bytes around every family's markers never crash and keep split invariance") {
    const tool_call_syntax syntaxes[] = {tool_call_syntax::hermes, tool_call_syntax::qwen3,   tool_call_syntax::llama3,
                                         tool_call_syntax::mistral, tool_call_syntax::phi4, tool_call_syntax::granite};
    const std::string_view atoms[] = {"<tool_call>", "</tool_call>", "<think>", "</think>", "<|tool_call|>",
                                      "<|/tool_call|>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|python_tag|>",
                                      "{\"name\": \"a\"", ", \"arguments\": {", "}", "]", "[", "```json\n", "\"", "x", " ", "\xc3\xa9"};
    std::mt19937 rng(11);
    for (auto syntax : syntaxes) {
        for (int round = 0; round < 30; ++round) {
            std::string text;
            for (int i = 0; i < 12; ++i) text += atoms[rng() % std::size(atoms)];
            const std::string whole = describe(parse(text, syntax));
            std::vector<std::string> bytes;
            for (char c : text) bytes.emplace_back(1, c);
            REQUIRE_MESSAGE(describe(parse_chunks(bytes, syntax)) == whole, text);
        }
    }
}
