// The benchmark's network latency decorator: its draws (distribution, seed,
// order), the wait before the wrapped tool's work, and a cut-off call that
// stops waiting.
#include "runtime/bench/tool_latency.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cmath>
#include <random>
#include <vector>

using namespace tachyon;
namespace asio = boost::asio;

namespace {

struct echo_tool final : tools::tool {
    int n_invoked = 0;
    std::string_view name() const override { return "echo"; }
    std::string_view description() const override { return "echoes its arguments"; }
    std::string_view parameters_schema() const override { return R"({"type":"object"})"; }
    tools::tool_flags flags() const override { return {false, true}; }
    result<std::string> invoke(std::string_view arguments_json, const tools::call_context&) override {
        ++n_invoked;
        return std::string(arguments_json);
    }
};

tool_latency lognormal(double median_ms, double p95_ms, uint64_t seed) {
    tool_latency l;
    l.median_ms = median_ms;
    l.p95_ms = p95_ms;
    l.seed = seed;
    return l;
}

}  // namespace

TEST_CASE("tool latency: the spec is none or lognormal:MEDIAN:P95, anything else a clear error") {
    auto none = parse_tool_latency("none");
    REQUIRE(none);
    CHECK(none->median_ms == 0);
    auto l = parse_tool_latency("lognormal:100:400");
    REQUIRE(l);
    CHECK(l->median_ms == 100);
    CHECK(l->p95_ms == 400);
    for (const char* bad : {"lognormal:400:100", "lognormal:100", "lognormal:100:400ms", "normal:1:2", "lognormal:0:0"}) {
        auto r = parse_tool_latency(bad);
        REQUIRE_FALSE(r);
        CHECK(r.err().message.find(std::string("'") + bad + "'") != std::string::npos);
        CHECK(r.err().message.find("expected none or lognormal:MEDIAN_MS:P95_MS") != std::string::npos);
    }
}

TEST_CASE("tool latency: draws are lognormal with the configured median and p95, one standard normal per call from the seed") {
    latency_source source(lognormal(100, 400, 42));
    std::mt19937_64 rng(42);
    const double sigma = std::log(400.0 / 100.0) / 1.6448536;
    std::vector<double> draws;
    for (int i = 0; i < 4001; ++i) {
        std::normal_distribution<double> z(0.0, 1.0);
        const double expected = 100 * std::exp(sigma * z(rng));
        const double got = source.next_ms();
        REQUIRE(got == doctest::Approx(expected).epsilon(1e-12));
        draws.push_back(got);
    }
    std::sort(draws.begin(), draws.end());
    CHECK(draws[2000] == doctest::Approx(100).epsilon(0.1));
    CHECK(draws[3800] == doctest::Approx(400).epsilon(0.15));

    latency_source same(lognormal(100, 400, 42)), other(lognormal(100, 400, 43));
    const double first = same.next_ms();
    CHECK(first == doctest::Approx(draws.empty() ? 0 : latency_source(lognormal(100, 400, 42)).next_ms()));
    CHECK(other.next_ms() != first);
    CHECK(latency_source(tool_latency{}).next_ms() == 0);
}

TEST_CASE("tool latency: the decorated tool is the tool, and no latency wraps nothing") {
    auto inner = std::make_shared<echo_tool>();
    auto t = with_latency(inner, std::make_shared<latency_source>(lognormal(1, 1, 1)));
    CHECK(t->name() == "echo");
    CHECK(t->description() == inner->description());
    CHECK(t->parameters_schema() == inner->parameters_schema());
    CHECK_FALSE(t->flags().read_only);
    auto r = t->invoke(R"({"a":1})", tools::call_context{});
    REQUIRE(r);
    CHECK(*r == R"({"a":1})");
    CHECK(inner->n_invoked == 1);

    CHECK_FALSE(latency_wrapper(tool_latency{}));
    auto wrap = latency_wrapper(lognormal(1, 1, 1));
    REQUIRE(wrap);
    CHECK(wrap(inner)->name() == "echo");
}

TEST_CASE("tool latency: a call's work starts only after its wait, on the caller's executor") {
    asio::io_context io;
    asio::cancellation_signal cut_off;
    auto t = with_latency(std::make_shared<echo_tool>(), std::make_shared<latency_source>(lognormal(1, 1, 7)));
    int n_work = 0;
    t->begin({io.get_executor(), cut_off.slot()}, [&] { ++n_work; });
    CHECK(n_work == 0);  // not at once, as an undecorated tool would
    io.run();
    CHECK(n_work == 1);
    // The caller signals the cut-off when the call finishes, after the wait:
    // nothing is left to cancel (the timer is gone).
    cut_off.emit(asio::cancellation_type::terminal);
    CHECK_FALSE(cut_off.slot().has_handler());

    // Without latency the work starts at once.
    auto plain = std::make_shared<echo_tool>();
    plain->begin({io.get_executor(), cut_off.slot()}, [&] { ++n_work; });
    CHECK(n_work == 2);
}

TEST_CASE("tool latency: a call cut off while it waits stops waiting and never starts its work") {
    asio::io_context io;
    asio::cancellation_signal cut_off;
    // An hour's wait: only the cut-off ends it.
    auto t = with_latency(std::make_shared<echo_tool>(), std::make_shared<latency_source>(lognormal(3'600'000, 3'600'000, 7)));
    bool worked = false;
    t->begin({io.get_executor(), cut_off.slot()}, [&] { worked = true; });
    io.poll();
    CHECK_FALSE(io.stopped());  // the wait is pending
    cut_off.emit(asio::cancellation_type::terminal);
    io.poll();
    CHECK(io.stopped());  // nothing left to wait for
    CHECK_FALSE(worked);
}
