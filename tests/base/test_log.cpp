#include "base/log.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace tachyon;

namespace {
std::vector<std::string>& captured() {
    static std::vector<std::string> lines;
    return lines;
}
void capture(std::string_view line) { captured().emplace_back(line); }

struct capture_scope {
    log_level saved = current_log_level();
    capture_scope() {
        captured().clear();
        set_log_sink(&capture);
    }
    ~capture_scope() {
        set_log_sink(nullptr);
        set_log_level(saved);
    }
};
}  // namespace

TEST_CASE("messages below the level are dropped, the rest written as one line each") {
    capture_scope scope;
    set_log_level(log_level::info);
    TACHYON_LOG(debug, "hidden " << 1);
    TACHYON_LOG(info, "loaded " << 42 << " tensors");
    TACHYON_LOG(error, "broken");
    REQUIRE(captured().size() == 2);
    CHECK(captured()[0].find("info") != std::string::npos);
    CHECK(captured()[0].find("loaded 42 tensors\n") != std::string::npos);
    CHECK(captured()[1].find("error") != std::string::npos);
    CHECK(captured()[1].back() == '\n');
}

TEST_CASE("the stream expression is not evaluated when the level is off") {
    capture_scope scope;
    set_log_level(log_level::off);
    int evaluated = 0;
    auto count = [&] { return ++evaluated; };
    TACHYON_LOG(error, "x" << count());
    CHECK(evaluated == 0);
    CHECK(captured().empty());
}

TEST_CASE("level names parse both ways") {
    for (auto level : {log_level::trace, log_level::debug, log_level::info, log_level::warn, log_level::error, log_level::off}) {
        auto parsed = parse_log_level(to_string(level));
        REQUIRE(parsed.has_value());
        CHECK(*parsed == level);
    }
    CHECK(parse_log_level("warning") == log_level::warn);
    CHECK_FALSE(parse_log_level("loud").has_value());
}
