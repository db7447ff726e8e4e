#include "runtime/agent/tool_catalog.h"

#include <doctest/doctest.h>

using namespace tachyon;

TEST_CASE("tool catalog: shell's sandbox setting takes landlock or none, and names a bad value") {
    CHECK(check_builtin_settings("shell", {{"allowed_programs", "echo"}, {"sandbox", "none"}}).ok());
    for (const char* mode : {"landlock", "none"}) {
        auto made = make_builtin_tools({{"shell", {{"allowed_programs", "echo"}, {"sandbox", mode}}}});
        CHECK_MESSAGE(made.ok(), (made.ok() ? std::string() : made.err().message));
    }
    auto bad = make_builtin_tools({{"shell", {{"allowed_programs", "echo"}, {"sandbox", "off"}}}});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("tool shell: setting 'sandbox'") != std::string::npos);
    CHECK(bad.err().message.find("'off'") != std::string::npos);
    CHECK(bad.err().message.find(R"("landlock" or "none")") != std::string::npos);

    // sandbox none runs without the kernel sandbox; the result says so.
    auto none = make_builtin_tools({{"shell", {{"allowed_programs", "echo"}, {"sandbox", "none"}}}});
    REQUIRE(none.ok());
    auto r = none->front()->invoke(R"js({"program":"echo","args":["hi"]})js", {});
    REQUIRE(r.ok());
    CHECK(r->find("(sandbox: none") != std::string::npos);
}
