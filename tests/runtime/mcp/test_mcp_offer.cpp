#include "runtime/mcp/mcp_offer.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace tachyon;

namespace {

struct temp_dir {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("tachyon_mcp_offer_" + std::to_string(::getpid()));
    temp_dir() {
        std::filesystem::create_directories(path / "inside");
        std::ofstream(path / "inside" / "notes.txt") << "inside the root\n";
        std::ofstream(path / "outside.txt") << "outside\n";
    }
    ~temp_dir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("mcp offer: tool names from a comma list") {
    CHECK(split_tool_names("a, b,c") == std::vector<std::string>{"a", "b", "c"});
    CHECK(split_tool_names(" ,a,, ") == std::vector<std::string>{"a"});
    CHECK(split_tool_names("").empty());
}

TEST_CASE("mcp offer: --root is where read_file reads, --settings adds to it, errors name the option and the tool") {
    temp_dir d;
    const std::string root = (d.path / "inside").string();
    auto made = make_offered_tools({"read_file"}, root, {}, "--tools");
    REQUIRE_MESSAGE(made.ok(), made.err().message);
    REQUIRE(made->size() == 1);
    auto in = (*made)[0]->invoke(R"({"path":")" + root + R"(/notes.txt"})", {});
    REQUIRE_MESSAGE(in.ok(), in.err().message);
    CHECK(in->find("inside the root") != std::string::npos);
    CHECK_FALSE((*made)[0]->invoke(R"({"path":")" + (d.path / "outside.txt").string() + R"("})", {}).ok());

    auto limited = make_offered_tools({"read_file"}, root, {{"read_file", R"({"max_bytes": 6})"}}, "--tools");
    REQUIRE_MESSAGE(limited.ok(), limited.err().message);
    auto cut = (*limited)[0]->invoke(R"({"path":")" + root + R"(/notes.txt"})", {});
    REQUIRE(cut.ok());
    CHECK(cut->find("inside the root") == std::string::npos);  // max_bytes applied

    auto unknown = make_offered_tools({"nope"}, root, {}, "--mcp-tools");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.err().message.find("--mcp-tools: unknown tool 'nope'") == 0);
    auto bad_key = make_offered_tools({"read_file"}, root, {{"read_file", R"({"colour": "red"})"}}, "--tools");
    REQUIRE_FALSE(bad_key.ok());
    CHECK(bad_key.err().message.find("colour") != std::string::npos);
    auto not_json = make_offered_tools({"read_file"}, root, {{"read_file", "roots"}}, "--tools");
    REQUIRE_FALSE(not_json.ok());
    CHECK(not_json.err().message.find("--settings read_file=...") == 0);
    // A log tool without a root has no incident directory to read.
    auto no_root = make_offered_tools({"search_logs"}, "", {}, "--tools");
    REQUIRE_FALSE(no_root.ok());
    CHECK(no_root.err().message.find("root") != std::string::npos);
}

TEST_CASE("mcp offer: an agents folder gives its agent files, not its JSON Schemas, a missing one is an error") {
    auto agents = load_offered_agents(std::string(TACHYON_SOURCE_DIR) + "/agents", {});
    REQUIRE_MESSAGE(agents.ok(), agents.err().message);
    REQUIRE_FALSE(agents->empty());
    bool analyst = false;
    for (const auto& a : *agents) analyst |= a->name == "incident-analyst";
    CHECK(analyst);  // and agent.schema.json was not read as an agent
    auto missing = load_offered_agents("/no/such/dir", {});
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().message == "--agents /no/such/dir: not a directory");
    temp_dir d;
    auto empty = load_offered_agents(d.path.string(), {});
    REQUIRE_FALSE(empty.ok());
    CHECK(empty.err().message.find("no agent files") != std::string::npos);
}
