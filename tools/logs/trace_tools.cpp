// get_trace, recent_changes and verify_root_cause (declared in log_tools.h).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <unordered_map>

#include "tools/logs/log_tools.h"
#include "tools/logs/tool_text.h"

namespace tachyon::tools {

// ------------------------------------------------------------------ get_trace

std::string_view get_trace_tool::name() const { return "get_trace"; }
std::string_view get_trace_tool::description() const {
    return "Show a trace as a span tree with durations and statuses; marks the deepest failing span.";
}
std::string_view get_trace_tool::parameters_schema() const {
    return R"({"type":"object","properties":{"trace_id":{"type":"string","x-grounded":true}},"required":["trace_id"],"additionalProperties":false})";
}
std::vector<std::string_view> get_trace_tool::argument_names() const { return {"trace_id"}; }

namespace {
std::string format_ms(double ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fms", ms);
    return buf;
}
}  // namespace

result<std::string> get_trace_tool::run(const log_store& store, const tool_args& args, const call_context&) {
    auto id = args.required_string("trace_id");
    if (!id) return id.err();
    auto spans = store.trace(*id);
    if (spans.empty()) {
        if (store.spans().empty()) return args.fail("no traces were recorded (traces/ is empty or absent)");
        return args.fail("no trace with id '" + cut(*id, 40) + "' (copy an id from error_summary or a log line)");
    }
    // children by parent span id; a span whose parent is missing is a root
    std::unordered_map<std::string_view, std::size_t> index;
    for (std::size_t i = 0; i < spans.size(); ++i) index.emplace(spans[i]->span_id, i);
    std::vector<std::vector<std::size_t>> children(spans.size());
    std::vector<std::size_t> roots;
    for (std::size_t i = 0; i < spans.size(); ++i) {  // spans come sorted by start time
        auto it = spans[i]->parent_id.empty() ? index.end() : index.find(spans[i]->parent_id);
        if (it == index.end() || it->second == i) roots.push_back(i);
        else children[it->second].push_back(i);
    }
    // depth-first order, guarding against cycles in malformed data
    std::vector<std::pair<std::size_t, std::size_t>> order;  // (span, depth)
    std::vector<bool> seen(spans.size(), false);
    std::function<void(std::size_t, std::size_t)> visit = [&](std::size_t i, std::size_t depth) {
        if (seen[i]) return;
        seen[i] = true;
        order.emplace_back(i, depth);
        for (std::size_t c : children[i]) visit(c, depth + 1);
    };
    for (std::size_t r : roots) visit(r, 0);
    for (std::size_t i = 0; i < spans.size(); ++i) visit(i, 0);  // spans only reachable through a cycle

    std::size_t deepest = order.size();
    std::size_t n_failed = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (!spans[order[k].first]->failed) continue;
        ++n_failed;
        if (deepest == order.size() || order[k].second > order[deepest].second) deepest = k;
    }
    const auto& services = store.services();
    const span& root = *spans[order.front().first];
    std::string out = "trace " + root.trace_id + ": " + std::to_string(spans.size()) + " spans, start " +
                      format_time(root.start_ms) + ", " + format_ms(root.duration_ms) + ", " +
                      std::to_string(n_failed) + " failed\n";
    constexpr std::size_t max_spans = 60;
    for (std::size_t k = 0; k < order.size() && k < max_spans; ++k) {
        const span& s = *spans[order[k].first];
        out += std::string(2 * std::min<std::size_t>(order[k].second, 20), ' ') + services[s.service].name + " " +
               cut(s.operation, 60) + " " + format_ms(s.duration_ms) + " " + (s.failed ? "error" : "ok");
        if (!s.error.empty()) out += " \"" + cut(s.error, 100) + "\"";
        if (k == deepest) out += " <- deepest error";
        out += "\n";
    }
    if (order.size() > max_spans) out += "... " + std::to_string(order.size() - max_spans) + " more spans\n";
    return out;
}

// ------------------------------------------------------------- recent_changes

std::string_view recent_changes_tool::name() const { return "recent_changes"; }
std::string_view recent_changes_tool::description() const {
    return "Deploys, config changes, feature flags and scaling events, newest last.";
}
std::string_view recent_changes_tool::parameters_schema() const {
    return R"({"type":"object","properties":{"service":{"type":"string","x-grounded":true},"since":{"type":"string"}},"required":[],"additionalProperties":false})";
}
std::vector<std::string_view> recent_changes_tool::argument_names() const { return {"service", "since"}; }

namespace {

bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
}

bool has_word(std::string_view text, std::string_view word) {
    for (std::size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
        bool left = at == 0 || !word_char(text[at - 1]);
        std::size_t end = at + word.size();
        // a trailing '.' ends a sentence, not the name
        bool right = end == text.size() || !word_char(text[end]) ||
                     (text[end] == '.' && (end + 1 == text.size() || !word_char(text[end + 1])));
        if (left && right) return true;
    }
    return false;
}

// Log lines that announce a change (the change files hold the rest).
bool looks_like_change(std::string_view line) {
    static constexpr std::string_view keys[] = {"deploy",        "rollout",        "rolled out", "rolled back",
                                                "config reload", "config change",  "configuration change",
                                                "reloaded config", "feature flag", "scaled to",  "scaling to"};
    std::string lower;
    lower.reserve(line.size());
    for (char c : line) lower += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    for (auto k : keys)
        if (lower.find(k) != std::string::npos) return true;
    return false;
}

struct change_item {
    std::int64_t ts;
    std::uint32_t group;  // 0: change files, 1: log files
    std::uint32_t file;
    std::uint32_t line;
    std::string text;
};

}  // namespace

result<std::string> recent_changes_tool::run(const log_store& store, const tool_args& args, const call_context& ctx) {
    auto service = service_argument(args, "service", store);
    if (!service) return service.err();
    auto since = time_argument(args, "since", store);
    if (!since) return since.err();
    std::string service_name = *service >= 0 ? store.services()[std::size_t(*service)].name : "";
    std::vector<change_item> items;
    auto keep_time = [&](std::int64_t ts) { return *since == no_time || (ts != no_time && ts >= *since); };
    const auto& change_files = store.change_files();
    for (std::size_t fi = 0; fi < change_files.size(); ++fi) {
        const log_file& f = *change_files[fi];
        for (std::size_t i = 0; i < f.entries.size(); ++i) {
            const log_entry& e = f.entries[i];
            std::string_view text = f.first_line(e);
            if (text.empty() || !keep_time(e.ts_ms)) continue;
            if (!service_name.empty() && !has_word(text, service_name)) continue;
            items.push_back(change_item{e.ts_ms, 0, std::uint32_t(fi), e.line, line_id(f.service, e.line) + " " + cut(text)});
        }
    }
    const auto& files = store.files();
    for (std::size_t fi = 0; fi < files.size(); ++fi) {
        const log_file& f = *files[fi];
        if (!service_name.empty() && f.service != service_name) continue;
        for (std::size_t i = 0; i < f.entries.size(); ++i) {
            if ((i & 4095) == 0 && ctx.cancelled()) return cancelled();
            const log_entry& e = f.entries[i];
            if (e.level == log_level::error || !keep_time(e.ts_ms)) continue;
            if (!looks_like_change(f.message(e))) continue;
            items.push_back(change_item{e.ts_ms, 1, std::uint32_t(fi), e.line, line_id(f.service, e.line) + " " + cut(f.first_line(e))});
        }
    }
    std::stable_sort(items.begin(), items.end(), [](const change_item& a, const change_item& b) {
        if (a.ts != b.ts) return a.ts == no_time ? true : b.ts == no_time ? false : a.ts < b.ts;
        if (a.group != b.group) return a.group < b.group;
        if (a.file != b.file) return a.file < b.file;
        return a.line < b.line;
    });
    if (items.empty()) return std::string("no changes found\n");
    constexpr std::size_t max_items = 30;
    std::string out;
    std::size_t skip = items.size() > max_items ? items.size() - max_items : 0;
    if (skip > 0) out += "... " + std::to_string(skip) + " earlier changes (narrow with since/service)\n";
    for (std::size_t i = skip; i < items.size(); ++i) out += items[i].text + "\n";
    return out;
}

// ---------------------------------------------------------- verify_root_cause

std::string_view verify_root_cause_tool::name() const { return "verify_root_cause"; }
std::string_view verify_root_cause_tool::description() const {
    return "Check a root-cause claim (service, evidence line ids) against logs and traces.";
}
std::string_view verify_root_cause_tool::parameters_schema() const {
    return R"({"type":"object","properties":{"service":{"type":"string","x-grounded":true},"fault_type":{"type":"string"},"first_bad_timestamp":{"type":"string"},"evidence":{"type":"array","items":{"type":"string","x-grounded":true},"minItems":1,"maxItems":10}},"required":["service","evidence"],"additionalProperties":false})";
}
std::vector<std::string_view> verify_root_cause_tool::argument_names() const {
    return {"service", "fault_type", "first_bad_timestamp", "evidence"};
}

result<std::string> verify_root_cause_tool::run(const log_store& store, const tool_args& args, const call_context& ctx) {
    // how far before the first failure evidence may lie: leading symptoms
    // (pool 90% used, slow queries) come a few minutes before errors
    constexpr std::int64_t window_margin_ms = 5 * 60000;
    // how far after the service's first error the claimed start may lie
    constexpr std::int64_t late_start_ms = 5 * 60000;

    auto claimed = args.required_string("service");
    if (!claimed) return claimed.err();
    auto fault_type = args.string("fault_type");
    if (!fault_type) return fault_type.err();
    auto first_bad = args.string("first_bad_timestamp");
    if (!first_bad) return first_bad.err();
    auto evidence = args.string_list("evidence", 10);
    if (!evidence) return evidence.err();

    std::vector<std::string> reasons;
    int s = store.find_service(*claimed);
    if (s < 0) {
        return "rejected: " + unknown_service_message(*claimed, store) + "\n";
    }
    auto health = store.health(no_time, no_time, ctx);
    if (!health) return make_error(health.err().code, "verify_root_cause: " + health.err().message);
    const auto& services = store.services();
    const service_health& h = (*health)[std::size_t(s)];
    // the claimed service's start: its first burst, or its first error
    std::int64_t claimed_start = h.onset_ms != no_time ? h.onset_ms : h.first_error_ms;
    if (h.first_error_ms == no_time) reasons.push_back(*claimed + " shows no error in logs or traces");

    // the incident window opens at the earliest failure anywhere, less a margin
    // (first bursts only: one isolated noise error must not open it early)
    std::int64_t earliest = no_time, earliest_isolated = no_time;
    for (const auto& other : *health) {
        if (other.onset_ms != no_time && (earliest == no_time || other.onset_ms < earliest)) earliest = other.onset_ms;
        if (other.first_error_ms != no_time && (earliest_isolated == no_time || other.first_error_ms < earliest_isolated))
            earliest_isolated = other.first_error_ms;
    }
    if (earliest == no_time) earliest = earliest_isolated;
    std::int64_t window_start = earliest == no_time ? no_time : earliest - window_margin_ms;

    if (evidence->empty()) reasons.push_back("no evidence: cite error or warning line ids of " + *claimed);
    for (const auto& id : *evidence) {
        auto parsed = parse_line_id(id);
        if (!parsed) {
            reasons.push_back("'" + cut(id, 60) + "' is not a line id (expected service:line)");
            continue;
        }
        const log_file* f = store.find_file(parsed->first);
        if (f == nullptr || parsed->second > f->n_lines) {
            reasons.push_back("'" + cut(id, 60) + "' does not exist" +
                              (f ? " (" + f->service + " has " + std::to_string(f->n_lines) + " lines)" : ""));
            continue;
        }
        if (f->service != *claimed) {
            reasons.push_back("'" + id + "' belongs to " + f->service + ", not " + *claimed);
            continue;
        }
        const log_entry& e = f->entries[f->entry_of_line(parsed->second)];
        if (e.level < log_level::warn)
            reasons.push_back("'" + id + "' is " + (e.level == log_level::none ? std::string("a line without level") :
                                                    "an " + std::string(to_string(e.level)) + " line") +
                              ", not an error or warning");
        else if (window_start != no_time && e.ts_ms != no_time && e.ts_ms < window_start)
            reasons.push_back("'" + id + "' at " + format_time(e.ts_ms) + " is before the incident window (from " +
                              format_time(window_start) + ")");
    }

    if (first_bad->has_value()) {
        auto t = parse_time_argument(**first_bad, store.first_time());
        if (!t) reasons.push_back("first_bad_timestamp '" + cut(**first_bad, 40) + "' is not a UTC time");
        else if (window_start != no_time && *t < window_start)
            reasons.push_back("first_bad_timestamp " + format_time(*t) + " is before the incident window (from " +
                              format_time(window_start) + ")");
        else if (claimed_start != no_time && *t > claimed_start + late_start_ms)
            reasons.push_back("first_bad_timestamp " + format_time(*t) + " is after " + *claimed +
                              " started failing at " + format_time(claimed_start));
    }
    if (fault_type->has_value()) {
        const std::string& ft = **fault_type;
        bool ok = !ft.empty() && ft.size() <= 64 &&
                  std::all_of(ft.begin(), ft.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
        if (!ok) reasons.push_back("fault_type '" + cut(ft, 40) + "' must be a snake_case label such as connection_pool_exhaustion");
    }

    // a dependency that failed first is the better candidate
    auto callees = store.callees_transitive(std::uint32_t(s));
    if (claimed_start != no_time) {
        for (std::uint32_t c : callees) {
            const service_health& ch = (*health)[c];
            if (ch.onset_ms != no_time && ch.onset_ms < claimed_start)
                reasons.push_back(*claimed + " depends on " + services[c].name + ", which started failing earlier (" +
                                  format_time(ch.onset_ms) + " < " + format_time(claimed_start) + ")");
        }
    }

    if (!reasons.empty()) {
        std::string out = "rejected: ";
        for (std::size_t i = 0; i < reasons.size(); ++i) out += (i ? "; " : "") + reasons[i];
        return out + "\n";
    }
    std::string deps;
    for (std::uint32_t c : callees) deps += (deps.empty() ? "" : ", ") + services[c].name;
    return "verified: " + *claimed + " started failing at " + format_time(claimed_start) + "; " +
           std::to_string(evidence->size()) + " evidence lines are its errors/warnings in the incident window; " +
           (deps.empty() ? std::string("it calls no other service") : "none of its dependencies (" + deps + ") failed earlier") +
           "\n";
}

}  // namespace tachyon::tools
