#include "tools/host/command_policy.h"

#include <doctest/doctest.h>

#include <fstream>

using namespace tachyon;
using namespace tachyon::tools;
namespace fs = std::filesystem;

namespace {

// The message when refused, "" when allowed.
std::string refusal(std::string_view program, std::vector<std::string> args) {
    auto r = check_exec_options(program, args);
    return r.ok() ? std::string() : r.err().message;
}

}  // namespace

TEST_CASE("command policy: options that run another program are refused, naming the argument") {
    struct refused_case {
        const char* program;
        std::vector<std::string> args;
        const char* named;  // the argument the message names
    };
    const std::vector<refused_case> cases = {
        {"find", {".", "-exec", "id", ";"}, "-exec"},
        {"find", {".", "-execdir", "id", "{}", "+"}, "-execdir"},
        {"find", {".", "-ok", "id", ";"}, "-ok"},
        {"find", {".", "-delete"}, "-delete"},
        {"find", {".", "-fprint", "out"}, "-fprint"},
        {"sed", {"-n", "1e id"}, "1e id"},
        {"sed", {"-e", "p", "-e", "s/x/y/e"}, "s/x/y/e"},
        {"sed", {"--expression=w out", "f"}, "--expression=w out"},
        {"sed", {"-n", "/x/W out"}, "/x/W out"},
        {"sed", {"s/a/b/w out", "f"}, "s/a/b/w out"},
        {"sed", {"-i", "s/a/b/", "f"}, "-i"},
        {"sed", {"-ni", "p", "f"}, "-ni"},
        {"sed", {"--in-place=.bak", "p", "f"}, "--in-place=.bak"},
        {"sed", {"--in", "p", "f"}, "--in"},
        {"sed", {"-f", "script.sed", "f"}, "-f"},
        {"sed", {"-n", "1{e id\n}"}, "1{e id\n}"},
        {"gawk", {"BEGIN{system(\"id\")}"}, "BEGIN{system(\"id\")}"},
        {"awk", {"BEGIN { system (\"id\") }"}, "BEGIN { system (\"id\") }"},
        {"awk", {"{print | \"sh\"}"}, "{print | \"sh\"}"},
        {"awk", {"BEGIN{\"id\" | getline x; print x}"}, "BEGIN{\"id\" | getline x; print x}"},
        {"awk", {"{print $1 > \"out\"}"}, "{print $1 > \"out\"}"},
        {"awk", {"{printf \"%s\", $1 >> \"out\"}"}, "{printf \"%s\", $1 >> \"out\"}"},
        {"awk", {"-F:", "-f", "prog.awk"}, "-f"},
        {"gawk", {"@load \"filefuncs\"; BEGIN{}"}, "@load \"filefuncs\"; BEGIN{}"},
        {"mawk", {"-v", "x=1", "BEGIN{system(\"id\")}"}, "BEGIN{system(\"id\")}"},
        {"xargs", {"id"}, "xargs"},
        {"xargs", {}, "xargs"},
        {"tar", {"-cf", "a.tar", "--checkpoint=1", "--checkpoint-action=exec=id", "x"}, "--checkpoint-action=exec=id"},
        {"tar", {"-xf", "a.tar", "--to-command=id"}, "--to-command=id"},
        {"tar", {"-xf", "a.tar", "--to-com=id"}, "--to-com=id"},
        {"tar", {"-I", "id", "-xf", "a.tar"}, "-I"},
        {"tar", {"-xIid", "-f", "a.tar"}, "-xIid"},
        {"tar", {"--use-compress-program=id", "-xf", "a.tar"}, "--use-compress-program=id"},
        {"tar", {"--rsh-command=/bin/sh", "-xf", "h:a.tar"}, "--rsh-command=/bin/sh"},
        {"tar", {"-F", "id", "-xf", "a.tar"}, "-F"},
        {"tar", {"xIf", "id", "a.tar"}, "xIf"},
        {"env", {"id"}, "id"},
        {"env", {"-i", "A=1", "id"}, "id"},
        {"env", {"-S", "id"}, "-S"},
        {"nice", {"id"}, "nice"},
        {"timeout", {"5", "id"}, "timeout"},
        {"nohup", {"id"}, "nohup"},
        {"sh", {"-c", "id"}, "-c"},
        {"bash", {"-ec", "id"}, "-ec"},
        {"dash", {"-x", "-c", "id"}, "-c"},
        {"python3.12", {"-c", "import os"}, "-c"},
        {"perl", {"-ne", "print"}, "-ne"},
        {"node", {"--eval=1"}, "--eval=1"},
    };
    for (const auto& c : cases) {
        const std::string program = c.program, named_arg = c.named;
        CAPTURE(program);
        CAPTURE(named_arg);
        const std::string message = refusal(c.program, c.args);
        const bool named = message.find(std::string("'") + c.named + "'") != std::string::npos ||
                           message.find(std::string(c.named) + " is refused") != std::string::npos;
        CHECK_MESSAGE(named, message);
    }
}

TEST_CASE("command policy: read-only uses of the same programs pass") {
    const std::vector<std::pair<const char*, std::vector<std::string>>> cases = {
        {"find", {".", "-name", "*.log", "-type", "f"}},
        {"find", {".", "-newer", "a", "-print0"}},
        {"sed", {"-n", "1,5p", "file"}},
        {"sed", {"-n", "-e", "/error/p", "-e", "$=", "file"}},
        {"sed", {"s/a\\/b/c/g;s|x|y|2", "file"}},
        {"sed", {"-E", "s/(a|b)+/x/gI", "file"}},
        {"sed", {"/start/,/end/{/x/d;p}", "file"}},
        {"sed", {"1i\\\nheader", "file"}},
        {"sed", {"-n", "--expression=y/abc/xyz/", "file"}},
        {"awk", {"{print $1}", "file"}},
        {"awk", {"-F:", "$3 > 5 {print $1, $3}", "file"}},
        {"awk", {"/a|b/ {n++} END {print n}", "file"}},
        {"awk", {"{print ($1 > 2)}", "file"}},
        {"awk", {"$1 == \"x|y\" || $2 ~ /[/]/ {print}", "file"}},
        {"awk", {"-v", "x=1", "{s += $2 / 2} END {print s}", "file"}},
        {"tar", {"-tf", "x.tar"}},
        {"tar", {"tvf", "x.tar"}},
        {"tar", {"-tzf", "x.tar.gz", "--checkpoint=10"}},
        {"env", {}},
        {"env", {"-0"}},
        {"sh", {"script.sh", "-c"}},
        {"python3", {"script.py", "-c"}},
        {"cat", {"-n", "file"}},
        {"grep", {"-c", "-e", "system(", "file"}},
    };
    for (const auto& [program, args] : cases) {
        const std::string name = program, first = args.empty() ? std::string() : args.front();
        CAPTURE(name);
        CAPTURE(first);
        CHECK(refusal(program, args).empty());
    }
}

TEST_CASE("command policy: paths outside the roots are refused, naming the argument") {
    const fs::path base = fs::temp_directory_path() / "tachyon-command-policy-test";
    fs::remove_all(base);
    fs::create_directories(base / "root" / "sub");
    fs::create_directories(base / "outside");
    std::ofstream(base / "outside" / "secret.txt") << "x";
    std::ofstream(base / "root" / "a.log") << "x";
    fs::create_symlink(base / "outside", base / "root" / "link");
    const fs::path root = fs::canonical(base / "root");
    const std::vector<fs::path> roots = {root};

    auto message = [&](std::vector<std::string> args) {
        auto r = check_path_arguments(args, root, roots);
        return r.ok() ? std::string() : r.err().message;
    };
    for (const std::string& bad : std::vector<std::string>{"/etc/hostname", "/etc", "/", "../outside/secret.txt", "sub/../../outside",
                                  "link/secret.txt", "link", "..", "/tmp/new-file-here", "--file=/etc/passwd"}) {
        CAPTURE(bad);
        const bool named = message({"-n", bad}).find("argument '" + bad + "' names a path outside the allowed directories") !=
                           std::string::npos;
        CHECK(named);
    }
    for (const std::string& good : std::vector<std::string>{"a.log", "sub", "./sub/../a.log", (root / "a.log").string(), root.string(),
                                   "/dev/null", "/api/v1/checkout", "/error/p", "s/a/b/", "no-such-file", "-n", ""}) {
        CAPTURE(good);
        CHECK(message({good}).empty());
    }
    fs::remove_all(base);
}
