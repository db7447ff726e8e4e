// `tachyon logs inspect DIR|FILE [--json]` and `tachyon logs parse FILE
// [--json]`: what the log tools make of a directory or a file, per file
// (format, entries, levels, time range, lines the formats could not place)
// and per entry (id, lines, UTC time, level, source, message).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include <sys/stat.h>

#include "runtime/cli/cli.h"
#include "runtime/common/json_util.h"
#include "tools/logformat/log_reader.h"
#include "tools/logs/builtin.h"
#include "tools/logs/log_store.h"

namespace tachyon {
namespace {

using json::quote;
using json::sanitize_utf8;
namespace fs = std::filesystem;
using namespace tachyon::logformat;

using cli::exit_failed;
using cli::exit_usage;

int complain(int code, const std::string& command, const std::string& message) {
    std::cerr << "tachyon logs " << command << ": " << message << "\n";
    return code;
}

result<std::string> read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(errc::io_error, path.string() + ": cannot open");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The files the log tools read under `root` (as log_store does): logs/*.log,
// .txt, .jsonl, .json when there is a logs/, else the root's own *.log and
// *.txt; never answer.json.
std::vector<fs::path> log_files(const fs::path& root) {
    std::error_code ec;
    const bool has_logs = fs::is_directory(root / "logs", ec);
    fs::path dir = has_logs ? root / "logs" : root;
    std::vector<fs::path> out;
    for (const auto& item : fs::directory_iterator(dir, ec)) {
        if (!item.is_regular_file(ec) || item.path().filename() == "answer.json") continue;
        std::string ext = item.path().extension().string();
        if (ext == ".log" || ext == ".txt" || (has_logs && (ext == ".jsonl" || ext == ".json"))) out.push_back(item.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

result<time_hints> hints_of(const cli::parsed_args& args, const fs::path& path) {
    std::map<std::string, std::string> settings;
    if (auto y = args.get("year")) settings["year"] = *y;
    if (auto z = args.get("tz")) settings["tz"] = *z;
    auto options = tools::log_store_options_from(settings);
    if (!options) return options.err();
    time_hints hints;
    hints.year = options->year;
    hints.zone_minutes = options->zone_minutes;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0)
        hints.mtime_us = std::int64_t(st.st_mtim.tv_sec) * 1000000 + st.st_mtim.tv_nsec / 1000;
    return hints;
}

std::string inspect_one(const fs::path& path, const std::string& text, const parsed_log& log, bool json) {
    std::uint64_t levels[n_severity] = {};
    std::uint64_t no_time_lines = 0, no_level_lines = 0;
    std::int64_t first = no_time, last = no_time;
    for (const auto& r : log.records) {
        levels[int(r.level)]++;
        if (r.time == time_kind::none) ++no_time_lines;
        if (r.level == severity::unknown) ++no_level_lines;
        if (r.time != time_kind::none && r.time_us != no_time) {
            if (first == no_time || r.time_us < first) first = r.time_us;
            if (last == no_time || r.time_us > last) last = r.time_us;
        }
    }
    (void)text;
    const std::string name = tools::normalise_service_name(path.stem().string());
    std::string out;
    if (json) {
        out = "{\"file\":" + quote(path.string()) + ",\"service\":" + quote(name) + ",\"format\":" +
              quote(format_name(log.format)) + ",\"lines\":" + std::to_string(log.n_lines) +
              ",\"entries\":" + std::to_string(log.records.size()) + ",\"levels\":{";
        bool any = false;
        for (int l = 0; l < n_severity; ++l) {
            if (levels[l] == 0) continue;
            out += std::string(any ? "," : "") + quote(to_string(severity(l))) + ":" + std::to_string(levels[l]);
            any = true;
        }
        out += "},\"first_time\":" + (first == no_time ? std::string("null") : quote(format_iso(first))) +
               ",\"last_time\":" + (last == no_time ? std::string("null") : quote(format_iso(last))) +
               ",\"entries_without_time\":" + std::to_string(no_time_lines) +
               ",\"entries_without_level\":" + std::to_string(no_level_lines) + "}\n";
        return out;
    }
    out = name + " (" + path.filename().string() + "): format " + std::string(format_name(log.format)) + ", " +
          std::to_string(log.n_lines) + " lines, " + std::to_string(log.records.size()) + " entries\n  levels:";
    for (int l = 0; l < n_severity; ++l)
        if (levels[l] > 0) out += " " + std::string(to_string(severity(l))) + "=" + std::to_string(levels[l]);
    out += "\n  time: " + format_iso(first) + " .. " + format_iso(last) + "\n  without a time: " +
           std::to_string(no_time_lines) + " entries, without a level: " + std::to_string(no_level_lines) + " entries\n";
    return out;
}

int run_logs_inspect(const cli::parsed_args& args) {
    auto target = args.positional(0);
    if (!target) return complain(exit_usage, "inspect", "needs DIR or FILE");
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(*target, ec)) files = log_files(*target);
    else if (fs::is_regular_file(*target, ec)) files = {fs::path(*target)};
    else return complain(exit_failed, "inspect", "'" + *target + "' is neither a directory nor a file");
    if (files.empty()) return complain(exit_failed, "inspect", "'" + *target + "' holds no *.log, *.txt, *.jsonl or *.json files");
    // every file scanned first: stamps without a year take the one year the
    // directory's other files share, as the log tools settle them
    std::vector<std::string> texts;
    std::vector<parsed_log> logs;
    std::vector<int> years;
    line_parser scratch;
    for (const auto& path : files) {
        auto text = read_text(path);
        if (!text) return complain(exit_failed, "inspect", text.err().message);
        parsed_log log;
        log.format = detect_format(*text, scratch);
        log.n_lines = scan_records(*text, 0, text->size(), log.format, scratch, log.records);
        for (const auto& r : log.records)
            if (r.time == time_kind::absolute || r.time == time_kind::local) {
                years.push_back(year_of(r.time_us));
                break;
            }
        texts.push_back(std::move(*text));
        logs.push_back(std::move(log));
    }
    std::optional<int> context_year;
    if (!years.empty() && std::all_of(years.begin(), years.end(), [&](int y) { return y == years.front(); }))
        context_year = years.front();
    for (std::size_t i = 0; i < files.size(); ++i) {
        auto hints = hints_of(args, files[i]);
        if (!hints) return complain(exit_usage, "inspect", hints.err().message);
        hints->context_year = context_year;
        resolve_times(logs[i].records, *hints);
        std::cout << inspect_one(files[i], texts[i], logs[i], args.flag("json"));
    }
    return 0;
}

int run_parse(const cli::parsed_args& args) {
    auto target = args.positional(0);
    if (!target) return complain(exit_usage, "parse", "needs FILE");
    std::error_code ec;
    if (!fs::is_regular_file(*target, ec)) return complain(exit_failed, "parse", "'" + *target + "' is not a file");
    auto text = read_text(*target);
    if (!text) return complain(exit_failed, "parse", text.err().message);
    auto hints = hints_of(args, *target);
    if (!hints) return complain(exit_usage, "parse", hints.err().message);
    parsed_log log = read_log(*text, *hints);
    const std::string name = tools::normalise_service_name(fs::path(*target).stem().string());
    const bool json = args.flag("json");
    std::string out;
    for (const auto& r : log.records) {
        std::string_view line = std::string_view(*text).substr(r.offset, r.first_len);
        std::string id = name + ":" + std::to_string(r.first_line);
        std::string time = format_iso(r.time_us);
        // a message read from a JSON or logfmt string, as the text it stands for (quote() escapes it once)
        auto text_of = [&](text_span s) { return sanitize_utf8(r.escaped ? unescape(s.in(line)) : std::string(s.in(line))); };
        const std::string message = text_of(r.message);
        if (!json) {
            std::string one_line = message;  // an unescaped "\n" must not start a line of its own
            for (char& c : one_line)
                if (static_cast<unsigned char>(c) < 0x20) c = ' ';
            out += id + " " + time + " " + std::string(to_string(r.level)) + " " + one_line + "\n";
        } else {
            out += "{\"id\":" + quote(id) + ",\"first_line\":" + std::to_string(r.first_line) + ",\"last_line\":" +
                   std::to_string(r.last_line) + ",\"format\":" + quote(format_name(r.format)) + ",\"time\":" +
                   (r.time_us == no_time ? std::string("null") : quote(time)) +
                   ",\"time_inferred\":" + (r.time_inferred ? "true" : "false") + ",\"level\":" +
                   quote(to_string(r.level)) + ",\"source\":{";
            bool any = false;
            auto field = [&](const char* key, text_span s) {
                if (s.empty()) return;
                out += std::string(any ? "," : "") + "\"" + key + "\":" + quote(text_of(s));
                any = true;
            };
            field("service", r.service), field("component", r.component), field("host", r.host);
            field("pid", r.pid), field("thread", r.thread);
            out += "},\"message\":" + quote(message) + "}\n";
        }
        if (out.size() > (1u << 20)) {
            std::cout << out;
            out.clear();
        }
    }
    std::cout << out;
    return 0;
}

std::vector<cli::option_spec> hint_options() {
    return {
        {"year", 0, cli::option_kind::value, "YYYY", "", "the year of stamps that carry none (default: from the file)"},
        {"tz", 0, cli::option_kind::value, "ZONE", "", "the zone of stamps that carry none: UTC, +02:00, -0700 (default UTC)"},
    };
}

}  // namespace

cli::command_spec make_logs_inspect_command() {
    cli::command_spec c;
    c.name = "logs inspect";
    c.summary = "show how the log tools read a directory or file: format, entries, levels, time range";
    c.description =
        "For each log file of DIR (its logs/ folder when there is one) or for FILE: the format recognised, lines, "
        "entries (a stack trace is one entry), the level histogram, the time range in UTC, and the entries the "
        "formats gave no time or no level. --json prints one JSON object per file.";
    c.positionals = {{"DIR|FILE", "an incident directory or one log file"}};
    c.options = hint_options();
    c.options.push_back({"json", 0, cli::option_kind::flag, "", "", "one JSON object per file"});
    c.run = run_logs_inspect;
    return c;
}

cli::command_spec make_logs_parse_command() {
    cli::command_spec c;
    c.name = "logs parse";
    c.summary = "print the entries of one log file: id, lines, UTC time, level, source, message";
    c.description =
        "Reads FILE as the log tools do and prints each entry: its id (service:line, as the tools cite it), "
        "first and last line, time in ISO-8601 UTC, normalised level, source (service, component, host, pid, "
        "thread) and message. --json prints one JSON object per entry.";
    c.positionals = {{"FILE", "one log file"}};
    c.options = hint_options();
    c.options.push_back({"json", 0, cli::option_kind::flag, "", "", "one JSON object per entry"});
    c.run = run_parse;
    return c;
}

}  // namespace tachyon
