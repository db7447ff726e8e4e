#include "runtime/call_predictor.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace tachyon;

TEST_CASE("identifiers_in lists distinct identifier-like words in order of first appearance") {
    auto ids = identifiers_in("trace 4bf92f3577b34da6 failed at payments-db:42; payments-db again (trace 4bf92f3577b34da6).");
    REQUIRE(ids.size() >= 4);
    CHECK(ids[0] == "trace");
    CHECK(ids[1] == "4bf92f3577b34da6");
    CHECK(ids[2] == "failed");
    CHECK(std::count(ids.begin(), ids.end(), "4bf92f3577b34da6") == 1);
    CHECK(std::find(ids.begin(), ids.end(), "payments-db:42") != ids.end());
}

TEST_CASE("a call that keeps following a kind of turn is predicted from the new turn's identifiers") {
    call_predictor p;
    // After error_summary, the agent fetched the trace listed second (identifier 1), three times.
    const std::vector<std::pair<std::string, std::string>> runs{{"aaaa1111", "bbbb2222"}, {"cccc3333", "dddd4444"}, {"eeee5555", "ffff6666"}};
    for (const auto& [first, second] : runs) {
        p.count_turn("error_summary");
        CHECK(p.predict("error_summary", {"x", first, second}).empty() == true);
        p.learn("error_summary", {"checkout", first, second}, "get_trace", R"({"trace_id":")" + second + R"("})");
    }
    p.count_turn("error_summary");
    auto calls = p.predict("error_summary", {"payments", "1234abcd", "5678ef00"});
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "get_trace");
    CHECK(calls[0].arguments == R"({"trace_id":"5678ef00"})");
    // Keys and constants stay; a template that points past the identifiers is skipped.
    CHECK(p.predict("error_summary", {"only-one"}).empty());
    CHECK(p.predict("other_kind", {"a", "b", "c"}).empty());
}

TEST_CASE("a template followed in less than min_share of the turns is not predicted") {
    call_predictor p({.min_support = 2, .min_share = 0.5, .max_calls = 2});
    for (int i = 0; i < 6; ++i) p.count_turn("<start>");
    p.learn("<start>", {"svc"}, "search_logs", R"({"service":"svc","limit":3})");
    p.learn("<start>", {"svc"}, "search_logs", R"({"service":"svc","limit":3})");
    CHECK(p.predict("<start>", {"svc"}).empty());  // 2 of 6
    p.learn("<start>", {"svc"}, "search_logs", R"({"service":"svc","limit":3})");
    auto calls = p.predict("<start>", {"web"});
    REQUIRE(calls.size() == 1);  // 3 of 6
    CHECK(calls[0].arguments == R"({"service":"web","limit":3})");
}
