#include "tachyon/result.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace tachyon::sdk;

namespace {

result<int> parse_port(const std::string& text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
        return error{errc::invalid_argument, "port '" + text + "': expected digits"};
    }
    return std::stoi(text);
}

}  // namespace

TEST_CASE("a result holds a value or an error that names the input") {
    auto ok = parse_port("8080");
    REQUIRE(ok.ok());
    CHECK(static_cast<bool>(ok));
    CHECK(*ok == 8080);
    CHECK(ok.value() == 8080);

    auto bad = parse_port("http");
    CHECK_FALSE(bad.ok());
    CHECK(bad.error().code == errc::invalid_argument);
    CHECK(bad.error().message == "port 'http': expected digits");
    CHECK(to_string(bad.error().code) == "invalid_argument");
    CHECK(to_string(errc::resource_exhausted) == "resource_exhausted");
}

TEST_CASE("value() on an error throws bad_result_access carrying the error") {
    auto bad = parse_port("");
    CHECK_THROWS_WITH_AS((void)bad.value(), "port '': expected digits", bad_result_access);
    CHECK_THROWS_AS((void)*bad, bad_result_access);
    result<void> failed = error{errc::not_found, "no such run"};
    CHECK_FALSE(failed.ok());
    CHECK_THROWS_WITH_AS(failed.value(), "no such run", bad_result_access);
    result<void> fine;
    CHECK(fine.ok());
    CHECK_NOTHROW(fine.value());
    CHECK(fine.error().message.empty());
}

TEST_CASE("a result is made from anything its value type is made from, and moves out move-only values") {
    result<std::string> from_literal = "text";
    CHECK(*from_literal == "text");
    result<std::unique_ptr<int>> owner = std::make_unique<int>(7);
    std::unique_ptr<int> taken = std::move(owner).value();
    CHECK(*taken == 7);
}
