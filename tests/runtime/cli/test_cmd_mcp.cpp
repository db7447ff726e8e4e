// `tachyon mcp serve` as a user starts it: the refusals that come before
// any message is read (the stdio session itself: tests/runtime/mcp/, and
// the MCP SDK's client in tests/clients/mcp/).
#include "runtime/cli/commands.h"

#include <doctest/doctest.h>

#include "tests/runtime/cli/cli_capture.h"

using tachyon::testing::tachyon_cli;

TEST_CASE("tachyon mcp serve: nothing to serve, a bad root, an unknown tool or setting are usage errors naming them") {
    auto nothing = tachyon_cli({"mcp", "serve"});
    CHECK(nothing.code == 2);
    CHECK(nothing.err.find("nothing to serve") != std::string::npos);

    auto root = tachyon_cli({"mcp", "serve", "--tools", "read_file", "--root", "/no/such/dir"});
    CHECK(root.code == 2);
    CHECK(root.err.find("--root /no/such/dir: not an existing directory") != std::string::npos);

    auto unknown = tachyon_cli({"mcp", "serve", "--tools", "read_file,nope"});
    CHECK(unknown.code == 2);
    CHECK(unknown.err.find("unknown tool 'nope'") != std::string::npos);

    auto stray = tachyon_cli({"mcp", "serve", "--tools", "read_file", "--settings", "shell={}"});
    CHECK(stray.code == 2);
    CHECK(stray.err.find("'shell' is not among --tools") != std::string::npos);

    auto agents = tachyon_cli({"mcp", "serve", "--agents", "/no/such/dir"});
    CHECK(agents.code == 1);
    CHECK(agents.err.find("--agents /no/such/dir: not a directory") != std::string::npos);

    auto file = tachyon_cli({"mcp", "serve", "/no/such/agent.json"});
    CHECK(file.code == 1);
    CHECK(file.err.find("/no/such/agent.json") != std::string::npos);
}
