#include "runtime/constrain/json_schema.h"

#include <doctest/doctest.h>

using namespace tachyon;

namespace {

const char* k_search_logs = R"({
  "type": "object",
  "description": "Search a service's logs",
  "properties": {
    "service": {"type": "string", "x-grounded": true},
    "level": {"type": "string", "enum": ["DEBUG", "INFO", "WARN", "ERROR"]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
    "query": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z_]+$"},
    "ids": {"type": "array", "items": {"type": "string", "x-grounded": true}, "minItems": 1, "maxItems": 2},
    "ratio": {"type": ["number", "null"], "exclusiveMaximum": 1},
    "flag": {"const": true}
  },
  "required": ["service"],
  "additionalProperties": false
})";

json_schema search_logs() {
    auto s = json_schema::parse(k_search_logs, "search_logs");
    REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.err().message));
    return std::move(*s);
}

std::string error_of(const json_schema& s, std::string_view json, const grounded_values* g = nullptr) {
    auto r = s.validate(json, g);
    return r.ok() ? "" : r.err().message;
}

}  // namespace

TEST_CASE("valid arguments pass") {
    const auto s = search_logs();
    CHECK(error_of(s, R"({"service": "checkout", "level": "ERROR", "limit": 50})") == "");
    CHECK(error_of(s, R"({"service": "x", "ratio": null, "flag": true, "ids": ["a"], "query": "db_err"})") == "");
    CHECK(error_of(s, R"({"service": "x", "limit": 3.0})") == "");  // an integral number is an integer
}

TEST_CASE("errors name the tool, the argument and what was expected") {
    const auto s = search_logs();
    CHECK(error_of(s, R"({"service": "checkout", "limit": 80})") == "search_logs: argument 'limit' must be an integer >= 1 and <= 50; got 80");
    CHECK(error_of(s, R"({"service": "c", "limit": "5"})") == "search_logs: argument 'limit' must be an integer; got a string \"5\"");
    CHECK(error_of(s, R"({"service": "c", "limit": 2.5})") == "search_logs: argument 'limit' must be an integer; got a number 2.5");
    CHECK(error_of(s, R"({"service": "c", "level": "FATAL"})") ==
          "search_logs: argument 'level' must be one of \"DEBUG\", \"INFO\", \"WARN\", \"ERROR\"; got \"FATAL\"");
    CHECK(error_of(s, R"({"level": "INFO"})") == "search_logs: missing required argument 'service'");
    CHECK(error_of(s, R"({"service": "c", "sevrice": "c"})") ==
          "search_logs: unknown argument 'sevrice'; expected one of: service, level, limit, query, ids, ratio, flag");
    CHECK(error_of(s, R"({"service": "c", "query": "much_too_long"})") ==
          "search_logs: argument 'query' must be a string of at least 1 and at most 8 characters; got 13");
    CHECK(error_of(s, R"({"service": "c", "query": "Bad"})") == "search_logs: argument 'query' must match the pattern ^[a-z_]+$; got \"Bad\"");
    CHECK(error_of(s, R"({"service": "c", "ids": []})") == "search_logs: argument 'ids' must be an array of at least 1 and at most 2 items; got 0");
    CHECK(error_of(s, R"({"service": "c", "ids": ["a", 3]})") == "search_logs: argument 'ids[1]' must be a string; got an integer 3");
    CHECK(error_of(s, R"({"service": "c", "ratio": 1})") == "search_logs: argument 'ratio' must be a number < 1; got 1");
    CHECK(error_of(s, R"({"service": "c", "flag": false})") == "search_logs: argument 'flag' must be true; got false");
    CHECK(error_of(s, R"([1])") == "search_logs: arguments must be an object; got an array [1]");
    CHECK(error_of(s, R"({"service": )").find("search_logs: not valid JSON") == 0);
}

TEST_CASE("several errors are reported together") {
    const auto s = search_logs();
    const std::string e = error_of(s, R"({"limit": 0, "level": "x"})");
    CHECK(e.find("missing required argument 'service'") != std::string::npos);
    CHECK(e.find("argument 'limit' must be") != std::string::npos);
    CHECK(e.find("argument 'level' must be one of") != std::string::npos);
}

TEST_CASE("grounded strings must be values of the run, per path or from the common set") {
    const auto s = search_logs();
    grounded_values g;
    g.all = {"checkout", "payments"};
    g.by_path["ids[]"] = {"payments:1842"};
    CHECK(error_of(s, R"({"service": "payments", "ids": ["payments:1842"]})", &g) == "");
    CHECK(error_of(s, R"({"service": "billing"})", &g) ==
          "search_logs: argument 'service' must be a value seen in the task or in a tool result; got \"billing\" which was not seen");
    CHECK(error_of(s, R"({"service": "checkout", "ids": ["checkout"]})", &g).find("argument 'ids[0]'") != std::string::npos);
    CHECK(error_of(s, R"({"service": "billing"})") == "");  // no grounding given: not checked
}

TEST_CASE("final answers use their own label and noun, nested paths are dotted") {
    auto s = json_schema::parse(R"({"type": "object", "properties": {"cause": {"type": "object", "properties":
        {"service": {"type": "string"}}, "required": ["service"]}}})", "final answer", "field");
    REQUIRE(s.ok());
    CHECK(error_of(*s, R"({"cause": {}})") == "final answer: field 'cause' is missing required 'service'");
    CHECK(error_of(*s, R"({"cause": {"service": 1}})") == "final answer: field 'cause.service' must be a string; got an integer 1");
}

TEST_CASE("unknown keywords are ignored, malformed ones are errors naming the keyword") {
    CHECK(json_schema::parse(R"({"type": "object", "title": "t", "format": "uri", "$schema": "x"})").ok());
    auto bad = [](const char* schema) {
        auto s = json_schema::parse(schema, "t");
        REQUIRE_FALSE(s.ok());
        return s.err().message;
    };
    CHECK(bad(R"({"type": "objekt"})") == "schema of t: 'type' names an unknown type 'objekt'");
    CHECK(bad(R"({"properties": {"a": {"maximum": "9"}}})") == "schema of t: 'properties.a.maximum' must be a number");
    CHECK(bad(R"({"required": "a"})") == "schema of t: 'required' must be an array of property names");
    CHECK(bad(R"x({"properties": {"a": {"pattern": "(a|b)"}}})x").find("'properties.a.pattern' pattern '(a|b)'") != std::string::npos);
    CHECK(bad(R"({"minLength": -1})") == "schema of t: 'minLength' must be a non-negative integer");
    CHECK(bad(R"([1])") == "schema of t: '(root)' must be a schema object");
    CHECK(bad(R"({)").find("not valid JSON") != std::string::npos);
}

TEST_CASE("pattern subset: classes, escapes, quantifiers, anchors") {
    auto m = [](const char* p, const char* s) {
        auto c = schema_pattern::compile(p);
        REQUIRE_MESSAGE(c.ok(), p);
        return c->search(s);
    };
    CHECK(m("^[a-z]+:\\d{1,5}$", "payments:1842"));
    CHECK_FALSE(m("^[a-z]+:\\d{1,5}$", "payments:184211"));
    CHECK_FALSE(m("^[a-z]+:\\d{1,5}$", "Payments:1"));
    CHECK(m("err", "an error here"));        // unanchored: matches anywhere
    CHECK_FALSE(m("^err", "an error"));
    CHECK(m("^t-[0-9a-f]{4}x?$", "t-00ff"));
    CHECK(m("^t-[0-9a-f]{4}x?$", "t-00ffx"));
    CHECK_FALSE(m("^[^ ]*$", "a b"));
    CHECK(m("^a.c\\.$", "abc."));
    CHECK(m("^$", ""));
    CHECK_FALSE(schema_pattern::compile("^(a)$").ok());
    CHECK_FALSE(schema_pattern::compile("a{2,1}").ok());
}

namespace {

// "path: what" of the schema's first unsatisfiable keyword, "" when it admits a value.
std::string conflict_of(const char* schema_json) {
    auto s = json_schema::parse(schema_json, "final answer", "field");
    REQUIRE_MESSAGE(s.ok(), schema_json << ": " << (s.ok() ? "" : s.err().message));
    const auto c = s->unsatisfiable();
    return c ? c->path + ": " + c->what : std::string();
}

}  // namespace

TEST_CASE("a schema no value satisfies is named by the keyword's path and what was expected") {
    CHECK(conflict_of(R"({"type": "object", "properties": {"a": {"enum": []}}})") ==
          "properties.a.enum: empty enum (expected at least one value)");
    CHECK(conflict_of(R"({"type": "array", "items": {"type": "string", "minLength": 5, "maxLength": 3}})") ==
          "items.minLength: minLength 5 is above maxLength 3 (expected minLength <= maxLength)");
    CHECK(conflict_of(R"({"type": "integer", "minimum": 10, "maximum": 1})").starts_with("minimum: no number lies within the bounds"));
    CHECK(conflict_of(R"({"type": "number", "minimum": 1, "exclusiveMaximum": 1})").starts_with("minimum: no number lies within"));
    CHECK(conflict_of(R"({"type": "integer", "minimum": 1.2, "maximum": 1.8})") ==
          "minimum: no integer lies within the bounds (minimum 1.2, maximum 1.8)");
    CHECK(conflict_of(R"({"type": "array", "minItems": 3, "maxItems": 2})").starts_with("minItems: minItems 3 is above maxItems 2"));
    CHECK(conflict_of(R"({"type": "object", "properties": {"a": {}}, "required": ["b"], "additionalProperties": false})") ==
          "required: 'b' is not one of the properties, and additionalProperties is false");
    CHECK(conflict_of(R"({"type": "string", "pattern": "^[^\\s\\S]$"})").starts_with("pattern: the pattern ^[^\\s\\S]$ matches no string"));
    CHECK(conflict_of(R"({"type": "string", "pattern": "^[a-z]{4}", "maxLength": 3})").starts_with("pattern: the pattern ^[a-z]{4} needs at least 4"));
    CHECK(conflict_of(R"({"type": "string", "pattern": "^a?b$", "minLength": 3})").starts_with("pattern: the pattern ^a?b$ matches at most 2"));
    CHECK(conflict_of(R"({"type": "integer", "enum": ["a", 1.5]})").starts_with("enum: no enum value is valid for the rest of this schema"));
    CHECK(conflict_of(R"({"const": "x", "enum": ["a", "b"]})").starts_with("const: the const value is not one of the enum values"));
    CHECK(conflict_of(R"({"enum": ["a", "b"], "const": "x"})").starts_with("const: the const value is not one of the enum values"));
    CHECK(conflict_of(R"({"type": []})").starts_with("type: lists no type"));
    CHECK(conflict_of(R"({"type": "array", "uniqueItems": true, "minItems": 3, "items": {"enum": ["a", "b"]}})") ==
          "minItems: minItems 3 with uniqueItems, but the items allow only 2 distinct values");
    CHECK(conflict_of(R"({"type": "object", "properties": {"s": {"type": "string", "x-grounded": true}, "t": {"type": "string", "x-grounded": true},
          "a": {"type": "string", "x-grounded": true, "x-grounded-with": "s"},
          "b": {"type": "array", "items": {"type": "string", "x-grounded": true, "x-grounded-with": "t"}}}})")
              .starts_with("properties.b.items.x-grounded-with: names 't', but another property is narrowed by 's'"));
    // deeper than the root: the first bad subschema, its path through properties and items
    CHECK(conflict_of(R"({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object",
          "properties": {"n": {"type": "number", "minimum": 3, "maximum": 2}}}}}})")
              .starts_with("properties.l.items.properties.n.minimum: "));
    // bounds constrained decoding cannot reach: beyond 18 integer digits, between two 9-digit fractions
    CHECK(conflict_of(R"({"type": "number", "minimum": 1e20})").starts_with("minimum: no number that constrained decoding writes"));
    CHECK(conflict_of(R"({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1e-12})")
              .starts_with("exclusiveMinimum: no number that constrained decoding writes"));
}

TEST_CASE("schemas with a value are accepted, also where one kind of value is impossible") {
    for (const char* ok : {
             R"({"type": "object", "properties": {"a": {"enum": ["x"]}}})",
             R"({"type": ["string", "null"], "minLength": 5, "maxLength": 3})",  // null fits
             R"({"minimum": 5, "maximum": 1})",                                 // untyped: strings, objects, ... fit
             R"({"type": "number", "exclusiveMinimum": -1, "exclusiveMaximum": 0})",
             R"({"type": "number", "minimum": 0.5, "maximum": 0.5})",
             R"({"type": "integer", "minimum": -3.5, "maximum": -2.5})",
             R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})",  // additional properties allowed
             R"({"type": "integer", "enum": ["a", 2]})",
             R"({"const": "a", "enum": ["a", "b"]})",
             R"({"type": "array", "uniqueItems": true, "minItems": 2, "maxItems": 5, "items": {"enum": ["a", "b"]}})",
             R"({"type": "string", "pattern": "^[a-z]{4}", "maxLength": 4})",
             R"({"type": "string", "pattern": "^\\w+$", "minLength": 40})",
             R"({"type": "string", "pattern": "é{3}", "maxLength": 3})",  // 6 bytes, 3 characters
         }) {
        CHECK_MESSAGE(conflict_of(ok) == "", ok);
    }
}

TEST_CASE("enum and const together keep the values both allow") {
    auto s = json_schema::parse(R"({"enum": ["a", "b"], "const": "b"})", "final answer", "field");
    REQUIRE(s.ok());
    CHECK(s->validate(R"("b")").ok());
    CHECK_FALSE(s->validate(R"("a")").ok());
    s = json_schema::parse(R"({"const": "b", "enum": ["a", "b"]})", "final answer", "field");
    REQUIRE(s.ok());
    CHECK(s->validate(R"("b")").ok());
    CHECK_FALSE(s->validate(R"("a")").ok());  // the enum given after the const does not widen it
}
