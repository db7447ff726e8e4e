// Command-line declarations and parsing. Each subcommand is declared once
// (name, summary, options with defaults and help, positional arguments, and
// the function that runs it); help text and parsing both read that
// declaration, so they cannot drift apart.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon::cli {

// Exit codes of the commands that tell a failure from a wrong command line.
constexpr int exit_failed = 1;  // the work was refused or failed
constexpr int exit_usage = 2;   // the command line is wrong

enum class option_kind {
    flag,   // --ids            (present or not)
    value,  // --seed 42        (last one wins)
    multi,  // --input K=V ...  (repeatable)
};

struct option_spec {
    std::string name;             // long name without dashes: "seed"
    char short_name = 0;          // 's' for -s, 0 for none
    option_kind kind = option_kind::value;
    std::string value_name;       // shown in help: "N", "PATH"
    std::string default_value;    // empty: no default
    std::string help;
    bool required = false;
};

struct positional_spec {
    std::string name;  // "AGENT.json"; "AGENT.json..." (the last one only): any number of them
    std::string help;
    bool required = true;
};

class parsed_args;

// Runs a parsed command; returns the process exit code.
using command_fn = std::function<int(const parsed_args&)>;

struct command_spec {
    std::string name;     // "generate", or "bench decode" for a nested command
    std::string summary;  // one line for the overview
    std::string description;  // paragraph for `tachyon NAME --help` (optional)
    std::vector<positional_spec> positionals;
    std::vector<option_spec> options;
    command_fn run;
};

class parsed_args {
public:
    const command_spec& command() const { return *command_; }

    bool has(std::string_view name) const;  // given on the command line
    // The value of an option: the given one, else the default; nullopt when neither.
    std::optional<std::string> get(std::string_view name) const;
    std::string get_or(std::string_view name, std::string fallback) const;
    std::vector<std::string> get_all(std::string_view name) const;  // multi options
    bool flag(std::string_view name) const { return has(name); }
    result<int64_t> get_int(std::string_view name) const;     // error names the option and value
    result<double> get_double(std::string_view name) const;
    const std::vector<std::string>& positionals() const { return positionals_; }
    std::optional<std::string> positional(size_t i) const;

private:
    friend result<parsed_args> parse(std::span<const command_spec>, std::span<const std::string>);
    const command_spec* command_ = nullptr;
    std::map<std::string, std::vector<std::string>, std::less<>> given_;
    std::vector<std::string> positionals_;
};

// What the top-level parse decided.
struct invocation {
    enum class action { run, help, version } what = action::run;
    const command_spec* command = nullptr;  // for run, and for help on one command
    std::optional<parsed_args> args;
};

// Parses `args` (argv without the program name). Usage errors (unknown
// command or option, missing value, missing required argument) name the
// offending word; the caller prints them and exits with status 2.
result<invocation> parse_invocation(std::span<const command_spec> commands, std::span<const std::string> args);
result<parsed_args> parse(std::span<const command_spec> commands, std::span<const std::string> args);

// The values of a repeatable KEY=VALUE option (`--input a=1 --input b=2`)
// as a map, the last of a repeated key winning; an item without a key or
// '=' is an error naming `option` and the item.
result<std::map<std::string, std::string>> key_values(const std::vector<std::string>& given, std::string_view option);

// A comma-separated list of whole numbers in 1..max (`--tokens 1,2,4`); an
// empty list or an item that is not such a number is an error naming
// `option`, the item and, as what was expected, `example`.
result<std::vector<int>> int_list(std::string_view text, std::string_view option, int max, std::string_view example);

std::string overview_help(std::span<const command_spec> commands);
std::string command_help(const command_spec& command);

// Runs the whole CLI: parse, dispatch, print errors. Returns the exit code:
// 0 success, 1 the command failed, 2 a usage error.
int main_entry(std::span<const command_spec> commands, std::span<const std::string> args);

}  // namespace tachyon::cli
