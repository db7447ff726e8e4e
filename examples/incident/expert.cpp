#include "examples/incident/expert.h"

#include <algorithm>
#include <cctype>
#include <ctime>

#include "examples/incident/json_text.h"

namespace incident {
namespace {

namespace tt = tachyon::tools;

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        out.push_back(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return out;
}

// The text after `key` up to the next ',' ' ' or end.
std::string field_after(std::string_view line, std::string_view key) {
    const size_t at = line.find(key);
    if (at == std::string_view::npos) return "";
    std::string_view rest = line.substr(at + key.size());
    const size_t end = rest.find_first_of(", \n");
    return std::string(rest.substr(0, end));
}

// One service row of error_summary: "checkout: 12 errors, 3 warns, first error T, trace X, calls a,b"
struct summary_row {
    std::string service;
    std::string first_error;
    std::string trace;
};

std::vector<summary_row> parse_error_summary(std::string_view text, std::vector<std::string>& all_services) {
    std::vector<summary_row> rows;
    for (auto line : split_lines(text)) {
        if (line.empty() || line[0] == ' ') continue;
        const std::string_view quiet = "no errors or warnings: ";
        if (line.substr(0, quiet.size()) == quiet) {
            std::string_view rest = line.substr(quiet.size());
            while (!rest.empty()) {
                const size_t comma = rest.find(", ");
                all_services.emplace_back(rest.substr(0, comma));
                if (comma == std::string_view::npos) break;
                rest.remove_prefix(comma + 2);
            }
            continue;
        }
        const size_t colon = line.find(": ");
        if (colon == std::string_view::npos || line.find(" errors, ") == std::string_view::npos) continue;
        summary_row r;
        r.service = std::string(line.substr(0, colon));
        r.first_error = field_after(line, "first error ");
        r.trace = field_after(line, ", trace ");
        all_services.push_back(r.service);
        rows.push_back(std::move(r));
    }
    return rows;
}

// The service named in the task: the longest service name that occurs in it
// as a whole word.
std::string symptom_of(const std::string& task, const std::vector<std::string>& services) {
    std::string best;
    for (const auto& s : services) {
        for (size_t at = task.find(s); at != std::string::npos; at = task.find(s, at + 1)) {
            const bool left = at == 0 || !(std::isalnum(static_cast<unsigned char>(task[at - 1])) || task[at - 1] == '-');
            const size_t e = at + s.size();
            const bool right = e >= task.size() || !(std::isalnum(static_cast<unsigned char>(task[e])) || task[e] == '-');
            if (left && right && s.size() > best.size()) best = s;
        }
    }
    return best;
}

// get_trace: the deepest failing span's service and its caller's.
struct trace_finding {
    std::string deepest;
    std::string caller;
    std::vector<std::string> failing;  // services of failing spans, top down
};

trace_finding parse_trace(std::string_view text) {
    struct row {
        size_t indent;
        std::string service;
    };
    std::vector<row> rows;
    trace_finding f;
    bool header = true;
    for (auto line : split_lines(text)) {
        if (header) {  // "trace <id>: ..."
            header = false;
            continue;
        }
        const size_t indent = line.find_first_not_of(' ');
        if (indent == std::string_view::npos || line.substr(indent, 3) == "...") continue;
        const size_t end = line.find(' ', indent);
        row r{indent, std::string(line.substr(indent, end - indent))};
        if (line.find(" error") != std::string_view::npos) f.failing.push_back(r.service);
        if (line.find("<- deepest error") != std::string_view::npos) {
            f.deepest = r.service;
            for (size_t k = rows.size(); k-- > 0;) {
                if (rows[k].indent < indent) {
                    f.caller = rows[k].service;
                    break;
                }
            }
        }
        rows.push_back(std::move(r));
    }
    return f;
}

struct search_hit {
    std::string id;
    std::string text;
};

std::vector<search_hit> parse_search(std::string_view text) {
    std::vector<search_hit> out;
    for (auto line : split_lines(text)) {
        const size_t sp = line.find(' ');
        if (sp == std::string_view::npos) continue;
        const std::string_view id = line.substr(0, sp);
        const size_t colon = id.rfind(':');
        if (colon == std::string_view::npos || colon + 1 >= id.size()) continue;
        if (!std::all_of(id.begin() + static_cast<std::ptrdiff_t>(colon) + 1, id.end(),
                         [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        out.push_back({std::string(id), std::string(line.substr(sp + 1))});
    }
    return out;
}

// An ISO time stamp inside a log line ("" when none).
std::string iso_in(std::string_view line) {
    for (size_t i = 0; i + 20 <= line.size(); ++i) {
        auto d = [&](size_t k) { return std::isdigit(static_cast<unsigned char>(line[i + k])) != 0; };
        if (d(0) && d(1) && d(2) && d(3) && line[i + 4] == '-' && line[i + 7] == '-' && line[i + 10] == 'T' &&
            line[i + 13] == ':') {
            const size_t z = line.find('Z', i);
            if (z != std::string_view::npos && z - i <= 24) return std::string(line.substr(i, z - i + 1));
        }
    }
    return "";
}

// Every ISO-8601 UTC time in a text, in order.
std::vector<std::string> all_iso(std::string_view text) {
    std::vector<std::string> out;
    for (size_t at = 0; at < text.size();) {
        const std::string t = iso_in(text.substr(at));
        if (t.empty()) break;
        out.push_back(t);
        at = text.find(t, at) + t.size();
    }
    return out;
}

// `iso` + `seconds`, same format (YYYY-MM-DDTHH:MM:SS[.fff]Z); "" when unreadable.
std::string shift_iso(const std::string& iso, int seconds) {
    std::tm tm{};
    if (iso.size() < 20 || !strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return "";
    const std::time_t t = timegm(&tm) + seconds;
    std::tm out{};
    gmtime_r(&t, &out);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &out);
    return std::string(buf) + iso.substr(19);
}

class session {
public:
    session(const tt::registry& tools, expert_run& run) : tools_(tools), run_(run) {}

    // Calls the tools of one assistant turn (in order) and records the turn.
    // `learn` false: a deliberate mistake, kept out of the training targets.
    tachyon::result<std::vector<std::string>> turn(std::vector<tool_call> calls, bool learn = true) {
        exchange ex;
        ex.learn = learn;
        for (const auto& c : calls) {
            auto t = tools_.find(c.name);
            if (!t) return tachyon::make_error(tachyon::errc::not_found, "expert: tool '" + c.name + "' is not registered");
            auto r = t->invoke(c.arguments_json, ctx_);
            std::string text = r.ok() ? *r : "error: " + r.err().message;
            while (!text.empty() && text.back() == '\n') text.pop_back();
            ex.results.push_back(std::move(text));
        }
        ex.calls = std::move(calls);
        run_.convo.turns.push_back(ex);
        return ex.results;
    }

    // Records a final answer; runs verify_root_cause as the runtime does and
    // records a rejection as feedback. Returns the verdict text.
    tachyon::result<std::string> answer(const expert_answer& a, bool learn = true) {
        auto verify = tools_.find("verify_root_cause");
        if (!verify) return tachyon::make_error(tachyon::errc::not_found, "expert: verify_root_cause is not registered");
        json_object args;
        args.str("service", a.service)
            .str("fault_type", a.fault_type)
            .str("first_bad_timestamp", a.first_bad_timestamp)
            .str_array("evidence", a.evidence);
        auto r = verify->invoke(args.text(), ctx_);
        std::string verdict = r.ok() ? *r : "error: " + r.err().message;
        while (!verdict.empty() && verdict.back() == '\n') verdict.pop_back();
        exchange ex;
        ex.learn = learn;
        ex.content = a.json();
        run_.answer = a;
        ++run_.n_answers;
        run_.verified = verdict.rfind("verified", 0) == 0;
        if (!run_.verified) ex.results.push_back("verify_root_cause: " + verdict);
        run_.convo.turns.push_back(std::move(ex));
        return verdict;
    }

private:
    const tt::registry& tools_;
    expert_run& run_;
    tt::call_context ctx_;
};

std::string args_service_level(const std::string& service, int limit) {
    json_object o;
    o.str("service", service).str("level", "ERROR").num("limit", limit);
    return o.text();
}

std::string args_service(const std::string& service) {
    json_object o;
    o.str("service", service);
    return o.text();
}

// Investigates `service` (errors + changes in one turn) and builds an answer.
tachyon::result<expert_answer> investigate(session& s, const std::string& service, const std::vector<summary_row>& rows,
                                           const expert_options& options, bool as_mistake) {
    auto results = s.turn({{"search_logs", args_service_level(service, options.search_limit)},
                           {"recent_changes", args_service(service)}},
                          !as_mistake);
    if (!results) return results.err();
    const auto hits = parse_search((*results)[0]);
    const std::string changes = (*results)[1];

    expert_answer a;
    a.service = service;
    if (as_mistake) {
        // the caller's own lines are timeouts and 5xx of its dependency
        a.fault_type = "upstream_timeout";
        for (const auto& h : hits)
            if (a.evidence.size() < 2) a.evidence.push_back(h.id);
    } else {
        // the fault named most often among the errors, its first two lines as evidence
        std::vector<std::pair<std::string, int>> votes;
        for (const auto& h : hits) {
            const std::string f = classify_fault(h.text);
            if (f.empty()) continue;
            auto it = std::find_if(votes.begin(), votes.end(), [&](auto& v) { return v.first == f; });
            if (it == votes.end()) votes.push_back({f, 1});
            else ++it->second;
        }
        // a specific fault beats a generic exception (which a failing
        // dependency call can also raise)
        for (auto& v : votes)
            if (v.first != "bad_deploy") v.second += 1000;
        if (!votes.empty()) {
            a.fault_type = std::max_element(votes.begin(), votes.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
        }
        for (const auto& h : hits)
            if (a.evidence.size() < 2 && classify_fault(h.text) == a.fault_type) a.evidence.push_back(h.id);
        // an exception right after this service's deploy is a bad deploy; a
        // parse failure after a config change a config error
        if (a.fault_type.empty()) a.fault_type = changes.find("config " + service) != std::string::npos ? "config_error" : "bad_deploy";
    }
    for (const auto& r : rows)
        if (r.service == service) a.first_bad_timestamp = r.first_error;
    if (a.first_bad_timestamp.empty() && !hits.empty()) a.first_bad_timestamp = iso_in(hits[0].text);
    for (const auto& h : hits) a.later_timestamp = std::max(a.later_timestamp, iso_in(h.text));
    if (a.evidence.empty())
        for (const auto& h : hits)
            if (a.evidence.size() < 2) a.evidence.push_back(h.id);
    return a;
}

// The dependency a rejection names as failing first: the deepest one on the
// failing trace, else the earliest; "" when it names none.
std::string earlier_dependency(std::string_view verdict, const std::vector<std::string>& failing_chain) {
    std::string best, best_time;
    int best_depth = -1;
    const std::string_view key = " depends on ";
    for (size_t at = verdict.find(key); at != std::string_view::npos; at = verdict.find(key, at + 1)) {
        std::string_view rest = verdict.substr(at + key.size());
        const size_t comma = rest.find(',');
        if (comma == std::string_view::npos) continue;
        const std::string name(rest.substr(0, comma));
        const std::string t = iso_in(rest.substr(comma));
        const auto it = std::find(failing_chain.begin(), failing_chain.end(), name);
        const int depth = it == failing_chain.end() ? -1 : static_cast<int>(it - failing_chain.begin());
        if (best.empty() || depth > best_depth || (depth == best_depth && !t.empty() && t < best_time)) {
            best = name;
            best_time = t;
            best_depth = depth;
        }
    }
    return best;
}

}  // namespace

std::string expert_answer::json() const {
    json_object o;
    o.str("root_cause_service", service)
        .str("fault_type", fault_type)
        .str("first_bad_timestamp", first_bad_timestamp)
        .str_array("evidence", evidence);
    return o.text();
}

std::string classify_fault(std::string_view message) {
    struct rule {
        const char* fault;
        std::vector<const char*> words;
    };
    // order matters: the specific before the general ("lock timeout" before
    // "statement timeout", pool words before any exception)
    static const std::vector<rule> rules = {
        {"deadlock", {"deadlock", "lock timeout"}},
        {"slow_query", {"statement timeout", "slow query", "query took", "slowlog", "seq scan"}},
        {"connection_pool_exhaustion",
         {"connection is not available", "cannotgetjdbcconnection", "queuepool limit", "pool exhausted", "acquire timeout", "too many clients",
          "connection slots"}},
        {"oom_kill",
         {"outofmemory", "oomkilled", "memoryerror", "out of memory", "oom command", "oom killer"}},
        {"disk_full", {"no space left", "enospc", "disk watermark", "persist to disk"}},
        {"certificate_expiry", {"certificate", "x509", "pkix", "ssl"}},
        {"rate_limited", {"too many requests", "rate limit", "throttled", "ratelimit"}},
        {"cache_stampede", {"cache stampede", "cache fill lock", "cache miss storm", "hot key"}},
        {"dns_failure", {"no such host", "unknownhost", "eai_again", "name resolution", "name or service not known"}},
        {"upstream_timeout", {"i/o timeout", "etimedout", "connecttimeout", "no route to host", "network is unreachable"}},
        {"config_error", {"config"}},
        {"bad_deploy",
         {"exception", "panic", "typeerror", "attributeerror", "keyerror", "referenceerror", "nosuchmethod",
          "is not a function", "is not defined"}},
    };
    const std::string m = lower(message);
    for (const auto& r : rules)
        for (const char* w : r.words)
            if (m.find(w) != std::string::npos) return r.fault;
    return "";
}

tachyon::result<expert_run> run_expert(const tt::registry& tools, const std::string& task, const expert_options& options) {
    expert_run run;
    session s(tools, run);

    // 1. which services fail, since when, with an example failing trace
    auto summary = s.turn({{"error_summary", "{}"}});
    if (!summary) return summary.err();
    std::vector<std::string> services;
    const auto rows = parse_error_summary((*summary)[0], services);
    const std::string symptom = symptom_of(task, services);
    std::string trace;
    for (const auto& r : rows)
        if (r.service == symptom) trace = r.trace;
    if (trace.empty()) {
        for (const auto& r : rows)  // any failing trace will do
            if (trace.empty()) trace = r.trace;
    }
    if (trace.empty()) {
        run.trouble = "no failing trace in error_summary";
        return run;
    }

    // 2. follow the trace down to its deepest failing span
    json_object targs;
    targs.str("trace_id", trace);
    auto tr = s.turn({{"get_trace", targs.text()}});
    if (!tr) return tr.err();
    const trace_finding found = parse_trace((*tr)[0]);
    if (found.deepest.empty()) {
        run.trouble = "get_trace marked no deepest error";
        return run;
    }

    // 3-4. investigate, answer; on rejection follow the named dependency
    std::string suspect = found.deepest;
    bool mistake = options.mistake && !found.caller.empty();
    if (mistake) suspect = found.caller;
    bool late = options.late_timestamp && !mistake;
    bool info = options.info_evidence && !mistake && !late;
    for (int k = 0; k < options.max_answers; ++k) {
        auto a = investigate(s, suspect, rows, options, mistake);
        if (!a) return a.err();
        run.made_mistake = run.made_mistake || mistake;
        // a time read earlier in the run but well after the service's first
        // error (the verifier allows 5 minutes): it names the right one
        std::string late_time;
        if (late) {
            const std::string floor = shift_iso(a->first_bad_timestamp, 6 * 60);
            for (const auto& turn : run.convo.turns)
                for (const auto& r : turn.results)
                    for (const auto& t : all_iso(r))
                        if (!floor.empty() && t > floor && (late_time.empty() || t < late_time)) late_time = t;
        }
        if (!late_time.empty()) {
            expert_answer wrong = *a;
            wrong.first_bad_timestamp = late_time;
            auto verdict = s.answer(wrong, false);
            if (!verdict) return verdict.err();
            const size_t at = verdict->find("started failing at ");
            const std::string named = at == std::string::npos ? std::string() : iso_in(std::string_view(*verdict).substr(at));
            if (run.verified || named.empty()) {
                run.trouble = "a late timestamp was not rejected with the right one: " + *verdict;
                return run;
            }
            run.made_mistake = true;
            a->first_bad_timestamp = named;
        }
        late = false;
        // the service's own log line that recent_changes shows (its restart
        // on the new version, in whatever format its log has) is not an
        // error: the verifier says so
        std::string info_line;
        if (info && !run.convo.turns.empty()) {
            for (const auto& r : run.convo.turns.back().results) {
                for (std::string_view rest = r; !rest.empty();) {
                    const size_t nl = rest.find('\n');
                    const std::string_view line = rest.substr(0, nl);
                    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
                    const size_t sp = line.find(' ');
                    const std::string_view id = line.substr(0, sp);
                    if (sp != std::string_view::npos && id.rfind(suspect + ":", 0) == 0 &&
                        (line.find("INFO") != std::string_view::npos || line.find("info") != std::string_view::npos) &&
                        info_line.empty())
                        info_line = std::string(id);
                }
            }
        }
        info = false;
        if (!info_line.empty()) {
            expert_answer wrong = *a;
            wrong.first_bad_timestamp = a->first_bad_timestamp;
            wrong.evidence = {info_line};
            auto verdict = s.answer(wrong, false);
            if (!verdict) return verdict.err();
            if (run.verified || verdict->find("INFO line") == std::string::npos) {
                run.trouble = "an INFO line as evidence was not rejected as one: " + *verdict;
                return run;
            }
            run.made_mistake = true;
        }
        auto verdict = s.answer(*a, !mistake);
        if (!verdict) return verdict.err();
        if (run.verified) break;
        const std::string next = earlier_dependency(*verdict, found.failing);
        if (next.empty() || next == suspect) {
            run.trouble = "rejected without a dependency to follow: " + *verdict;
            break;
        }
        suspect = next;
        mistake = false;
    }
    return run;
}

}  // namespace incident
