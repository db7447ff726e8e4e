// The checks of a run's inputs against the agent's declarations and the
// server's data roots (check_run_inputs, agent_def.h).
#include "runtime/agent/agent_def.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "runtime/agent/agent_file_util.h"

namespace tachyon {

using agent_file::check_root_dirs;
using agent_file::collect_placeholders;
using agent_file::file_kind;
using agent_file::is_root_key;

namespace {

// realpath(3): absolute, every symlink and `..` resolved; nullopt when the path does not exist.
std::optional<std::filesystem::path> real_path(const std::string& p) {
    char buf[PATH_MAX];
    if (::realpath(p.c_str(), buf) == nullptr) return std::nullopt;
    return std::filesystem::path(buf);
}

// Component-wise, so /data/logs2 is not inside /data/logs.
bool inside(const std::filesystem::path& path, const std::filesystem::path& root) {
    auto r = root.begin(), p = path.begin();
    for (; r != root.end(); ++r, ++p) {
        if (r->empty()) continue;  // a trailing separator
        if (p == path.end() || *p != *r) return false;
    }
    return true;
}

}  // namespace

result<std::map<std::string, std::string>> check_run_inputs(const agent_definition& agent,
                                                            const std::map<std::string, std::string>& inputs,
                                                            const input_confinement* confinement) {
    auto fail = [](const std::string& name, const std::string& what) {
        return make_error(errc::invalid_argument, "inputs." + name + ": " + what);
    };
    std::map<std::string, std::string> out = inputs;
    if (!agent.declares_inputs) {
        if (confinement) {
            // Over HTTP an undeclared input could be any path the server can read: the file must say what each one is.
            const std::string why = "agent '" + agent.name + "' declares no inputs (" + agent.file +
                                    " needs an \"inputs\" declaration to take inputs over HTTP)";
            if (!inputs.empty()) return fail(inputs.begin()->first, "not accepted: " + why);
            if (const auto used = agent.placeholders(); !used.empty()) return fail(used.front(), "cannot be given: " + why);
        }
        for (const auto& name : agent.placeholders())
            if (!inputs.count(name)) return fail(name, "missing (agent '" + agent.name + "' uses {" + name + "})");
    } else {
        std::string declared;
        for (const auto& [n, in] : agent.inputs) declared += (declared.empty() ? "" : ", ") + n;
        for (const auto& [name, value] : inputs)
            if (!agent.inputs.count(name))
                return fail(name, "not an input of agent '" + agent.name + "' (declared: " + (declared.empty() ? "none" : declared) + ")");
        std::vector<std::filesystem::path> roots;
        if (confinement)
            for (const auto& root : confinement->data_roots)
                if (auto real = real_path(root)) roots.push_back(*real);
        for (const auto& [name, in] : agent.inputs) {
            auto it = inputs.find(name);
            if (it == inputs.end()) {
                return fail(name, "missing (agent '" + agent.name + "' declares it as a " + std::string(to_string(in.type)) +
                                      (in.description.empty() ? std::string() : ": " + in.description) + ")");
            }
            if (in.type == agent_input_type::string) continue;
            const std::string& value = it->second;
            const std::string expected = in.type == agent_input_type::file        ? "a file"
                                         : in.type == agent_input_type::directory ? "a directory"
                                                                                  : "a file or a directory";
            if (value.empty()) return fail(name, "empty (expected the path of " + expected + ")");
            if (confinement && confinement->data_roots.empty())
                return fail(name, "path inputs are refused: the server has no data roots (start it with --data-root DIR)");
            auto real = real_path(value);
            if (confinement) {
                // A path that does not resolve is judged by its existing prefix, so the
                // answer does not tell whether something exists outside the roots.
                std::error_code ec;
                const std::filesystem::path seen = real ? *real : std::filesystem::weakly_canonical(std::filesystem::absolute(value, ec), ec);
                const bool ok = std::any_of(roots.begin(), roots.end(), [&](const auto& root) { return inside(seen, root); });
                if (!ok || (!real && ec)) {
                    std::string list;
                    for (const auto& root : confinement->data_roots) list += (list.empty() ? "" : ", ") + root;
                    return fail(name, "'" + value + "' is outside the data roots (" + list + ")");
                }
            }
            if (!real) return fail(name, "'" + value + "' does not exist (expected " + expected + ")");
            if (confinement) out[name] = real->string();
            struct stat st {};
            if (::stat(real->c_str(), &st) != 0) return fail(name, "'" + value + "' cannot be read (" + std::strerror(errno) + ")");
            const bool is_dir = S_ISDIR(st.st_mode), is_file = S_ISREG(st.st_mode);
            const bool ok = in.type == agent_input_type::file ? is_file : in.type == agent_input_type::directory ? is_dir : is_dir || is_file;
            if (!ok) return fail(name, "'" + value + "' is " + (is_dir ? "a directory" : is_file ? "a file" : file_kind(st.st_mode)) +
                                            " (expected " + expected + ")");
        }
    }
    // Tool roots filled from the inputs must be directories, named with the file and the key.
    auto check_roots = [&](const std::string& path, const std::map<std::string, std::string>& settings) -> status {
        for (const auto& [k, v] : settings) {
            if (!is_root_key(k)) continue;
            std::set<std::string> used;
            collect_placeholders(v, used);
            if (used.empty()) continue;
            auto filled = fill_placeholders(v, out, agent.file + ": " + path + ".settings." + k);
            if (!filled) return filled.err();
            TACHYON_TRY(check_root_dirs(agent.file + ": " + path + ".settings." + k, k, *filled, " (from " + v + ")"));
        }
        return {};
    };
    for (size_t i = 0; i < agent.tools.size(); ++i) TACHYON_TRY(check_roots("tools[" + std::to_string(i) + "]", agent.tools[i].settings));
    for (size_t i = 0; i < agent.verify.size(); ++i) TACHYON_TRY(check_roots("verify.checks[" + std::to_string(i) + "]", agent.verify[i].settings));
    return out;
}

}  // namespace tachyon
