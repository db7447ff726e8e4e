#include "runtime/telemetry/span.h"

#include <doctest/doctest.h>

#include "tests/runtime/telemetry/otlp_receiver.h"

using namespace tachyon::telemetry;

TEST_CASE("spans encode as OTLP/JSON: hex ids, nanoseconds and 64-bit integers as strings, enums as numbers") {
    resource_info res;
    res.attributes.push_back({"service.name", std::string("tachyon-test")});
    span root;
    root.context = {new_trace_id(), new_span_id(), true};
    root.name = "invoke_agent incident-analyst";
    root.start_unix_nano = 1764640000123456789ULL;
    root.end_unix_nano = 1764640001123456789ULL;
    root.set("gen_ai.operation.name", std::string("invoke_agent"));
    root.set("tachyon.run.verified", true);
    root.set("gen_ai.usage.input_tokens", int64_t{9007199254740993});  // beyond a double's exact integers
    root.set("gen_ai.request.temperature", 0.25);
    root.set("gen_ai.response.finish_reasons", std::vector<std::string>{"stop", "tool_calls"});
    root.set("text", std::string("a \"quoted\"\nline"));
    span child;
    child.context = {root.context.trace, new_span_id(), true};
    child.parent = root.context.span;
    child.name = "execute_tool search_logs";
    child.kind = span_kind::client;
    child.status = status_code::error;
    child.status_message = "timed out";

    otlp_test::received_request r;
    r.body = otlp_json(res, {root, child});
    auto exports = otlp_test::parse_exports({r});
    REQUIRE(exports.size() == 1);
    CHECK(exports[0].resource.at("service.name").text == "tachyon-test");
    CHECK(exports[0].scope_name == "tachyon");
    REQUIRE(exports[0].spans.size() == 2);
    const auto& a = exports[0].spans[0];
    CHECK(a.trace_id == to_hex(root.context.trace));
    CHECK(a.span_id == to_hex(root.context.span));
    CHECK(a.parent_span_id.empty());  // a root has no parentSpanId field
    CHECK(a.field_kinds.count("parentSpanId") == 0);
    CHECK(a.field_kinds.at("traceId") == "string");
    CHECK(a.field_kinds.at("startTimeUnixNano") == "string");
    CHECK(a.field_kinds.at("kind") == "number");
    CHECK(a.start == "1764640000123456789");
    CHECK(a.end == "1764640001123456789");
    CHECK(a.kind == 1);
    CHECK(a.attributes.at("gen_ai.operation.name").kind == "stringValue");
    CHECK(a.attributes.at("tachyon.run.verified").kind == "boolValue");
    CHECK(a.attributes.at("gen_ai.usage.input_tokens").kind == "intValue");
    CHECK(a.attributes.at("gen_ai.usage.input_tokens").text == "9007199254740993");
    CHECK(a.attributes.at("gen_ai.request.temperature").kind == "doubleValue");
    CHECK(a.attributes.at("gen_ai.request.temperature").text == "0.25");
    CHECK(a.attributes.at("gen_ai.response.finish_reasons").kind == "arrayValue");
    CHECK(a.attributes.at("gen_ai.response.finish_reasons").text == "stop,tool_calls");
    CHECK(a.attributes.at("text").text == "a \"quoted\"\nline");
    CHECK(a.status_code == 0);
    const auto& b = exports[0].spans[1];
    CHECK(b.parent_span_id == to_hex(root.context.span));
    CHECK(b.kind == 3);
    CHECK(b.status_code == 2);
    CHECK(b.status_message == "timed out");
}
