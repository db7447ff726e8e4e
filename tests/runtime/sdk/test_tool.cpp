#include "tachyon/tool.h"

#include <doctest/doctest.h>

#include "runtime/sdk/bridge.h"

using namespace tachyon::sdk;

namespace {

const char* k_city_schema =
    R"({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false})";

// A tool written as a class.
class counter_tool : public tool {
public:
    std::string name() const override { return "count_letters"; }
    std::string description() const override { return "Counts the letters of a word."; }
    std::string parameters_schema() const override { return R"({"type":"object","properties":{"word":{"type":"string"}}})"; }
    bool read_only() const override { return false; }
    result<std::string> invoke(std::string_view args, const tool_call_context&) override {
        auto a = tool_arguments::parse(args);
        if (!a) return a.error();
        auto word = a->string("word");
        if (!word) return error{errc::invalid_argument, "count_letters: 'word' is required"};
        return std::to_string(word->size());
    }
};

}  // namespace

TEST_CASE("a tool from a lambda carries its name, description, schema and flag, and returns its text") {
    auto t = make_tool({"weather", "Current weather of a city.", k_city_schema},
                       [](std::string_view args) -> result<std::string> {
                           auto a = tool_arguments::parse(args).value();
                           return "sunny in " + *a.string("city");
                       });
    CHECK(t->name() == "weather");
    CHECK(t->description() == "Current weather of a city.");
    CHECK(t->parameters_schema() == k_city_schema);
    CHECK(t->read_only());
    auto r = t->invoke(R"({"city": "Oslo"})", tool_call_context());
    REQUIRE(r.ok());
    CHECK(*r == "sunny in Oslo");
}

TEST_CASE("a lambda tool may take the call context and see cancellation") {
    std::atomic<bool> cancel{true};
    auto t = make_tool({"slow", "Waits.", R"({"type":"object"})", false},
                       [](std::string_view, const tool_call_context& ctx) -> result<std::string> {
                           if (ctx.cancelled()) return error{errc::cancelled, "slow: cancelled"};
                           return std::string("done");
                       });
    CHECK_FALSE(t->read_only());
    CHECK(t->invoke("{}", tool_call_context()).value() == "done");
    auto r = t->invoke("{}", tool_call_context(&cancel));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::cancelled);
}

TEST_CASE("a tool derived from sdk::tool works like a lambda tool") {
    counter_tool t;
    CHECK(t.invoke(R"({"word": "tachyon"})", tool_call_context()).value() == "7");
    CHECK(t.invoke("{}", tool_call_context()).error().message == "count_letters: 'word' is required");
}

TEST_CASE("tool_arguments reads each JSON type by key") {
    auto a = tool_arguments::parse(R"({"s": "x\"y", "i": -3, "big": 18446744073709551615, "f": 2.5, "b": true, "arr": [1, 2], "n": null})");
    REQUIRE(a.ok());
    CHECK(*a->string("s") == "x\"y");
    CHECK(*a->integer("i") == -3);
    CHECK(*a->number("i") == -3.0);
    CHECK_FALSE(a->integer("big"));
    CHECK(a->number("big").has_value());
    CHECK(*a->number("f") == 2.5);
    CHECK(*a->boolean("b"));
    CHECK(*a->json("arr") == "[1,2]");
    CHECK(*a->json("s") == R"("x\"y")");
    CHECK(a->has("n"));
    CHECK_FALSE(a->string("n"));
    CHECK_FALSE(a->has("missing"));
    CHECK_FALSE(a->string("i"));  // another type
}

TEST_CASE("tool_arguments errors name what is wrong, and value() throws them") {
    auto bad = tool_arguments::parse("{oops");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().code == errc::parse_error);
    CHECK(bad.error().message.find("tool arguments: not valid JSON") == 0);
    auto not_object = tool_arguments::parse("[1]");
    CHECK(not_object.error().message == "tool arguments: expected a JSON object");
    CHECK_THROWS_AS((void)not_object.value(), bad_result_access);
    try {
        (void)not_object.value();
    } catch (const bad_result_access& e) {
        CHECK(std::string(e.what()) == "tool arguments: expected a JSON object");
        CHECK(e.error().code == errc::invalid_argument);
    }
}

TEST_CASE("the runtime's view of a tool turns exceptions and errors into messages for the model") {
    auto thrower = make_tool({"boom", "Throws.", R"({"type":"object"})"},
                             [](std::string_view) -> result<std::string> { throw std::runtime_error("disk on fire"); });
    auto adapted = adapt_tool(thrower);
    CHECK(adapted->name() == "boom");
    CHECK(adapted->flags().read_only);
    auto r = adapted->invoke("{}", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message == "boom: disk on fire");

    auto failing = adapt_tool(make_tool({"nope", "Fails.", R"({"type":"object"})"}, [](std::string_view) -> result<std::string> {
        return error{errc::not_found, "no order 42"};
    }));
    auto f = failing->invoke("{}", {});
    REQUIRE_FALSE(f.ok());
    CHECK(f.err().code == tachyon::errc::not_found);
    CHECK(f.err().message == "no order 42");
}

TEST_CASE("json_quote escapes for JSON") { CHECK(json_quote("a\"b\n") == R"("a\"b\n")"); }
