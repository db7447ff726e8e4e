#include "runtime/cli/cli.h"

#include <doctest/doctest.h>

#include "tests/runtime/cli/cli_capture.h"

#include <iostream>
#include <sstream>

using namespace tachyon;
using namespace tachyon::cli;

namespace {

std::vector<command_spec> sample_commands(int* ran = nullptr) {
    command_spec gen;
    gen.name = "generate";
    gen.summary = "generate text";
    gen.options = {
        {"model", 'm', option_kind::value, "PATH", "", "model file", true},
        {"n-predict", 'n', option_kind::value, "N", "128", "tokens to generate"},
        {"temp", 0, option_kind::value, "T", "0.8", "temperature"},
        {"ids", 0, option_kind::flag, "", "", "print ids"},
        {"input", 0, option_kind::multi, "K=V", "", "inputs"},
    };
    gen.run = [ran](const parsed_args&) {
        if (ran) ++*ran;
        return 0;
    };
    command_spec bench;
    bench.name = "bench decode";
    bench.summary = "decode benchmark";
    bench.positionals = {{"EXTRA", "optional word", false}};
    bench.run = [](const parsed_args&) { return 7; };
    command_spec run;
    run.name = "run";
    run.summary = "run an agent";
    run.positionals = {{"AGENT.json", "agent file"}};
    run.run = [](const parsed_args&) { return 0; };
    return {gen, bench, run};
}

std::vector<std::string> words(std::initializer_list<const char*> w) { return {w.begin(), w.end()}; }

using tachyon::testing::captured_streams;

}  // namespace

TEST_CASE("options: long, short, inline values, defaults, flags, repeats") {
    auto cmds = sample_commands();
    auto r = parse(cmds, words({"generate", "-m", "a.gguf", "--temp=0", "--ids", "--input", "a=1", "--input", "b=2"}));
    REQUIRE(r.ok());
    CHECK(r->command().name == "generate");
    CHECK(*r->get("model") == "a.gguf");
    CHECK(*r->get_double("temp") == 0.0);
    CHECK(*r->get_int("n-predict") == 128);  // the declared default
    CHECK(r->flag("ids"));
    CHECK(r->get_all("input") == std::vector<std::string>{"a=1", "b=2"});
}

TEST_CASE("nested command names and positionals") {
    auto cmds = sample_commands();
    auto r = parse(cmds, words({"bench", "decode", "x"}));
    REQUIRE(r.ok());
    CHECK(r->command().name == "bench decode");
    CHECK(*r->positional(0) == "x");

    auto neg = parse(cmds, words({"generate", "-m", "m", "-n", "-1"}));
    REQUIRE(neg.ok());
    CHECK(*neg->get_int("n-predict") == -1);  // a negative number is a value, not an option
}

TEST_CASE("a last positional named NAME... takes any number of words, others take one") {
    command_spec serve;
    serve.name = "mcp serve";
    serve.positionals = {{"AGENT_FILE...", "agent files", false}};
    serve.run = [](const parsed_args&) { return 0; };
    command_spec one;
    one.name = "run";
    one.positionals = {{"AGENT.json", "agent file"}};
    one.run = [](const parsed_args&) { return 0; };
    const std::vector<command_spec> cmds = {serve, one};
    auto many = parse(cmds, words({"mcp", "serve", "a.json", "b.json", "c.json"}));
    REQUIRE(many.ok());
    CHECK(many->positionals() == std::vector<std::string>{"a.json", "b.json", "c.json"});
    CHECK(parse(cmds, words({"mcp", "serve"})).ok());
    auto extra = parse(cmds, words({"run", "a.json", "b.json"}));
    REQUIRE_FALSE(extra.ok());
    CHECK(extra.err().message.find("unexpected argument 'b.json'") != std::string::npos);
}

TEST_CASE("usage errors name the offending word") {
    auto cmds = sample_commands();
    auto unknown_cmd = parse(cmds, words({"genrate"}));
    REQUIRE_FALSE(unknown_cmd.ok());
    CHECK(unknown_cmd.err().message.find("unknown command 'genrate'") != std::string::npos);
    CHECK(unknown_cmd.err().message.find("generate") != std::string::npos);  // lists the known ones

    auto unknown_opt = parse(cmds, words({"generate", "-m", "a", "--tmep", "1"}));
    REQUIRE_FALSE(unknown_opt.ok());
    CHECK(unknown_opt.err().message.find("unknown option '--tmep'") != std::string::npos);

    auto missing_value = parse(cmds, words({"generate", "-m"}));
    REQUIRE_FALSE(missing_value.ok());
    CHECK(missing_value.err().message.find("needs a value") != std::string::npos);

    auto missing_required = parse(cmds, words({"generate"}));
    REQUIRE_FALSE(missing_required.ok());
    CHECK(missing_required.err().message.find("--model") != std::string::npos);

    auto missing_positional = parse(cmds, words({"run"}));
    REQUIRE_FALSE(missing_positional.ok());
    CHECK(missing_positional.err().message.find("AGENT.json") != std::string::npos);

    auto extra = parse(cmds, words({"run", "a.json", "b.json"}));
    REQUIRE_FALSE(extra.ok());
    CHECK(extra.err().message.find("unexpected argument 'b.json'") != std::string::npos);

    auto flag_value = parse(cmds, words({"generate", "-m", "a", "--ids=1"}));
    REQUIRE_FALSE(flag_value.ok());
    CHECK(flag_value.err().message.find("takes no value") != std::string::npos);
}

TEST_CASE("typed getters reject malformed numbers with the option name") {
    auto cmds = sample_commands();
    auto r = parse(cmds, words({"generate", "-m", "a", "-n", "12x", "--temp", "hot"}));
    REQUIRE(r.ok());
    auto n = r->get_int("n-predict");
    REQUIRE_FALSE(n.ok());
    CHECK(n.err().message == "option --n-predict: expected an integer, got '12x'");
    auto t = r->get_double("temp");
    REQUIRE_FALSE(t.ok());
    CHECK(t.err().message == "option --temp: expected a number, got 'hot'");
}

TEST_CASE("main_entry: exit codes 0 for help/version, 2 for usage errors, the command's own code otherwise") {
    int ran = 0;
    auto cmds = sample_commands(&ran);
    {
        captured_streams io;
        CHECK(main_entry(cmds, words({"--help"})) == 0);
        CHECK(io.out.str().find("generate") != std::string::npos);
        CHECK(io.out.str().find("bench decode") != std::string::npos);
    }
    {
        captured_streams io;
        CHECK(main_entry(cmds, words({"--version"})) == 0);
        CHECK(io.out.str().find(TACHYON_VERSION) != std::string::npos);
    }
    {
        captured_streams io;
        CHECK(main_entry(cmds, words({"generate", "--help"})) == 0);
        CHECK(io.out.str().find("--n-predict N") != std::string::npos);
        CHECK(io.out.str().find("(default: 128)") != std::string::npos);
        CHECK(ran == 0);
    }
    {
        captured_streams io;
        CHECK(main_entry(cmds, words({"frobnicate"})) == 2);
        CHECK(io.err.str().find("unknown command 'frobnicate'") != std::string::npos);
    }
    {
        captured_streams io;
        CHECK(main_entry(cmds, words({"generate", "-m", "x", "--bogus"})) == 2);
        CHECK(io.err.str().find("'--bogus'") != std::string::npos);
    }
    {
        captured_streams io;
        CHECK(main_entry(cmds, words({"generate", "-m", "x"})) == 0);
        CHECK(ran == 1);
        CHECK(main_entry(cmds, words({"bench", "decode"})) == 7);
    }
}

TEST_CASE("an exception escaping a command becomes exit code 1 with a message") {
    command_spec c;
    c.name = "boom";
    c.summary = "throws";
    c.run = [](const parsed_args&) -> int { throw std::runtime_error("disk on fire"); };
    std::vector<command_spec> cmds{c};
    captured_streams io;
    CHECK(main_entry(cmds, words({"boom"})) == 1);
    CHECK(io.err.str().find("disk on fire") != std::string::npos);
}
