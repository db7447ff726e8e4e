#include "tools/logs/log_tools.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

#include <boost/regex.hpp>
#include <tbb/parallel_for.h>

#include "tools/logs/tool_text.h"

namespace tachyon::tools {

result<std::string> log_tool::invoke(std::string_view arguments_json, const call_context& ctx) {
    try {
        auto args = tool_args::parse(name(), arguments_json, argument_names());
        if (!args) return args.err();
        std::shared_ptr<log_store> store = get_store_();
        status loaded = store->ensure_loaded(ctx);
        if (!loaded) return make_error(loaded.err().code, std::string(name()) + ": " + loaded.err().message);
        return run(*store, *args, ctx);
    } catch (const std::exception& e) {
        return make_error(errc::internal, std::string(name()) + ": " + e.what());
    }
}

error log_tool::cancelled() const { return make_error(errc::cancelled, std::string(name()) + ": cancelled"); }

// -------------------------------------------------------------- list_services

std::string_view list_services_tool::name() const { return "list_services"; }
std::string_view list_services_tool::description() const {
    return "List services (log files and traces) and the caller -> callee edges seen in traces.";
}
std::string_view list_services_tool::parameters_schema() const {
    return R"({"type":"object","properties":{},"additionalProperties":false})";
}
std::vector<std::string_view> list_services_tool::argument_names() const { return {}; }

result<std::string> list_services_tool::run(const log_store& store, const tool_args&, const call_context&) {
    const auto& services = store.services();
    std::string out = "services (" + std::to_string(services.size()) + "):\n";
    std::size_t n = 0;
    for (const auto& s : services) {
        if (++n > 60) {
            out += "... " + std::to_string(services.size() - 60) + " more\n";
            break;
        }
        out += s.name;
        if (s.log_file >= 0) out += " lines=" + std::to_string(store.files()[std::size_t(s.log_file)]->n_lines);
        else out += " (no log file)";
        out += " spans=" + std::to_string(s.n_spans) + "\n";
    }
    const auto& edges = store.edges();
    out += "edges caller -> callee (" + std::to_string(edges.size()) + "):";
    if (edges.empty()) out += " none (no traces)";
    out += "\n";
    n = 0;
    for (const auto& [edge, count] : edges) {
        if (++n > 80) {
            out += "... " + std::to_string(edges.size() - 80) + " more\n";
            break;
        }
        out += services[edge.first].name + " -> " + services[edge.second].name + " (" + std::to_string(count) +
               " calls)\n";
    }
    return out;
}

// -------------------------------------------------------------- error_summary

std::string_view error_summary_tool::name() const { return "error_summary"; }
std::string_view error_summary_tool::description() const {
    return "Errors and warnings per service: counts, first error time, top messages, a failing trace id, callees.";
}
std::string_view error_summary_tool::parameters_schema() const {
    return R"({"type":"object","properties":{"service":{"type":"string","x-grounded":true},"since":{"type":"string"},"until":{"type":"string"},"bucket_minutes":{"type":"integer","minimum":1,"maximum":60}},"required":[],"additionalProperties":false})";
}
std::vector<std::string_view> error_summary_tool::argument_names() const {
    return {"service", "since", "until", "bucket_minutes"};
}

namespace {

struct message_count {
    std::string text;
    std::uint64_t n = 0;
    std::size_t first = 0;  // order of first sighting, to break ties
};

std::string clock_of(std::int64_t ms) { return format_time(ms).substr(11, 5); }  // "14:05"

// A masked message without its trace id, so that the same failure with and
// without an id counts once.
std::string summary_text(std::string_view message) {
    std::string text = mask_message(message, 120);
    for (std::string_view tag : {" trace=<id>", " trace_id=<id>", " traceId=<id>"})
        for (auto at = text.find(tag); at != std::string::npos; at = text.find(tag)) text.erase(at, tag.size());
    return text;
}

}  // namespace

result<std::string> error_summary_tool::run(const log_store& store, const tool_args& args, const call_context& ctx) {
    auto service = service_argument(args, "service", store);
    if (!service) return service.err();
    auto since = time_argument(args, "since", store);
    if (!since) return since.err();
    auto until = time_argument(args, "until", store);
    if (!until) return until.err();
    auto bucket = args.integer("bucket_minutes", 1, 60);
    if (!bucket) return bucket.err();
    auto health = store.health(*since, *until, ctx);
    if (!health) return make_error(health.err().code, "error_summary: " + health.err().message);

    const auto& services = store.services();
    std::vector<std::size_t> order;
    for (std::size_t s = 0; s < services.size(); ++s) {
        if (*service >= 0 && s != std::size_t(*service)) continue;
        const auto& h = (*health)[s];
        if (h.n_error > 0 || h.n_warn > 0 || h.first_error_ms != no_time || *service >= 0) order.push_back(s);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        auto ta = (*health)[a].first_error_ms, tb = (*health)[b].first_error_ms;
        if ((ta == no_time) != (tb == no_time)) return tb == no_time;
        return ta < tb;
    });

    std::int64_t from = *since != no_time ? *since : store.first_time();
    std::int64_t to = *until != no_time ? *until : store.last_time();
    std::string out = "window " + format_time(from) + " .. " + format_time(to) + "\n";
    if (order.empty()) out += "no errors or warnings\n";
    auto in_window = [&](std::int64_t ts) {
        return ts != no_time ? (*since == no_time || ts >= *since) && (*until == no_time || ts <= *until)
                             : *since == no_time && *until == no_time;
    };
    constexpr std::size_t max_services = 20;
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (k == max_services) {
            out += "... " + std::to_string(order.size() - max_services) + " more services with errors\n";
            break;
        }
        if (ctx.cancelled()) return cancelled();
        std::size_t s = order[k];
        const service_health& h = (*health)[s];
        out += services[s].name + ": " + std::to_string(h.n_error) + " errors, " + std::to_string(h.n_warn) + " warns";
        if (h.first_error_ms != no_time) {
            out += ", first error " + format_time(h.first_error_ms);
            if (h.onset_ms != no_time && h.onset_ms != h.first_error_ms)
                out += " (sustained from " + format_time(h.onset_ms) + ")";
        }
        if (!h.example_trace.empty()) out += ", trace " + h.example_trace;
        std::string callees;
        for (const auto& [edge, n] : store.edges())
            if (edge.first == s) callees += (callees.empty() ? "" : ",") + services[edge.second].name;
        out += ", calls " + (callees.empty() ? std::string("-") : callees) + "\n";

        // top messages, numbers masked; errors if any, else warnings
        log_level wanted = h.n_error > 0 ? log_level::error : log_level::warn;
        std::unordered_map<std::string, message_count> counts;
        std::vector<std::uint64_t> buckets;
        std::int64_t bucket_ms = bucket->has_value() ? **bucket * 60000 : 0;
        std::int64_t bucket_base = 0;
        if (bucket_ms > 0 && from != no_time) {
            bucket_base = from - ((from % bucket_ms) + bucket_ms) % bucket_ms;
            buckets.assign(std::size_t(std::min<std::int64_t>((to - bucket_base) / bucket_ms + 1, 48)), 0);
        }
        if (services[s].log_file >= 0) {
            const log_file& f = *store.files()[std::size_t(services[s].log_file)];
            for (const auto& e : f.entries) {
                if (e.level < log_level::warn || !in_window(e.ts_ms)) continue;
                if (e.level == log_level::error && !buckets.empty() && e.ts_ms != no_time) {
                    auto b = std::size_t((e.ts_ms - bucket_base) / bucket_ms);
                    if (b < buckets.size()) buckets[b]++;
                }
                if (e.level != wanted) continue;
                auto text = summary_text(f.message(e));
                auto [it, added] = counts.try_emplace(text, message_count{text, 0, counts.size()});
                it->second.n++;
            }
        }
        if (counts.empty()) {
            for (const auto& sp : store.spans()) {
                if (sp.service != s || !sp.failed || !in_window(sp.start_ms)) continue;
                auto text = mask_message("span " + sp.operation + ": " + sp.error, 120);
                auto [it, added] = counts.try_emplace(text, message_count{text, 0, counts.size()});
                it->second.n++;
            }
        }
        std::vector<message_count> top;
        for (auto& [text, c] : counts) top.push_back(c);
        std::sort(top.begin(), top.end(), [](const message_count& a, const message_count& b) {
            return a.n != b.n ? a.n > b.n : a.first < b.first;
        });
        for (std::size_t i = 0; i < top.size() && i < 3; ++i)
            out += "  " + std::to_string(top[i].n) + "x " + top[i].text + "\n";
        if (top.size() > 3) out += "  ... " + std::to_string(top.size() - 3) + " more distinct messages\n";
        if (!buckets.empty()) {
            out += "  errors per " + std::to_string(**bucket) + "m from " + clock_of(bucket_base) + ":";
            for (auto n : buckets) out += " " + std::to_string(n);
            out += "\n";
        }
    }
    if (*service < 0) {
        std::string quiet;
        for (std::size_t s = 0; s < services.size(); ++s)
            if (std::find(order.begin(), order.end(), s) == order.end()) quiet += (quiet.empty() ? "" : ", ") + services[s].name;
        if (!quiet.empty()) out += "no errors or warnings: " + quiet + "\n";
    }
    return out;
}

// ---------------------------------------------------------------- search_logs

std::string_view search_logs_tool::name() const { return "search_logs"; }
std::string_view search_logs_tool::description() const {
    return "Find log entries by text or regex, service, minimum level and time; earliest first, each with its line id and time.";
}
std::string_view search_logs_tool::parameters_schema() const {
    return R"({"type":"object","properties":{"pattern":{"type":"string"},"regex":{"type":"string"},"service":{"type":"string","x-grounded":true},"level":{"type":"string","enum":["ERROR","WARN","INFO","DEBUG"]},"since":{"type":"string"},"until":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":50}},"required":[],"additionalProperties":false})";
}
std::vector<std::string_view> search_logs_tool::argument_names() const {
    return {"pattern", "regex", "service", "level", "since", "until", "limit"};
}

namespace {

struct hit {
    std::int64_t ts;
    std::uint32_t file;
    std::uint32_t entry;
};

bool hit_before(const hit& a, const hit& b) {
    // entries without a time sort after the stamped ones
    if (a.ts != b.ts) return a.ts == no_time ? false : b.ts == no_time ? true : a.ts < b.ts;
    if (a.file != b.file) return a.file < b.file;
    return a.entry < b.entry;
}

char fold(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }
struct fold_hash {
    std::size_t operator()(char c) const { return std::hash<char>()(fold(c)); }
};
struct fold_equal {
    bool operator()(char a, char b) const { return fold(a) == fold(b); }
};

}  // namespace

result<std::string> search_logs_tool::run(const log_store& store, const tool_args& args, const call_context& ctx) {
    auto pattern = args.string("pattern");
    if (!pattern) return pattern.err();
    auto regex_text = args.string("regex");
    if (!regex_text) return regex_text.err();
    if (pattern->has_value() && regex_text->has_value()) return args.fail("give 'pattern' or 'regex', not both");
    auto service = service_argument(args, "service", store);
    if (!service) return service.err();
    auto level_text = args.string("level");
    if (!level_text) return level_text.err();
    log_level min_level = log_level::none;
    if (level_text->has_value()) {
        auto l = parse_level_word(**level_text);
        const std::string& t = **level_text;
        bool listed = false;
        for (std::string_view w : {"ERROR", "WARN", "INFO", "DEBUG"})
            listed |= t.size() == w.size() && std::equal(t.begin(), t.end(), w.begin(), fold_equal{});
        if (!l || !listed) return args.fail("'level' must be one of ERROR, WARN, INFO, DEBUG; got '" + cut(t, 40) + "'");
        min_level = *l;
    }
    auto since = time_argument(args, "since", store);
    if (!since) return since.err();
    auto until = time_argument(args, "until", store);
    if (!until) return until.err();
    auto limit_arg = args.integer("limit", 1, 50);
    if (!limit_arg) return limit_arg.err();
    std::size_t limit = std::size_t(limit_arg->value_or(10));

    std::optional<boost::regex> regex;
    if (regex_text->has_value()) {
        try {
            regex.emplace(**regex_text, boost::regex::perl);
        } catch (const boost::regex_error& e) {
            std::string why = e.what();
            if (auto dot = why.find(".  "); dot != std::string::npos) why.resize(dot);  // drop Boost's echo of the pattern
            return args.fail("bad regex '" + cut(**regex_text, 80) + "': " + why);
        }
    }
    std::string needle = pattern->value_or("");
    std::boyer_moore_horspool_searcher<std::string::const_iterator, fold_hash, fold_equal> searcher(needle.begin(),
                                                                                                   needle.end());
    const auto& services = store.services();
    if (*service >= 0 && services[std::size_t(*service)].log_file < 0)
        return args.fail("service '" + services[std::size_t(*service)].name + "' has no log file (it appears only in traces; try get_trace)");

    const auto& files = store.files();
    std::vector<std::vector<hit>> per_file(files.size());  // [n_file][<= limit]
    std::vector<std::uint64_t> n_match(files.size(), 0);
    std::vector<std::string> regex_errors(files.size());
    tbb::parallel_for(std::size_t(0), files.size(), [&](std::size_t fi) {
        if (*service >= 0 && int(fi) != services[std::size_t(*service)].log_file) return;
        const log_file& f = *files[fi];
        auto& hits = per_file[fi];
        for (std::size_t i = 0; i < f.entries.size(); ++i) {
            if ((i & 1023) == 0 && ctx.cancelled()) return;
            const log_entry& e = f.entries[i];
            if (min_level != log_level::none && e.level < min_level) continue;
            if (*since != no_time && (e.ts_ms == no_time || e.ts_ms < *since)) continue;
            if (*until != no_time && (e.ts_ms == no_time || e.ts_ms > *until)) continue;
            std::string_view text = f.entry_text(i);
            if (!needle.empty() && std::search(text.begin(), text.end(), searcher) == text.end()) continue;
            if (regex) {
                try {
                    if (!boost::regex_search(text.begin(), text.end(), *regex)) continue;
                } catch (const std::exception& ex) {  // too complex for this line
                    regex_errors[fi] = ex.what();
                    return;
                }
            }
            ++n_match[fi];
            hits.push_back(hit{e.ts_ms, std::uint32_t(fi), std::uint32_t(i)});
            if (hits.size() >= 4 * limit) {  // keep the earliest `limit`
                std::partial_sort(hits.begin(), hits.begin() + std::ptrdiff_t(limit), hits.end(), hit_before);
                hits.resize(limit);
            }
        }
    });
    if (ctx.cancelled()) return cancelled();
    for (const auto& e : regex_errors)
        if (!e.empty()) return args.fail("regex '" + cut(**regex_text, 80) + "' failed: " + e);

    std::vector<hit> all;
    std::uint64_t total = 0;
    for (std::size_t fi = 0; fi < files.size(); ++fi) {
        all.insert(all.end(), per_file[fi].begin(), per_file[fi].end());
        total += n_match[fi];
    }
    std::sort(all.begin(), all.end(), hit_before);
    if (all.size() > limit) all.resize(limit);
    if (all.empty()) return std::string("no matching log entries\n");
    std::string out;
    for (const auto& h : all) {
        const log_file& f = *files[h.file];
        const log_entry& e = f.entries[h.entry];
        // the entry's time in one format whatever the file's (syslog has no
        // year or milliseconds, access logs their own layout), so lines of
        // different services compare at a glance; not repeated when the line
        // already shows it
        std::string_view text = f.first_line(e);
        std::string stamp = e.ts_ms == no_time ? std::string() : format_time(e.ts_ms);
        if (!stamp.empty() && text.find(stamp) == std::string_view::npos) out += line_id(f.service, e.line) + " " + stamp + " " + cut(text) + "\n";
        else out += line_id(f.service, e.line) + " " + cut(text) + "\n";
    }
    if (total > all.size())
        out += "... " + std::to_string(total - all.size()) + " more (" + std::to_string(total) +
               " matches; narrow with service/level/since/until)\n";
    return out;
}

// ----------------------------------------------------------------- read_lines

std::string_view read_lines_tool::name() const { return "read_lines"; }
std::string_view read_lines_tool::description() const {
    return "Show the lines around a line id such as checkout:120.";
}
std::string_view read_lines_tool::parameters_schema() const {
    return R"({"type":"object","properties":{"id":{"type":"string","x-grounded":true},"before":{"type":"integer","minimum":0,"maximum":50},"after":{"type":"integer","minimum":0,"maximum":50}},"required":["id"],"additionalProperties":false})";
}
std::vector<std::string_view> read_lines_tool::argument_names() const { return {"id", "before", "after"}; }

result<std::string> read_lines_tool::run(const log_store& store, const tool_args& args, const call_context&) {
    auto id = args.required_string("id");
    if (!id) return id.err();
    auto before = args.integer("before", 0, 50);
    if (!before) return before.err();
    auto after = args.integer("after", 0, 50);
    if (!after) return after.err();
    auto parsed = parse_line_id(*id);
    if (!parsed) return args.fail("'id' must be a line id like checkout:120; got '" + cut(*id, 60) + "'");
    const log_file* f = store.find_file(parsed->first);
    if (f == nullptr) return args.fail(unknown_service_message(parsed->first, store));
    if (parsed->second > f->n_lines)
        return args.fail(f->service + " has " + std::to_string(f->n_lines) + " lines; got line " +
                         std::to_string(parsed->second));
    std::uint32_t target = parsed->second;
    std::uint32_t first = target > std::uint32_t(before->value_or(5)) ? target - std::uint32_t(before->value_or(5)) : 1;
    std::uint32_t last = std::min<std::uint32_t>(f->n_lines, target + std::uint32_t(after->value_or(5)));
    std::string out;
    for (std::uint32_t l = first; l <= last; ++l)
        out += (l == target ? "> " : "  ") + line_id(f->service, l) + " " + cut(f->line_text(l)) + "\n";
    return out;
}

}  // namespace tachyon::tools
