#include "base/result.h"

#include <doctest/doctest.h>

#include <memory>

using namespace tachyon;

namespace {
result<int> parse_positive(int v) {
    if (v <= 0) return make_error(errc::invalid_argument, "value " + std::to_string(v) + ": expected > 0");
    return v;
}

result<int> doubled(int v) {
    auto r = parse_positive(v);
    if (!r) return r.err();
    return *r * 2;
}

status check_both(int a, int b) {
    TACHYON_TRY(parse_positive(a));
    TACHYON_TRY(parse_positive(b));
    return {};
}
}  // namespace

TEST_CASE("result carries a value or an error with its message") {
    auto good = parse_positive(3);
    REQUIRE(good.ok());
    CHECK(*good == 3);

    auto bad = parse_positive(-1);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().code == errc::invalid_argument);
    CHECK(bad.err().message == "value -1: expected > 0");
    CHECK(bad.err().describe() == "invalid_argument: value -1: expected > 0");
}

TEST_CASE("errors propagate through callers") {
    CHECK(*doubled(4) == 8);
    CHECK(doubled(0).err().message == "value 0: expected > 0");
}

TEST_CASE("TACHYON_TRY returns the first error") {
    CHECK(check_both(1, 2).ok());
    auto st = check_both(1, -5);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message == "value -5: expected > 0");
}

TEST_CASE("result holds move-only values") {
    result<std::unique_ptr<int>> r(std::make_unique<int>(7));
    REQUIRE(r.ok());
    std::unique_ptr<int> p = std::move(r).value();
    CHECK(*p == 7);
}

TEST_CASE("every error code has a name") {
    for (auto code : {errc::invalid_argument, errc::not_found, errc::io_error, errc::parse_error, errc::unsupported,
                      errc::out_of_range, errc::timeout, errc::cancelled, errc::resource_exhausted, errc::internal}) {
        CHECK(to_string(code) != "unknown");
    }
}
