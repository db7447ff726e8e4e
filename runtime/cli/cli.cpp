#include "runtime/cli/cli.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace tachyon::cli {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Splits a command name into words: "bench decode" -> {"bench", "decode"}.
std::vector<std::string_view> words_of(std::string_view name) {
    std::vector<std::string_view> out;
    size_t pos = 0;
    while (pos < name.size()) {
        size_t end = name.find(' ', pos);
        if (end == std::string_view::npos) end = name.size();
        out.push_back(name.substr(pos, end - pos));
        pos = end + 1;
    }
    return out;
}

// Finds the longest command whose words prefix `args`; returns it and how many
// words it used.
std::pair<const command_spec*, size_t> match_command(std::span<const command_spec> commands,
                                                      std::span<const std::string> args) {
    const command_spec* best = nullptr;
    size_t best_words = 0;
    for (const auto& c : commands) {
        auto words = words_of(c.name);
        if (words.size() > args.size() || words.size() <= best_words) continue;
        bool match = true;
        for (size_t i = 0; i < words.size(); ++i) match = match && args[i] == words[i];
        if (match) {
            best = &c;
            best_words = words.size();
        }
    }
    return {best, best_words};
}

const option_spec* find_long(const command_spec& c, std::string_view name) {
    for (const auto& o : c.options)
        if (o.name == name) return &o;
    return nullptr;
}

const option_spec* find_short(const command_spec& c, char name) {
    for (const auto& o : c.options)
        if (o.short_name != 0 && o.short_name == name) return &o;
    return nullptr;
}

error usage(std::string message) { return make_error(errc::invalid_argument, std::move(message)); }

std::string known_commands(std::span<const command_spec> commands) {
    std::string out;
    for (const auto& c : commands) {
        if (!out.empty()) out += ", ";
        out += c.name;
    }
    return out;
}

}  // namespace

bool parsed_args::has(std::string_view name) const { return given_.find(name) != given_.end(); }

std::optional<std::string> parsed_args::get(std::string_view name) const {
    if (auto it = given_.find(name); it != given_.end() && !it->second.empty()) return it->second.back();
    const option_spec* spec = find_long(*command_, name);
    TACHYON_ASSERT(spec != nullptr, "parsed_args::get of an undeclared option: " + std::string(name));
    if (!spec->default_value.empty()) return spec->default_value;
    return std::nullopt;
}

std::string parsed_args::get_or(std::string_view name, std::string fallback) const {
    auto v = get(name);
    return v ? *v : std::move(fallback);
}

std::vector<std::string> parsed_args::get_all(std::string_view name) const {
    if (auto it = given_.find(name); it != given_.end()) return it->second;
    return {};
}

result<int64_t> parsed_args::get_int(std::string_view name) const {
    auto v = get(name);
    if (!v) return usage("option --" + std::string(name) + " is required");
    int64_t out = 0;
    auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
    if (ec != std::errc() || ptr != v->data() + v->size())
        return usage("option --" + std::string(name) + ": expected an integer, got '" + *v + "'");
    return out;
}

result<double> parsed_args::get_double(std::string_view name) const {
    auto v = get(name);
    if (!v) return usage("option --" + std::string(name) + " is required");
    // strtod rather than from_chars<double>: the latter is missing from some libstdc++ builds.
    char* end = nullptr;
    double out = std::strtod(v->c_str(), &end);
    if (v->empty() || end != v->c_str() + v->size())
        return usage("option --" + std::string(name) + ": expected a number, got '" + *v + "'");
    return out;
}

std::optional<std::string> parsed_args::positional(size_t i) const {
    if (i < positionals_.size()) return positionals_[i];
    return std::nullopt;
}

result<parsed_args> parse(std::span<const command_spec> commands, std::span<const std::string> args) {
    auto [command, n_words] = match_command(commands, args);
    if (command == nullptr) {
        if (args.empty()) return usage("no command given; known commands: " + known_commands(commands));
        return usage("unknown command '" + args[0] + "'; known commands: " + known_commands(commands));
    }
    parsed_args out;
    out.command_ = command;
    bool only_positionals = false;
    for (size_t i = n_words; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (!only_positionals && a == "--") {
            only_positionals = true;
            continue;
        }
        if (only_positionals || a.size() < 2 || a[0] != '-' || (a[1] != '-' && !std::isalpha(static_cast<unsigned char>(a[1])))) {
            out.positionals_.push_back(a);  // plain word, "-", or a negative number
            continue;
        }
        const option_spec* spec = nullptr;
        std::optional<std::string> inline_value;
        std::string shown = a;
        if (starts_with(a, "--")) {
            std::string name = a.substr(2);
            if (auto eq = name.find('='); eq != std::string::npos) {
                inline_value = name.substr(eq + 1);
                name.resize(eq);
                shown = "--" + name;
            }
            spec = find_long(*command, name);
        } else {
            if (a.size() != 2) return usage("unknown option '" + a + "' for '" + command->name + "' (short options take one letter)");
            spec = find_short(*command, a[1]);
        }
        if (spec == nullptr) return usage("unknown option '" + shown + "' for '" + command->name + "'; see 'tachyon " + command->name + " --help'");
        if (spec->kind == option_kind::flag) {
            if (inline_value) return usage("option --" + spec->name + " takes no value");
            out.given_[spec->name];
            continue;
        }
        std::string value;
        if (inline_value) {
            value = *inline_value;
        } else {
            if (i + 1 >= args.size()) return usage("option " + shown + " needs a value (" + (spec->value_name.empty() ? "VALUE" : spec->value_name) + ")");
            value = args[++i];
        }
        out.given_[spec->name].push_back(std::move(value));
    }
    for (const auto& o : command->options) {
        if (o.required && !out.has(o.name)) return usage("'" + command->name + "' needs option --" + o.name);
    }
    size_t n_required = 0;
    for (const auto& p : command->positionals) n_required += p.required ? 1 : 0;
    if (out.positionals_.size() < n_required) {
        return usage("'" + command->name + "' needs " + command->positionals[out.positionals_.size()].name);
    }
    // A last positional named "NAME..." takes the rest of the words.
    const bool takes_rest = !command->positionals.empty() && command->positionals.back().name.ends_with("...");
    if (out.positionals_.size() > command->positionals.size() && !takes_rest) {
        return usage("unexpected argument '" + out.positionals_[command->positionals.size()] + "' for '" + command->name + "'");
    }
    return out;
}

result<invocation> parse_invocation(std::span<const command_spec> commands, std::span<const std::string> args) {
    invocation inv;
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        inv.what = invocation::action::help;
        if (args.size() >= 2 && args[0] == "help") {
            auto [c, n] = match_command(commands, args.subspan(1));
            if (c == nullptr) return usage("unknown command '" + args[1] + "'; known commands: " + known_commands(commands));
            inv.command = c;
        }
        return inv;
    }
    if (args[0] == "--version" || args[0] == "-V") {
        inv.what = invocation::action::version;
        return inv;
    }
    // `tachyon CMD --help` anywhere after the command words asks for help on it.
    auto [c, n] = match_command(commands, args);
    if (c != nullptr) {
        for (size_t i = n; i < args.size(); ++i) {
            if (args[i] == "--") break;
            if (args[i] == "--help" || args[i] == "-h") {
                inv.what = invocation::action::help;
                inv.command = c;
                return inv;
            }
        }
    }
    auto parsed = parse(commands, args);
    if (!parsed) return parsed.err();
    inv.command = &parsed->command();
    inv.args = std::move(parsed).value();
    return inv;
}

std::string overview_help(std::span<const command_spec> commands) {
    std::ostringstream os;
    os << "tachyon " << TACHYON_VERSION << " - agent workflow runtime with a built-in low-latency inference core\n\n"
       << "usage: tachyon <command> [options]\n"
       << "       tachyon <command> --help\n"
       << "       tachyon --version\n\ncommands:\n";
    size_t width = 0;
    for (const auto& c : commands) width = std::max(width, c.name.size());
    for (const auto& c : commands) os << "  " << c.name << std::string(width - c.name.size() + 2, ' ') << c.summary << "\n";
    os << "\nenvironment: TACHYON_LOG=trace|debug|info|warn|error|off sets the log level (default warn)\n";
    return os.str();
}

std::string command_help(const command_spec& c) {
    std::ostringstream os;
    os << "usage: tachyon " << c.name;
    for (const auto& p : c.positionals) os << (p.required ? " " + p.name : " [" + p.name + "]");
    if (!c.options.empty()) os << " [options]";
    os << "\n\n" << c.summary << "\n";
    if (!c.description.empty()) os << "\n" << c.description << "\n";
    if (!c.positionals.empty()) {
        os << "\narguments:\n";
        for (const auto& p : c.positionals) os << "  " << p.name << "  " << p.help << "\n";
    }
    if (!c.options.empty()) {
        os << "\noptions:\n";
        std::vector<std::string> heads;
        size_t width = 0;
        for (const auto& o : c.options) {
            std::string h = o.short_name ? std::string("-") + o.short_name + ", " : "    ";
            h += "--" + o.name;
            if (o.kind != option_kind::flag) h += " " + (o.value_name.empty() ? std::string("VALUE") : o.value_name);
            width = std::max(width, h.size());
            heads.push_back(std::move(h));
        }
        for (size_t i = 0; i < c.options.size(); ++i) {
            const auto& o = c.options[i];
            os << "  " << heads[i] << std::string(width - heads[i].size() + 2, ' ') << o.help;
            if (!o.default_value.empty()) os << " (default: " << o.default_value << ")";
            if (o.required) os << " (required)";
            if (o.kind == option_kind::multi) os << " (repeatable)";
            os << "\n";
        }
    }
    return os.str();
}

int main_entry(std::span<const command_spec> commands, std::span<const std::string> args) {
    auto inv = parse_invocation(commands, args);
    if (!inv) {
        std::cerr << "tachyon: " << inv.err().message << "\n";
        return 2;
    }
    switch (inv->what) {
        case invocation::action::help:
            std::cout << (inv->command ? command_help(*inv->command) : overview_help(commands));
            return 0;
        case invocation::action::version:
            std::cout << "tachyon " << TACHYON_VERSION << "\n";
            return 0;
        case invocation::action::run: break;
    }
    try {
        return inv->command->run(*inv->args);
    } catch (const std::exception& e) {
        // Components catch their own exceptions; this is the last boundary.
        std::cerr << "tachyon " << inv->command->name << ": unexpected error: " << e.what() << "\n";
        return 1;
    }
}

result<std::map<std::string, std::string>> key_values(const std::vector<std::string>& given, std::string_view option) {
    std::map<std::string, std::string> out;
    for (const auto& kv : given) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
            return make_error(errc::invalid_argument, "--" + std::string(option) + " '" + kv + "': expected KEY=VALUE");
        out[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return out;
}

result<std::vector<int>> int_list(std::string_view text, std::string_view option, int max, std::string_view example) {
    std::vector<int> out;
    std::stringstream ss{std::string(text)};
    std::string item;
    while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < 1 || v > max)
            return make_error(errc::invalid_argument, std::string(option) + ": '" + item + "' is not a number in 1.." + std::to_string(max) +
                                                          " (expected a list such as " + std::string(example) + ")");
        out.push_back(static_cast<int>(v));
    }
    if (out.empty()) return make_error(errc::invalid_argument, std::string(option) + ": empty list");
    return out;
}

}  // namespace tachyon::cli
