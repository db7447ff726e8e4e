// `tachyon tool NAME [--settings JSON] [--input K=V ...] [ARGUMENTS]`: one
// call of a built-in tool, made from the settings an agent file would give it
// and checked against the tool's schema as the agent loop checks a model's
// call; prints the text the model would read. For trying a tool's settings
// (roots, allowlists) before an agent file relies on them.
#include <iostream>

#include "runtime/agent/agent_def.h"
#include "runtime/cli/cli.h"
#include "runtime/constrain/json_schema.h"
#include "runtime/agent/tool_catalog.h"

namespace tachyon {

namespace {

using cli::exit_failed;
using cli::exit_usage;

int complain(int code, const std::string& message) {
    std::cerr << "tachyon tool: " << message << "\n";
    return code;
}

std::string known_tools() {
    std::string out;
    for (const auto& n : builtin_tool_names()) out += (out.empty() ? "" : ", ") + n;
    return out;
}

// --settings: a JSON object, kept as an agent file's "settings" are kept, so
// that the tool reads them the same way.
result<std::map<std::string, std::string>> parse_settings(const std::string& text) {
    auto settings = parse_tool_settings(text);
    if (!settings)
        return make_error(errc::invalid_argument, "--settings: expected a JSON object of tool settings such as "
                                                  "'{\"roots\": [\"/srv/docs\"]}', got '" + text + "'");
    return settings;
}

int run_tool(const cli::parsed_args& args) {
    if (args.flag("list")) {
        for (const auto& n : builtin_tool_names()) std::cout << n << "\n";
        return 0;
    }
    const auto name = args.positional(0);
    if (!name) return complain(exit_usage, "'tool' needs NAME, a built-in tool (" + known_tools() + ")");
    const auto& names = builtin_tool_names();
    if (std::find(names.begin(), names.end(), *name) == names.end())
        return complain(exit_usage, "unknown tool '" + *name + "' (built-in tools: " + known_tools() + ")");
    if (args.flag("schema")) {
        std::cout << builtin_tool_schema(*name) << "\n";
        return 0;
    }

    auto settings = parse_settings(args.get_or("settings", "{}"));
    if (!settings) return complain(exit_usage, settings.err().message);
    auto inputs = cli::key_values(args.get_all("input"), "input");
    if (!inputs) return complain(exit_usage, inputs.err().message);
    tool_request request{*name, {}};
    for (const auto& [key, value] : *settings) {
        auto filled = fill_placeholders(value, *inputs, "--settings: " + key);
        if (!filled) return complain(exit_usage, filled.err().message);
        request.settings[key] = std::move(filled).value();
    }
    if (auto checked = check_builtin_settings(request.name, request.settings); !checked)
        return complain(exit_usage, "--settings: " + checked.err().message);

    auto made = make_builtin_tools({request});
    if (!made) return complain(exit_failed, made.err().message);
    const auto& tool = made->front();
    // The same checks, in the same words, as a model's call in an agent run
    // (grounding aside: there is no run whose values could ground it).
    auto schema = json_schema::parse(tool->parameters_schema(), std::string(tool->name()), "argument");
    if (!schema) return complain(exit_failed, "tool " + *name + " declares a bad schema: " + schema.err().message);
    const std::string arguments = args.positional(1).value_or("{}");
    if (auto valid = schema->validate(arguments); !valid) {
        std::cerr << "error: " << valid.err().message << "\n";
        return exit_failed;
    }
    result<std::string> r = make_error(errc::internal, "tool threw");
    try {
        r = tool->invoke(arguments, {});
    } catch (const std::exception& e) {  // the agent loop's boundary, and its words
        r = make_error(errc::internal, *name + ": internal error: " + e.what());
    }
    if (!r) {
        std::cerr << "error: " << r.err().message << "\n";
        return exit_failed;
    }
    std::cout << *r;
    if (r->empty() || r->back() != '\n') std::cout << "\n";
    return 0;
}

}  // namespace

cli::command_spec make_tool_command() {
    cli::command_spec c;
    c.name = "tool";
    c.summary = "call a built-in tool once, with an agent file's settings, and print what the model would read";
    c.description =
        "Makes the tool NAME from --settings (the \"settings\" object of an agent file's tool entry, {placeholders} "
        "filled from --input), checks ARGUMENTS against the tool's JSON Schema as the agent loop checks a model's "
        "call, runs it and prints the result. A refused call or a failing tool prints the error the model would "
        "read and exits with status 1. Example: tachyon tool read_file --settings '{\"roots\": [\"{dir}\"]}' "
        "--input dir=/srv/docs '{\"path\": \"README.md\"}'";
    c.positionals = {{"NAME", "a built-in tool (see --list)", false},
                     {"ARGUMENTS", "the call's arguments, a JSON object (default {})", false}};
    c.options = {
        {"settings", 's', cli::option_kind::value, "JSON", "", "the tool's settings, as an agent file gives them"},
        {"input", 'i', cli::option_kind::multi, "KEY=VALUE", "", "value for a {placeholder} in the settings"},
        {"list", 0, cli::option_kind::flag, "", "", "list the built-in tools and exit"},
        {"schema", 0, cli::option_kind::flag, "", "", "print the tool's argument schema (JSON Schema) and exit"},
    };
    c.run = run_tool;
    return c;
}

}  // namespace tachyon
