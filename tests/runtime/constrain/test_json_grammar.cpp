#include "runtime/constrain/json_grammar.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using namespace tachyon;

namespace {

std::shared_ptr<const json_schema> schema(const std::string& json, const char* label = "final answer") {
    auto s = json_schema::parse(json, label, "field");
    REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.err().message));
    return std::make_shared<const json_schema>(std::move(*s));
}

std::shared_ptr<const json_grammar> answer_grammar(const std::shared_ptr<const json_schema>& s, const grounded_values& g = {}) {
    auto grammar = json_grammar::build({}, s, g);
    REQUIRE_MESSAGE(grammar.ok(), (grammar.ok() ? "" : grammar.err().message));
    return *grammar;
}

// The region is complete: a call's last byte consumed, or an answer that may end here.
bool complete(const json_automaton& a, bool answer) { return a.done() || (answer && a.can_end()); }

// Searches for bytes that complete the region from `a`, closing bytes first.
// 1: found, 0: none exists below `depth` bytes, -1: `budget` advances spent.
int completes(const json_automaton& a, bool answer, int depth, long& budget) {
    if (complete(a, answer)) return 1;
    if (depth == 0) return 0;
    static const std::string order = [] {
        std::string o = "\"}] ,:0123456789.-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ\n{[";
        for (int b = 0; b < 256; ++b)
            if (o.find(static_cast<char>(b)) == std::string::npos) o += static_cast<char>(b);
        return o;
    }();
    bool exhausted = true;
    for (char c : order) {
        if (--budget < 0) return -1;
        json_automaton next;
        next.copy_from(a);
        if (!next.advance(static_cast<uint8_t>(c))) continue;
        const int r = completes(next, answer, depth - 1, budget);
        if (r == 1) return 1;
        if (r < 0) exhausted = false;
        if (budget < 0) return -1;
    }
    return exhausted ? 0 : -1;
}

bool can_complete(const json_automaton& a, bool answer) {
    long budget = 200000;
    const int r = completes(a, answer, 700, budget);
    return r == 1;
}

// Walks random legal paths through the region: at every state reached, some
// byte is allowed and a completion exists. Returns the finished texts.
std::vector<std::string> walk(const std::shared_ptr<const json_grammar>& g, bool answer, int n_walks, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::string> texts;
    for (int w = 0; w < n_walks; ++w) {
        json_automaton a(g.get());
        if (answer) a.start_answer();
        else a.start_tool_call();
        std::string text;
        while (!a.done() && text.size() < 600) {
            REQUIRE_MESSAGE(can_complete(a, answer), "no way to complete after: " << text);
            std::vector<uint8_t> allowed;
            std::vector<double> weight;
            for (int b = 0; b < 256; ++b) {
                json_automaton t;
                t.copy_from(a);
                if (!t.advance(static_cast<uint8_t>(b))) continue;
                allowed.push_back(static_cast<uint8_t>(b));
                weight.push_back(b == '"' || b == '}' || b == ']' || b == ',' ? 30.0 : 1.0);
            }
            if (answer && a.can_end() && std::uniform_int_distribution<int>(0, 3)(rng) == 0) break;
            REQUIRE_MESSAGE(!allowed.empty(), "no byte allowed after: " << text);
            const uint8_t b = allowed[std::discrete_distribution<size_t>(weight.begin(), weight.end())(rng)];
            REQUIRE(a.advance(b));
            text += static_cast<char>(b);
        }
        if (!complete(a, answer)) continue;  // long walks stop unfinished; each state on the way was checked
        texts.push_back(text);
    }
    return texts;
}

std::string nested_required(int levels) {
    std::string s = R"({"type": "string", "minLength": 1})";
    for (int i = 0; i < levels; ++i) s = R"({"type": "object", "properties": {"a": )" + s + R"(}, "required": ["a"], "additionalProperties": false})";
    return s;
}

}  // namespace

TEST_CASE("json_grammar: every state a random walk reaches keeps a way to complete the value") {
    grounded_values g;
    g.by_path["service"] = {"checkout", "payments"};
    g.by_path["evidence[]"] = {"checkout:40", "checkout:41", "payments:12"};
    g.by_path["few[]"] = {"x", "y"};
    g.texts = {"checkout:40 timeout\ncheckout:41 timeout\npayments:12 refused"};
    const char* answers[] = {
        // uniqueItems whose candidates run out before maxItems, also narrowed by an anchor
        R"({"type": "object", "properties": {
            "service": {"type": "string", "x-grounded": true},
            "evidence": {"type": "array", "uniqueItems": true, "maxItems": 6,
                         "items": {"type": "string", "x-grounded": true, "x-grounded-with": "service"}},
            "levels": {"type": "array", "uniqueItems": true, "maxItems": 5, "items": {"enum": ["ERROR", "WARN", "WARNING"]}},
            "few": {"type": "array", "uniqueItems": true, "minItems": 3, "items": {"type": "string", "x-grounded": true}}},
            "required": ["service", "evidence", "levels"], "additionalProperties": false})",
        // numbers: negative fractions, one grid point, beyond a digit, integers near their bounds
        R"({"type": "object", "properties": {
            "neg": {"type": "number", "exclusiveMinimum": -1, "exclusiveMaximum": 0},
            "point": {"type": "number", "minimum": 0.123456789, "maximum": 0.123456789},
            "range": {"type": "number", "minimum": 123, "maximum": 125},
            "i": {"type": ["integer", "null"], "minimum": -5, "exclusiveMaximum": 1000},
            "big": {"type": "integer", "minimum": 999999999999999990},
            "free": {"type": "number"}},
            "required": ["neg", "point", "range", "i", "big"]})",
        // lengths, duplicate property names, enums filtered by the type beside them
        R"({"type": "object", "properties": {
            "s3": {"type": "string", "minLength": 3, "maxLength": 3},
            "s0": {"type": "string", "maxLength": 0},
            "d": {"type": "integer"}, "d": {"type": "string"},
            "e": {"type": "integer", "enum": ["a", 2, 30]},
            "l": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "boolean"}},
            "u": {"minLength": 6, "maxLength": 5, "minItems": 3, "maxItems": 1}},
            "required": ["s3", "d", "e", "l", "u"]})",  // u: no string, no array, but any other value
        R"({"type": "object"})",
    };
    for (const char* json : answers) {
        CAPTURE(json);
        auto s = schema(json);
        REQUIRE_FALSE(s->unsatisfiable().has_value());
        auto grammar = answer_grammar(s, g);
        const auto texts = walk(grammar, true, 40, 7);
        CHECK(texts.size() > 5);
        for (const auto& t : texts) {
            // what the walk writes is valid, but for minItems the grounded candidates could not fill
            auto v = s->validate(t, &g);
            if (!v.ok()) CHECK_MESSAGE(v.err().message.find("'few' must be an array of at least 3") != std::string::npos, v.err().message << "\n" << t);
        }
    }
}

TEST_CASE("json_grammar: a tool call nested as deep as a schema may be still completes") {
    auto deep = schema(nested_required(json_schema::max_depth), "deep");
    REQUIRE_FALSE(deep->unsatisfiable().has_value());
    auto grammar = json_grammar::build({{"deep", deep}, {"free", nullptr}}, nullptr, {});
    REQUIRE(grammar.ok());
    const auto texts = walk(*grammar, false, 20, 11);
    CHECK(texts.size() > 5);
    bool saw_deep = false;
    for (const auto& t : texts) {
        CHECK(t.ends_with("}\n</tool_call>"));
        saw_deep = saw_deep || t.find("\"deep\"") != std::string::npos;
    }
    CHECK(saw_deep);
}

TEST_CASE("json_grammar: uniqueItems offers no ', ' once no candidate is left for the next item") {
    auto grammar = answer_grammar(schema(R"({"type": "array", "uniqueItems": true, "maxItems": 5, "items": {"enum": ["a", "b"]}})"));
    json_automaton a(grammar.get());
    a.start_answer();
    REQUIRE(a.advance(R"(["b", "a")"));
    json_automaton t;
    t.copy_from(a);
    CHECK_FALSE(t.advance(','));  // the third item would have no value
    t.copy_from(a);
    CHECK(t.advance(']'));
    CHECK(t.done());
    // one candidate left: the comma stays
    json_automaton b(grammar.get());
    b.start_answer();
    REQUIRE(b.advance(R"(["b")"));
    CHECK(b.advance(", \"a\"]"));

    // grounded candidates fewer than minItems: the array closes once they are used
    grounded_values g;
    g.by_path["[]"] = {"x", "y"};
    auto few = answer_grammar(
        schema(R"({"type": "array", "uniqueItems": true, "minItems": 3, "items": {"type": "string", "x-grounded": true}})"), g);
    json_automaton c(few.get());
    c.start_answer();
    REQUIRE(c.advance(R"(["y", "x")"));
    t.copy_from(c);
    CHECK_FALSE(t.advance(','));
    CHECK(c.advance(']'));
    CHECK(c.done());
}

TEST_CASE("json_grammar: a negative number between -1 and 0 can be written") {
    auto grammar = answer_grammar(schema(R"({"type": "number", "exclusiveMinimum": -1, "exclusiveMaximum": 0})"));
    json_automaton a(grammar.get());
    a.start_answer();
    REQUIRE(a.advance("-0"));
    CHECK_FALSE(a.can_end());  // "-0" itself is not in (-1, 0)
    REQUIRE(a.advance(".25"));
    CHECK(a.can_end());
    json_automaton b(grammar.get());
    b.start_answer();
    CHECK_FALSE(b.advance("-1"));
}

TEST_CASE("json_grammar: a schema that skipped the satisfiability check is walked without reading out of bounds") {
    // an empty enum, contradictory bounds, an integer enum of strings: no value, nothing to read past
    for (const char* json : {R"({"type": "object", "properties": {"a": {"enum": []}}})", R"({"enum": []})",
                             R"({"type": "object", "properties": {"a": {"type": "integer", "enum": ["x"]}}, "required": ["a"]})",
                             R"({"type": "array", "minItems": 4, "maxItems": 1, "items": {"type": "string", "minLength": 3, "maxLength": 1}})",
                             R"({"type": "object", "properties": {"n": {"type": "number", "minimum": 2, "maximum": 1}}})"}) {
        CAPTURE(json);
        auto s = schema(json);
        CHECK(s->unsatisfiable().has_value());
        auto grammar = answer_grammar(s);
        std::mt19937 rng(3);
        for (int w = 0; w < 200; ++w) {
            json_automaton a(grammar.get());
            a.start_answer();
            const std::string prefixes[] = {"", "{", "{\"a\": ", "{\"a\": \"", "[", "[\"", "{\"n\": ", "{\"n\": 1"};
            (void)a.advance(prefixes[static_cast<size_t>(w) % std::size(prefixes)]);
            for (int i = 0; i < 40 && !a.done(); ++i) {
                (void)a.can_end();
                json_automaton t;
                t.copy_from(a);
                if (t.advance(static_cast<uint8_t>(rng()))) a.copy_from(t);
            }
        }
    }
}

TEST_CASE("json_grammar: a call region is written in the chat family's syntax, lists where the family writes lists") {
    auto args = schema(R"({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]})", "get_trace");
    auto accepts = [&](tool_call_syntax syntax, std::string_view text) {
        auto g = json_grammar::build({{"get_trace", args}}, nullptr, {}, syntax);
        REQUIRE(g.ok());
        json_automaton a(g->get());
        a.start_tool_call();
        return a.advance(text) && a.done();
    };
    CHECK(accepts(tool_call_syntax::hermes, "\n{\"name\": \"get_trace\", \"arguments\": {\"id\": \"t\"}}\n</tool_call>"));
    CHECK(accepts(tool_call_syntax::llama3, ": \"get_trace\", \"parameters\": {\"id\": \"t\"}}"));
    CHECK_FALSE(accepts(tool_call_syntax::llama3, ": \"get_trace\", \"arguments\": {\"id\": \"t\"}}"));
    const std::string two = "[{\"name\": \"get_trace\", \"arguments\": {\"id\": \"a\"}}, {\"name\": \"get_trace\", \"arguments\": {\"id\": \"b\"}}]";
    CHECK_FALSE(accepts(tool_call_syntax::mistral, two));  // Mistral's calls carry ids (test_json_grammar_calls.cpp)
    CHECK(accepts(tool_call_syntax::granite, two));
    CHECK_FALSE(accepts(tool_call_syntax::phi4, two));
    CHECK(accepts(tool_call_syntax::phi4, two + "<|/tool_call|>"));
    CHECK_FALSE(accepts(tool_call_syntax::mistral, "[{\"name\": \"other\", \"arguments\": {}}]"));
    auto g = json_grammar::build({{"get_trace", args}}, nullptr, {}, tool_call_syntax::mistral);
    REQUIRE(g.ok());
    CHECK((*g)->call_trigger() == "[TOOL_CALLS]");
}
