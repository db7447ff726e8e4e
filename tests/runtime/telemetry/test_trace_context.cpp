#include "runtime/telemetry/trace_context.h"

#include <doctest/doctest.h>

using namespace tachyon::telemetry;

TEST_CASE("a traceparent is read and written back unchanged") {
    const std::string h = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto ctx = parse_traceparent(h);
    REQUIRE(ctx.ok());
    CHECK(ctx->valid());
    CHECK(ctx->sampled);
    CHECK(to_hex(ctx->trace) == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(to_hex(ctx->span) == "00f067aa0ba902b7");
    CHECK(format_traceparent(*ctx) == h);
    auto unsampled = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    REQUIRE(unsampled.ok());
    CHECK_FALSE(unsampled->sampled);
    CHECK(format_traceparent(*unsampled).substr(53) == "00");
}

TEST_CASE("a later version's traceparent is read by its first four fields") {
    auto ctx = parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds");
    REQUIRE(ctx.ok());
    CHECK(to_hex(ctx->span) == "00f067aa0ba902b7");
}

TEST_CASE("a malformed traceparent is an error that names the header and what was expected") {
    const char* bad[] = {
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",        // no flags
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // upper case
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // zero parent id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version ff
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xx",  // version 00 with a fifth field
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",     // separators
    };
    for (const char* h : bad) {
        CAPTURE(h);
        auto ctx = parse_traceparent(h);
        REQUIRE_FALSE(ctx.ok());
        CHECK(ctx.err().message.find("traceparent") != std::string::npos);
        CHECK(ctx.err().message.find("expected 00-") != std::string::npos);
    }
}

TEST_CASE("new ids are random and never zero") {
    const auto a = new_trace_id(), b = new_trace_id();
    CHECK(a != b);
    CHECK(to_hex(a).size() == 32);
    CHECK(to_hex(new_span_id()).size() == 16);
    span_context c{a, new_span_id(), true};
    CHECK(c.valid());
    CHECK_FALSE(span_context{}.valid());
}
