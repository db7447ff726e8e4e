#include "runtime/telemetry/tracer.h"

#include <doctest/doctest.h>

#include "tests/runtime/telemetry/otlp_receiver.h"

using namespace tachyon::telemetry;
using namespace std::chrono_literals;

namespace {
otel_config config_for(const otlp_test::receiver& rx) {
    otel_config c;
    c.traces_url = rx.traces_url();
    c.service_name = "tracer-test";
    return c;
}
}  // namespace

TEST_CASE("no endpoint, no tracer") {
    auto t = tracer::create(otel_config{});
    REQUIRE(t.ok());
    CHECK(*t == nullptr);
}

TEST_CASE("a root continues a valid traceparent, and starts a new trace on a bad one") {
    otlp_test::receiver rx;
    auto t = tracer::create(config_for(rx));
    REQUIRE(t.ok());
    REQUIRE(*t != nullptr);
    const auto cont = (*t)->start_root("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    CHECK(to_hex(cont.context.trace) == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(to_hex(cont.parent) == "00f067aa0ba902b7");
    CHECK(cont.context.sampled);
    CHECK(to_hex(cont.context.span) != "00f067aa0ba902b7");
    const auto fresh = (*t)->start_root("garbage");
    CHECK(to_hex(fresh.context.trace) != "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(to_hex(fresh.parent) == "0000000000000000");
    // The default sampler (parentbased_always_on) follows an unsampled caller.
    const auto unsampled = (*t)->start_root("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    CHECK_FALSE(unsampled.context.sampled);
    const auto child = tracer::child_of(cont.context);
    CHECK(child.context.trace == cont.context.trace);
    CHECK(child.parent == cont.context.span);
}

TEST_CASE("only sampled spans are exported, with service.name on the resource") {
    otlp_test::receiver rx;
    auto t = tracer::create(config_for(rx));
    REQUIRE(t.ok());
    span kept;
    kept.context = (*t)->start_root("").context;
    kept.name = "kept";
    span skipped;
    skipped.context = (*t)->start_root("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").context;
    skipped.name = "skipped";
    (*t)->end(kept);
    (*t)->end(skipped);
    REQUIRE((*t)->flush(5s));
    auto exports = otlp_test::parse_exports(rx.requests());
    REQUIRE(exports.size() == 1);
    CHECK(exports[0].resource.at("service.name").text == "tracer-test");
    REQUIRE(exports[0].spans.size() == 1);
    CHECK(exports[0].spans[0].name == "kept");
}

TEST_CASE("steady-clock times map onto the wall clock") {
    otlp_test::receiver rx;
    auto t = tracer::create(config_for(rx));
    REQUIRE(t.ok());
    const auto now_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    const uint64_t mapped = (*t)->unix_nanos(std::chrono::steady_clock::now());
    CHECK(mapped > now_ns - 1'000'000'000ULL);
    CHECK(mapped < now_ns + 1'000'000'000ULL);
    const uint64_t later = (*t)->unix_nanos(std::chrono::steady_clock::now() + 1500ms);
    CHECK(later - mapped >= 1'500'000'000ULL);
}
