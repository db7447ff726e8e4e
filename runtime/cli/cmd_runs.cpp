// `tachyon runs list` and `tachyon runs show ID`: read the run journals.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "runtime/cli/cli.h"
#include "runtime/journal/journal.h"
#include "runtime/journal/timeline.h"
#include "runtime/journal/timeline_svg.h"

namespace tachyon {

namespace {

namespace fs = std::filesystem;

cli::option_spec dir_option() { return {"dir", 0, cli::option_kind::value, "DIR", "runs", "directory of the run journals"}; }

// The journal of `id` in `dir`: the exact id, else the one run whose id starts with it.
result<fs::path> find_run(const fs::path& dir, const std::string& id) {
    auto paths = journal::list_journals(dir);
    if (!paths.ok()) return paths.err();
    std::vector<fs::path> matches;
    for (const auto& p : *paths) {
        const std::string stem = p.stem().string();
        if (stem == id) return p;
        if (stem.rfind(id, 0) == 0) matches.push_back(p);
    }
    if (matches.size() == 1) return matches[0];
    if (matches.empty())
        return make_error(errc::not_found, "unknown run id '" + id + "' in '" + dir.string() +
                                               "' (`tachyon runs list --dir " + dir.string() + "` shows the runs)");
    return make_error(errc::invalid_argument,
                      "run id '" + id + "' is ambiguous in '" + dir.string() + "': " + std::to_string(matches.size()) +
                          " runs start with it");
}

int run_list(const cli::parsed_args& args) {
    const fs::path dir = args.get_or("dir", "runs");
    auto paths = journal::list_journals(dir);
    if (!paths.ok()) {
        std::cerr << "error: " << paths.err().message << "\n";
        return 1;
    }
    char line[512];
    std::snprintf(line, sizeof line, "%-26s %-20s %-17s %14s\n", "run", "agent", "state", "answer_ms");
    std::cout << line;
    for (const auto& p : *paths) {
        auto log = journal::read_journal(p);
        if (!log.ok()) {
            std::cout << p.stem().string() << "  unreadable: " << log.err().message << "\n";
            continue;
        }
        const auto* start = log->start();
        const auto* fin = log->final_answer();
        const std::string state = log->state();
        char answer[32] = "-";
        if (fin != nullptr) std::snprintf(answer, sizeof answer, "%.1f", fin->time_to_answer_ms);
        std::snprintf(line, sizeof line, "%-26s %-20s %-17s %14s\n", log->run_id().c_str(),
                      start != nullptr ? start->agent.c_str() : "?", state.c_str(), answer);
        std::cout << line;
    }
    return 0;
}

int run_show(const cli::parsed_args& args) {
    const fs::path dir = args.get_or("dir", "runs");
    const std::string id = args.positional(0).value_or("");
    auto path = find_run(dir, id);
    if (!path.ok()) {
        std::cerr << "error: " << path.err().message << "\n";
        return 1;
    }
    auto log = journal::read_journal(*path);
    if (!log.ok()) {
        std::cerr << "error: " << log.err().message << "\n";
        return 1;
    }
    for (const auto& w : log->warnings) std::cerr << "warning: " << w << "\n";
    std::cout << render_timeline_text(*log);
    if (auto svg_path = args.get("svg")) {
        std::ofstream out(*svg_path, std::ios::binary | std::ios::trunc);
        out << render_timeline_svg(*log);
        out.close();
        if (!out) {
            std::cerr << "error: cannot write '" << *svg_path << "'\n";
            return 1;
        }
        std::cerr << "wrote " << *svg_path << "\n";
    }
    return 0;
}

}  // namespace

cli::command_spec make_runs_list_command() {
    cli::command_spec c;
    c.name = "runs list";
    c.summary = "list the recorded agent runs: id, agent, state, time to answer";
    c.options = {dir_option()};
    c.run = run_list;
    return c;
}

cli::command_spec make_runs_show_command() {
    cli::command_spec c;
    c.name = "runs show";
    c.summary = "show one run's timeline (text, and an SVG picture with --svg)";
    c.description =
        "Prints every event of the run in time order (time, lane, event, duration, detail) "
        "and idle gaps where neither the model nor a tool was busy. ID may be a unique prefix.";
    c.positionals = {{"ID", "run id (see `tachyon runs list`)"}};
    c.options = {dir_option(), {"svg", 0, cli::option_kind::value, "FILE", "", "also draw the timeline to FILE as SVG"}};
    c.run = run_show;
    return c;
}

}  // namespace tachyon
