#include "runtime/telemetry/sampler.h"

#include <doctest/doctest.h>

using namespace tachyon::telemetry;

namespace {
span_context parent(bool sampled) { return span_context{new_trace_id(), new_span_id(), sampled}; }
}  // namespace

TEST_CASE("the default sampler records a new trace and follows the parent's flag") {
    auto s = sampler::parse("", "");
    REQUIRE(s.ok());
    CHECK(s->should_sample(new_trace_id(), std::nullopt));
    CHECK(s->should_sample(new_trace_id(), parent(true)));
    CHECK_FALSE(s->should_sample(new_trace_id(), parent(false)));
}

TEST_CASE("always_on and always_off ignore the parent, parentbased_ follows it") {
    auto on = sampler::parse("always_on", "");
    auto off = sampler::parse("always_off", "");
    auto pb_off = sampler::parse("parentbased_always_off", "");
    REQUIRE(on.ok());
    REQUIRE(off.ok());
    REQUIRE(pb_off.ok());
    CHECK(on->should_sample(new_trace_id(), parent(false)));
    CHECK_FALSE(off->should_sample(new_trace_id(), parent(true)));
    CHECK_FALSE(off->should_sample(new_trace_id(), std::nullopt));
    CHECK(pb_off->should_sample(new_trace_id(), parent(true)));
    CHECK_FALSE(pb_off->should_sample(new_trace_id(), std::nullopt));
}

TEST_CASE("traceidratio decides by the trace id, the same way every time") {
    auto zero = sampler::parse("traceidratio", "0");
    auto half = sampler::parse("traceidratio", "0.5");
    REQUIRE(zero.ok());
    REQUIRE(half.ok());
    trace_id low{}, high{};
    low[15] = 1;
    high.fill(0xff);
    CHECK_FALSE(zero->should_sample(low, std::nullopt));
    CHECK(half->should_sample(low, std::nullopt));
    CHECK_FALSE(half->should_sample(high, std::nullopt));
    int n = 0;
    for (int i = 0; i < 2000; ++i) n += half->should_sample(new_trace_id(), std::nullopt) ? 1 : 0;
    CHECK(n > 800);
    CHECK(n < 1200);
    auto pb = sampler::parse("parentbased_traceidratio", "0");
    REQUIRE(pb.ok());
    CHECK(pb->should_sample(high, parent(true)));
    CHECK(pb->describe() == "parentbased_traceidratio{0.000000}");
    CHECK(sampler::parse("always_off", "")->describe() == "always_off");
}

TEST_CASE("an unknown sampler or a bad ratio is an error naming the variable") {
    auto bad = sampler::parse("sometimes", "");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("OTEL_TRACES_SAMPLER 'sometimes'") != std::string::npos);
    CHECK(bad.err().message.find("parentbased_traceidratio") != std::string::npos);
    for (const char* arg : {"1.5", "-0.1", "half"}) {
        auto r = sampler::parse("traceidratio", arg);
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().message.find("OTEL_TRACES_SAMPLER_ARG") != std::string::npos);
    }
}
