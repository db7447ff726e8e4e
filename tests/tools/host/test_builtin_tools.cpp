#include "tools/host/builtin_tools.h"

#include <doctest/doctest.h>

using namespace tachyon;
using namespace tachyon::tools;

TEST_CASE("add_builtin_tools: registers the configured tools in order") {
    registry tools;
    builtin_settings s;
    s.read_file = read_file_settings{{TACHYON_BINARY_DIR}};
    s.shell = shell_settings{};
    s.shell->allowed_programs = {"echo"};
    s.http_get = http_get_settings{};
    REQUIRE(add_builtin_tools(tools, s).ok());
    REQUIRE(tools.all().size() == 3);
    CHECK(tools.all()[0]->name() == "read_file");
    CHECK(tools.all()[1]->name() == "shell");
    CHECK(tools.all()[2]->name() == "http_get");
    CHECK(tools.find("read_file")->flags().read_only);
    CHECK_FALSE(tools.find("shell")->flags().read_only);
    for (const auto& t : tools.all()) CHECK(t->parameters_schema().find("\"additionalProperties\":false") != std::string_view::npos);

    // a second registration names the duplicate and adds nothing
    builtin_settings only_http;
    only_http.http_get = http_get_settings{};
    auto again = add_builtin_tools(tools, only_http);
    REQUIRE_FALSE(again.ok());
    CHECK(again.err().message.find("http_get") != std::string::npos);
    CHECK(tools.all().size() == 3);
}

TEST_CASE("add_builtin_tools: bad settings register nothing") {
    registry tools;
    builtin_settings s;
    s.http_get = http_get_settings{};
    s.read_file = read_file_settings{{"/no/such/root"}};
    auto r = add_builtin_tools(tools, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message.find("/no/such/root") != std::string::npos);
    CHECK(tools.all().empty());
    CHECK(add_builtin_tools(tools, {}).ok());
    CHECK(tools.all().empty());
}
