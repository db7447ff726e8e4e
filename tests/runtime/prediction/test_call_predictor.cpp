#include "runtime/prediction/call_predictor.h"

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
    // After error_summary, the agent fetched the trace listed second, three times.
    const std::vector<std::pair<std::string, std::string>> runs{{"aaaa1111", "bbbb2222"}, {"cccc3333", "dddd4444"}, {"eeee5555", "ffff6666"}};
    for (const auto& [first, second] : runs) {
        p.count_turn("error_summary");
        CHECK(p.predict("error_summary", "x " + first + " " + second).empty() == true);
        p.learn("error_summary", "checkout " + first + " " + second, "get_trace", R"({"trace_id":")" + second + R"("})");
    }
    p.count_turn("error_summary");
    auto calls = p.predict("error_summary", "payments 1234abcd 5678ef00");
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "get_trace");
    CHECK(calls[0].arguments == R"({"trace_id":"5678ef00"})");
    // Keys and constants stay; a template that finds no value is skipped.
    CHECK(p.predict("error_summary", "only-one").empty());
    CHECK(p.predict("other_kind", "a b c").empty());
}

TEST_CASE("a value is found again by its shape or by a word of its line, wherever it sits") {
    call_predictor p;
    // The trace fetched is the last hex id, and the service searched is the
    // first word of the line marked "deepest"; their positions among all
    // identifiers differ from run to run.
    const std::vector<std::string> summaries{
        "window 10:00 .. 11:00\ncart: 3 errors, trace 0000aaaa1111bbbb\nweb: 2 errors, trace 2222cccc3333dddd\n",
        "window 10:00 .. 11:00\nweb: 2 errors, trace 4444eeee5555ffff\n",
        "window 10:00 .. 11:00\nauth: 1 errors\ndb: 9 errors, trace 66667777aaaabbbb\nweb: 2 errors, slow\napi: 2 errors, trace 8888999900001111\n"};
    const std::vector<std::string> traces{
        "trace 2222cccc3333dddd\nweb POST /pay error calling cart\n  cart GET /cart error <- deepest error\n",
        "trace 4444eeee5555ffff\nweb POST /pay error\n  api GET /x error calling db\n    db query error <- deepest error\n",
        "trace 8888999900001111\napi GET /x error <- deepest error\n  cache GET ok\n"};
    const std::vector<std::string> deepest{"cart", "db", "api"};
    for (size_t r = 0; r < summaries.size(); ++r) {
        const std::string trace = traces[r].substr(6, 16);
        p.count_turn("error_summary");
        p.learn("error_summary", summaries[r], "get_trace", R"({"trace_id":")" + trace + R"("})");
        p.count_turn("get_trace");
        p.learn("get_trace", traces[r], "search_logs", R"({"service":")" + deepest[r] + R"(","level":"ERROR"})");
    }
    p.count_turn("error_summary");
    auto calls = p.predict("error_summary", "window 09:00 .. 09:30\nx: 1 errors\ny: 5 errors, trace 1234123412341234\nz: 2 errors, trace abcdabcdabcd0000\n");
    REQUIRE(calls.size() == 1);  // one prediction per call shape
    CHECK(calls[0].arguments == R"({"trace_id":"abcdabcdabcd0000"})");
    p.count_turn("get_trace");
    calls = p.predict("get_trace", "trace abcdabcdabcd0000\nz GET /a error\n  y GET /b error\n    q GET /c ok\n    pg-main query error <- deepest error\n");
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "search_logs");
    CHECK(calls[0].arguments == R"({"service":"pg-main","level":"ERROR"})");
}

TEST_CASE("the templates of a kind of turn stay bounded however many runs teach it") {
    call_predictor p;
    for (int r = 0; r < 3000; ++r) {
        const std::string id = "svc" + std::to_string(r);
        p.count_turn("<start>");
        p.learn("<start>", "look at " + id + " unique" + std::to_string(r) + " now", "search_logs", R"({"service":")" + id + R"("})");
    }
    // still predicts the stable way of finding the value (the 3rd identifier)
    p.count_turn("<start>");
    auto calls = p.predict("<start>", "look at web-1 x now");
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].arguments == R"({"service":"web-1"})");
}

TEST_CASE("a template followed in less than min_share of the turns is not predicted") {
    call_predictor p({.min_support = 2, .min_share = 0.5, .max_calls = 2});
    for (int i = 0; i < 6; ++i) p.count_turn("<start>");
    p.learn("<start>", "svc", "search_logs", R"({"service":"svc","limit":3})");
    p.learn("<start>", "svc", "search_logs", R"({"service":"svc","limit":3})");
    CHECK(p.predict("<start>", "svc").empty());  // 2 of 6
    p.learn("<start>", "svc", "search_logs", R"({"service":"svc","limit":3})");
    auto calls = p.predict("<start>", "web");
    REQUIRE(calls.size() == 1);  // 3 of 6
    CHECK(calls[0].arguments == R"({"service":"web","limit":3})");
}
