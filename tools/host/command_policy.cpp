#include "tools/host/command_policy.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <optional>

namespace tachyon::tools {

namespace {

namespace fs = std::filesystem;
using args_type = std::vector<std::string>;

error refuse(std::string_view program, std::string_view arg, std::string_view why) {
    return make_error(errc::invalid_argument,
                      std::string(program) + " argument '" + std::string(arg) + "' is refused: " + std::string(why));
}

bool in(std::string_view s, std::initializer_list<std::string_view> set) {
    return std::find(set.begin(), set.end(), s) != set.end();
}

// "python3.12" -> "python", "gawk" stays: the family a versioned name belongs to.
std::string_view strip_version(std::string_view name) {
    while (!name.empty() && (std::isdigit(static_cast<unsigned char>(name.back())) || name.back() == '.'))
        name.remove_suffix(1);
    return name;
}

// The name of a long option ("--to-command=x" -> "to-command"), its value
// after '=' when it has one.
struct long_option {
    std::string_view name;
    std::optional<std::string_view> value;
};
long_option split_long(std::string_view arg) {
    arg.remove_prefix(2);
    const size_t eq = arg.find('=');
    if (eq == std::string_view::npos) return {arg, std::nullopt};
    return {arg.substr(0, eq), arg.substr(eq + 1)};
}

// getopt_long takes any unique prefix of a long option: "--to-com" is
// --to-command. An exact name of a harmless option that happens to be a
// prefix of a refused one (--checkpoint) is not refused.
bool abbreviates(std::string_view name, std::string_view option, std::initializer_list<std::string_view> exact_safe = {}) {
    return !name.empty() && option.substr(0, name.size()) == name && !in(name, exact_safe);
}

// ---- find -------------------------------------------------------------------

status check_find(std::string_view program, const args_type& args) {
    for (const auto& a : args) {
        if (in(a, {"-exec", "-execdir", "-ok", "-okdir"})) return refuse(program, a, "it runs another program");
        if (in(a, {"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}))
            return refuse(program, a, "it deletes or writes files");
    }
    return {};
}

// ---- sed --------------------------------------------------------------------

// Walks a sed script command by command (GNU syntax, which POSIX sed is a
// subset of). Returns what is wrong, or nothing. Anything it does not
// understand is refused rather than guessed at.
std::optional<std::string> sed_script_problem(std::string_view s) {
    size_t i = 0;
    const size_t n = s.size();
    auto skip_blank = [&] {
        while (i < n && (s[i] == ' ' || s[i] == '\t')) ++i;
    };
    // A delimited part (/regex/, s's pieces, y's): ends at an unescaped delim.
    auto skip_delimited = [&](char delim) -> bool {
        while (i < n && s[i] != delim) {
            if (s[i] == '\n') return false;
            i += s[i] == '\\' ? 2 : 1;  // an escaped delimiter or newline belongs to the part
        }
        if (i >= n) return false;
        ++i;
        return true;
    };
    auto skip_address = [&]() -> bool {
        if (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) {
            while (i < n && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '~')) ++i;
        } else if (i < n && s[i] == '$') {
            ++i;
        } else if (i < n && (s[i] == '/' || s[i] == '\\')) {
            if (s[i] == '\\') ++i;
            if (i >= n) return false;
            const char delim = s[i++];
            if (!skip_delimited(delim)) return false;
            while (i < n && (s[i] == 'I' || s[i] == 'M')) ++i;
        }
        return true;
    };
    auto skip_to_eol = [&] {
        while (i < n && s[i] != '\n') ++i;
    };
    while (true) {
        while (i < n && (std::isspace(static_cast<unsigned char>(s[i])) || s[i] == ';')) ++i;
        if (i >= n) return std::nullopt;
        if (s[i] == '#') {
            skip_to_eol();
            continue;
        }
        if (!skip_address()) return "an address is not terminated";
        skip_blank();
        if (i < n && s[i] == ',') {
            ++i;
            skip_blank();
            if (i < n && (s[i] == '+' || s[i] == '~')) ++i;
            if (!skip_address()) return "an address is not terminated";
            skip_blank();
        }
        while (i < n && (s[i] == '!' || s[i] == ' ')) ++i;
        if (i >= n) return "an address without a command";
        const char c = s[i++];
        switch (c) {
        case '{': case '}': case '=': case 'd': case 'D': case 'g': case 'G': case 'h': case 'H': case 'n':
        case 'N': case 'p': case 'P': case 'x': case 'z': case 'F':
            break;
        case 'l': case 'L': case 'q': case 'Q':
            skip_blank();
            while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
            break;
        case 'a': case 'i': case 'c':  // text to the end of the line; `\` continues it
            while (i < n && s[i] != '\n') {
                if (s[i] == '\\') ++i;
                ++i;
            }
            break;
        case ':': case 'b': case 't': case 'T': case 'v':
            while (i < n && s[i] != '\n' && s[i] != ';') ++i;
            break;
        case 'r': case 'R':  // reads a file: the sandbox decides which
            skip_to_eol();
            break;
        case 'w': case 'W':
            return std::string("the '") + c + "' command writes a file";
        case 'e':
            return "the 'e' command runs a program";
        case 's': case 'y': {
            if (i >= n || s[i] == '\n' || s[i] == '\\') return std::string("the '") + c + "' command has no delimiter";
            const char delim = s[i++];
            if (!skip_delimited(delim) || !skip_delimited(delim))
                return std::string("the '") + c + "' command is not terminated";
            if (c == 'y') break;
            while (i < n && s[i] != ';' && s[i] != '\n' && s[i] != '}') {
                if (s[i] == 'e') return "the s command's 'e' flag runs a program";
                if (s[i] == 'w') return "the s command's 'w' flag writes a file";
                if (!std::isalnum(static_cast<unsigned char>(s[i])) && s[i] != ' ' && s[i] != '\t')
                    return std::string("unexpected '") + s[i] + "' after an s command";
                ++i;
            }
            break;
        }
        default:
            return std::string("unknown command '") + c + "' (the script cannot be checked)";
        }
    }
}

status check_sed(std::string_view program, const args_type& args) {
    bool have_script = false;  // from -e/--expression; else the first operand is it
    auto check_script = [&](std::string_view arg, std::string_view script) -> status {
        have_script = true;
        if (auto problem = sed_script_problem(script)) return refuse(program, arg, *problem);
        return {};
    };
    for (size_t k = 0; k < args.size(); ++k) {
        const std::string& a = args[k];
        if (a == "--") {
            if (!have_script && k + 1 < args.size()) TACHYON_TRY(check_script(args[k + 1], args[k + 1]));
            break;
        }
        if (a.rfind("--", 0) == 0) {
            const auto [name, value] = split_long(a);
            if (abbreviates(name, "in-place")) return refuse(program, a, "it edits files in place");
            if (abbreviates(name, "file")) return refuse(program, a, "a script file cannot be checked");
            if (abbreviates(name, "expression")) {
                if (value) {
                    TACHYON_TRY(check_script(a, *value));
                } else if (k + 1 < args.size()) {
                    ++k;
                    TACHYON_TRY(check_script(args[k], args[k]));
                }
            } else if (abbreviates(name, "line-length") && !value) {
                ++k;
            }
            continue;
        }
        if (a.size() > 1 && a[0] == '-') {
            for (size_t j = 1; j < a.size(); ++j) {
                if (a[j] == 'i') return refuse(program, a, "it edits files in place");
                if (a[j] == 'f') return refuse(program, a, "a script file cannot be checked");
                if (a[j] == 'e' || a[j] == 'l') {
                    const bool glued = j + 1 < a.size();
                    if (!glued) ++k;
                    if (a[j] == 'e' && glued) TACHYON_TRY(check_script(a, std::string_view(a).substr(j + 1)));
                    if (a[j] == 'e' && !glued && k < args.size()) TACHYON_TRY(check_script(args[k], args[k]));
                    break;
                }
            }
            continue;
        }
        if (!have_script) TACHYON_TRY(check_script(a, a));
    }
    return {};
}

// ---- awk --------------------------------------------------------------------

// Scans an awk program with strings, regex literals and comments skipped.
std::optional<std::string> awk_program_problem(std::string_view s) {
    const size_t n = s.size();
    char prev = '\0';        // the last significant character (for regex-or-division)
    bool prev_word = false;  // ... and whether it ended an identifier or number
    bool in_print = false;   // inside a print/printf statement
    int depth = 0;           // parentheses within it
    auto regex_may_start = [&] {
        return !prev_word && (prev == '\0' || std::string_view("(,~!&|{};:?=+-*%^<>\n[").find(prev) != std::string_view::npos);
    };
    for (size_t i = 0; i < n; ++i) {
        const char c = s[i];
        if (c == ' ' || c == '\t' || (c == '\\' && i + 1 < n && s[i + 1] == '\n')) continue;
        if (c == '#') {
            while (i + 1 < n && s[i + 1] != '\n') ++i;
            continue;
        }
        if (c == '"' || (c == '/' && regex_may_start())) {
            for (++i; i < n && s[i] != c; ++i) {
                if (s[i] == '\\') ++i;
                else if (c == '/' && s[i] == '[') {  // a bracket may hold '/': [/]
                    for (++i; i < n && s[i] != ']'; ++i)
                        if (s[i] == '\\') ++i;
                }
            }
            if (i >= n) return "a string or regex is not terminated (the program cannot be checked)";
            prev = c;
            prev_word = true;  // an operand: a '/' after it divides
            continue;
        }
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$') {
            size_t j = i;
            while (j < n && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '$')) ++j;
            const std::string_view word = s.substr(i, j - i);
            if (word == "system") {
                size_t k = j;
                while (k < n && (s[k] == ' ' || s[k] == '\t')) ++k;
                if (k < n && s[k] == '(') return "system() runs a program";
            }
            const bool keyword = in(word, {"print", "printf", "return", "in", "case", "getline", "do", "else"});
            if (word == "print" || word == "printf") {
                in_print = true;
                depth = 0;
            }
            prev = keyword ? '(' : 'a';
            prev_word = !keyword;
            i = j - 1;
            continue;
        }
        if (c == '@') return "'@' directives load code (the program cannot be checked)";
        if (c == '|') {
            if (i + 1 < n && s[i + 1] == '|') {
                ++i;
            } else {
                return "a pipe ('|') runs a program";
            }
        } else if (c == '>' && in_print && depth == 0) {
            return "print/printf with '>' writes a file";
        } else if (c == '(') {
            ++depth;
        } else if (c == ')') {
            --depth;
        } else if ((c == ';' || c == '\n' || c == '}' || c == '{') && depth <= 0) {
            in_print = false;
        }
        prev = c;
        prev_word = c == ')' || c == ']';
    }
    return std::nullopt;
}

status check_awk(std::string_view program, const args_type& args) {
    bool have_program = false;
    auto check_program = [&](std::string_view arg, std::string_view text) -> status {
        have_program = true;
        if (auto problem = awk_program_problem(text)) return refuse(program, arg, *problem);
        return {};
    };
    for (size_t k = 0; k < args.size(); ++k) {
        const std::string& a = args[k];
        if (have_program) break;  // operands: files and var=value assignments
        if (a == "--") {
            if (k + 1 < args.size()) TACHYON_TRY(check_program(args[k + 1], args[k + 1]));
            break;
        }
        if (a.rfind("--", 0) == 0) {
            const auto [name, value] = split_long(a);
            for (std::string_view bad : {"file", "exec", "load", "include"})
                if (abbreviates(name, bad)) return refuse(program, a, "a program or extension file cannot be checked");
            if (abbreviates(name, "source")) {
                if (value) {
                    TACHYON_TRY(check_program(a, *value));
                } else if (++k < args.size()) {
                    TACHYON_TRY(check_program(args[k], args[k]));
                }
                have_program = false;  // gawk: --source does not end the options
                continue;
            }
            if (!value && (abbreviates(name, "field-separator") || abbreviates(name, "assign"))) ++k;
            continue;
        }
        if (a.size() > 1 && a[0] == '-') {
            const char opt = a[1];
            if (in(std::string_view(&opt, 1), {"f", "E", "l", "i"}))
                return refuse(program, a, "a program or extension file cannot be checked");
            if (opt == 'e') {
                const bool glued = a.size() > 2;
                if (!glued) ++k;
                if (glued) TACHYON_TRY(check_program(a, std::string_view(a).substr(2)));
                if (!glued && k < args.size()) TACHYON_TRY(check_program(args[k], args[k]));
                have_program = false;
                continue;
            }
            if ((opt == 'F' || opt == 'v') && a.size() == 2) ++k;  // its value is the next argument
            continue;
        }
        TACHYON_TRY(check_program(a, a));
    }
    return {};
}

// ---- tar --------------------------------------------------------------------

status check_tar(std::string_view program, const args_type& args) {
    // Short options that take a value (the rest of the cluster is it).
    constexpr std::string_view with_value = "bCfgHKLNTVX";
    auto check_letters = [&](const std::string& a, size_t from) -> status {
        for (size_t j = from; j < a.size(); ++j) {
            if (a[j] == 'I') return refuse(program, a, "-I (--use-compress-program) runs another program");
            if (a[j] == 'F') return refuse(program, a, "-F (--info-script) runs another program");
            if (from == 1 && with_value.find(a[j]) != std::string_view::npos) break;
        }
        return {};
    };
    for (size_t k = 0; k < args.size(); ++k) {
        const std::string& a = args[k];
        if (a == "--") break;
        if (a.rfind("--", 0) == 0) {
            const auto name = split_long(a).name;
            for (std::string_view bad : {"checkpoint-action", "to-command", "use-compress-program", "rsh-command",
                                         "rmt-command", "info-script", "new-volume-script"})
                if (abbreviates(name, bad, {"checkpoint"})) return refuse(program, a, "it runs another program");
            continue;
        }
        if (a.size() > 1 && a[0] == '-') {
            TACHYON_TRY(check_letters(a, 1));
        } else if (k == 0) {
            TACHYON_TRY(check_letters(a, 0));  // old style: "tvf x.tar", every letter an option
        }
    }
    return {};
}

// ---- env --------------------------------------------------------------------

status check_env(std::string_view program, const args_type& args) {
    bool options = true;
    for (size_t k = 0; k < args.size(); ++k) {
        const std::string& a = args[k];
        if (options && a == "--") {
            options = false;
            continue;
        }
        if (options && a.rfind("--", 0) == 0) {
            const auto [name, value] = split_long(a);
            if (abbreviates(name, "split-string")) return refuse(program, a, "it runs a command");
            if (!value && (abbreviates(name, "unset") || abbreviates(name, "chdir"))) ++k;
            continue;
        }
        if (options && a.size() > 1 && a[0] == '-') {
            if (a.find('S') != std::string::npos) return refuse(program, a, "it runs a command");
            if ((a.back() == 'u' || a.back() == 'C')) ++k;
            continue;
        }
        options = false;
        if (a.find('=') != std::string::npos && a.front() != '=') continue;  // NAME=VALUE
        return refuse(program, a, "env with a command runs that command");
    }
    return {};
}

// ---- interpreters -----------------------------------------------------------

struct interpreter {
    std::string_view name;
    std::string_view code_letters;   // short options whose value is code
    std::string_view value_letters;  // other short options that take a value
    std::initializer_list<std::string_view> code_long;
};

constexpr std::string_view shell_names[] = {"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "pdksh",
                                            "yash", "fish", "csh", "tcsh"};

status check_interpreter(std::string_view program, const interpreter& in_, const args_type& args) {
    for (const auto& a : args) {
        if (a == "--" || a == "-" || a.empty() || (a[0] != '-' && a[0] != '+')) break;  // the script operand
        if (a.rfind("--", 0) == 0) {
            const auto name = split_long(a).name;
            for (auto code : in_.code_long)
                if (abbreviates(name, code)) return refuse(program, a, "it runs code given in an argument");
            continue;
        }
        for (size_t j = 1; j < a.size(); ++j) {
            if (in_.code_letters.find(a[j]) != std::string_view::npos)
                return refuse(program, a, "it runs code given in an argument");
            if (in_.value_letters.find(a[j]) != std::string_view::npos) break;
        }
    }
    return {};
}

}  // namespace

status check_exec_options(std::string_view program, const args_type& args) {
    const std::string_view family = strip_version(program);
    if (in(family, {"find", "gfind", "bfs"})) return check_find(program, args);
    if (in(family, {"sed", "gsed"})) return check_sed(program, args);
    if (in(family, {"awk", "gawk", "mawk", "nawk", "original-awk"})) return check_awk(program, args);
    if (in(family, {"tar", "gtar"})) return check_tar(program, args);
    if (family == "env") return check_env(program, args);
    if (in(family, {"xargs", "nice", "nohup", "timeout", "stdbuf", "setsid", "chroot", "sudo", "su", "doas",
                    "runuser", "pkexec", "strace", "ltrace", "gdb", "valgrind", "perf", "watch", "flock", "time",
                    "unshare", "nsenter", "chrt", "ionice", "taskset", "numactl", "prlimit", "setpriv", "capsh",
                    "systemd-run", "parallel", "script", "expect", "ssh", "fakeroot", "eatmydata", "firejail",
                    "bwrap", "xvfb-run", "catchsegv", "dbus-launch", "screen", "tmux", "at", "batch", "make",
                    "sshpass", "rlwrap", "entr", "busybox", "toybox"}))
        return make_error(errc::invalid_argument,
                          std::string(program) + " is refused: its purpose is to run another program");
    for (auto shell : shell_names)
        if (family == shell) return check_interpreter(program, {shell, "c", "oO", {}}, args);
    if (family == "python") return check_interpreter(program, {family, "c", "mWX", {}}, args);
    if (family == "perl") return check_interpreter(program, {family, "eE", "IMmlx0iFCdD", {}}, args);
    if (family == "ruby") return check_interpreter(program, {family, "e", "IrCEFxK", {}}, args);
    if (in(family, {"node", "nodejs"})) return check_interpreter(program, {family, "ep", "r", {"eval", "print"}}, args);
    if (family == "php") return check_interpreter(program, {family, "rBRFE", "cdz", {}}, args);
    if (in(family, {"lua", "luajit"})) return check_interpreter(program, {family, "e", "l", {}}, args);
    return {};
}

bool is_inside(const fs::path& path, const fs::path& root) {
    auto r = root.begin();
    auto q = path.begin();
    for (; r != root.end() && q != path.end() && *r == *q; ++r, ++q) {
    }
    return r == root.end() || (std::next(r) == root.end() && r->empty());
}

status check_path_arguments(const args_type& args, const fs::path& cwd, const std::vector<fs::path>& roots) {
    auto inside_roots = [&roots](const fs::path& p) {
        return std::any_of(roots.begin(), roots.end(), [&p](const fs::path& root) { return is_inside(p, root); });
    };
    auto exists = [](const fs::path& p) {
        struct stat st {};
        return ::lstat(p.c_str(), &st) == 0;
    };
    // The canonical form: symlinks of the longest existing prefix resolved,
    // the rest normalized lexically.
    auto canonical = [](const fs::path& p) {
        std::error_code ec;
        fs::path out = fs::weakly_canonical(p, ec);
        return ec ? p.lexically_normal() : out;
    };
    auto check = [&](const std::string& arg, std::string_view text) -> status {
        if (text.empty() || text == "/dev/null") return {};
        const fs::path p(text);
        bool dotdot = false;
        for (const auto& part : p) dotdot = dotdot || part == "..";
        const fs::path full = p.is_absolute() ? p : cwd / p;
        if (!p.is_absolute() && !dotdot) {
            // A plain relative name: only a symlink can take it outside.
            if (!exists(full) || inside_roots(canonical(full))) return {};
        } else {
            const fs::path norm = full.lexically_normal();
            if (inside_roots(canonical(norm))) return {};
            // An absolute string that names nothing here is a pattern or a
            // URL path, not a file; a `..` path outside is refused anyway.
            const fs::path parent = norm.parent_path();
            if (!dotdot && !exists(norm) && (parent == norm.root_path() || !exists(parent))) return {};
        }
        return make_error(errc::invalid_argument,
                          "argument '" + arg + "' names a path outside the allowed directories");
    };
    for (const auto& a : args) {
        TACHYON_TRY(check(a, a));
        if (a.size() > 2 && a[0] == '-') {
            const size_t eq = a.find('=');
            if (eq != std::string::npos) TACHYON_TRY(check(a, std::string_view(a).substr(eq + 1)));
        }
    }
    return {};
}

}  // namespace tachyon::tools
