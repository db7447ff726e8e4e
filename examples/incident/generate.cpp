// Writing one incident directory from its plan: simulated traffic over the
// window (traces along the call graph, the log lines each span leaves),
// background noise, the fault and its propagation, changes.log, task.txt and
// answer.json. Output is produced one minute of simulated time at a time so
// that a `--scale`d incident of gigabytes needs little memory.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "examples/incident/json_text.h"
#include "examples/incident/messages.h"
#include "examples/incident/prng.h"
#include "examples/incident/world.h"

namespace incident {

std::string_view to_string(fault_type f) {
    switch (f) {
        case fault_type::connection_pool_exhaustion: return "connection_pool_exhaustion";
        case fault_type::oom_kill: return "oom_kill";
        case fault_type::bad_deploy: return "bad_deploy";
        case fault_type::certificate_expiry: return "certificate_expiry";
        case fault_type::disk_full: return "disk_full";
        case fault_type::upstream_timeout: return "upstream_timeout";
        case fault_type::rate_limited: return "rate_limited";
        case fault_type::cache_stampede: return "cache_stampede";
        case fault_type::config_error: return "config_error";
        case fault_type::slow_query: return "slow_query";
        case fault_type::deadlock: return "deadlock";
        case fault_type::dns_failure: return "dns_failure";
    }
    return "unknown";
}

bool parse_fault_type(std::string_view name, fault_type& out) {
    for (int i = 0; i < n_fault_types; ++i) {
        if (to_string(static_cast<fault_type>(i)) == name) {
            out = static_cast<fault_type>(i);
            return true;
        }
    }
    return false;
}

std::string answer_json(const incident_answer& a) {
    json_object o;
    o.str("root_cause_service", a.root_cause_service)
        .str("fault_type", to_string(a.fault))
        .str("first_bad_timestamp", a.first_bad_timestamp)
        .str_array("evidence", a.evidence)
        .num("seed", static_cast<long long>(a.seed));
    return o.text() + "\n";
}

namespace {

// One log entry (one line, or a stack trace of several) or one span line,
// waiting to be written in time order.
struct entry {
    time_ms ts = 0;
    uint64_t seq = 0;     // generation order: ties keep it, so output is deterministic
    std::string text;     // full text, lines joined by '\n', no final newline
    int n_lines = 1;
    bool fault = false;   // a fault line of the root cause
};

struct output_file {
    std::FILE* file = nullptr;
    std::vector<entry> pending;
    int64_t n_lines = 0;
    ~output_file() {
        if (file) std::fclose(file);
    }
};

struct span_result {
    time_ms end = 0;
    bool failed = false;
};

class simulator {
public:
    simulator(const incident_plan& plan, const std::filesystem::path& dir)
        : plan_(plan), dir_(dir), rng_(plan.seed * 0xD1B54A32D192ED03ull + 0x5EEDull) {}

    tachyon::result<incident_answer> run();

private:
    const service& svc(int i) const { return plan_.services[static_cast<size_t>(i)]; }
    void emit_log(int s, time_ms ts, const log_message& m, const std::string& trace_id, bool fault = false);
    void emit_access(time_ms ts, const std::string& operation, int status, double duration_ms);
    void emit_span(const std::string& trace_id, const std::string& span_id, const std::string& parent_id, int s,
                   const std::string& operation, time_ms start, double duration_ms, const std::string& error);
    span_result call(int s, const std::string& trace_id, const std::string& parent_span, time_ms start,
                     const std::string& operation, bool fault_active, int depth);
    void simulate_trace(time_ms start);
    tachyon::status flush(output_file& out, time_ms before, int service_index);
    tachyon::status flush_all(time_ms before);

    const incident_plan& plan_;
    std::filesystem::path dir_;
    prng rng_;
    uint64_t seq_ = 0;
    std::vector<std::unique_ptr<output_file>> logs_;  // [n_services]
    output_file spans_;
    incident_answer answer_;
    std::string first_fault_ts_;
};

void simulator::emit_log(int s, time_ms ts, const log_message& m, const std::string& trace_id, bool fault) {
    const service& sv = svc(s);
    std::string line;
    const std::string_view lvl = level_word(m.lvl);
    switch (sv.style) {
        case log_style::json:
            line = "{\"ts\":\"" + iso_ms(ts) + "\",\"level\":\"" + std::string(lvl) + "\",\"service\":\"" + sv.name +
                   "\",\"msg\":";
            append_json_string(line, m.text);
            if (!trace_id.empty()) line += ",\"trace_id\":\"" + trace_id + "\"";
            line += "}";
            break;
        case log_style::plain:
            line = iso_ms(ts) + " " + sv.name + "[" + std::to_string(sv.pid) + "]: " + std::string(lvl) + " " + m.text;
            if (!trace_id.empty()) line += " trace=" + trace_id;
            break;
        case log_style::syslog:
            ts = ts / 1000 * 1000;  // syslog stamps carry whole seconds
            line = syslog_time(ts) + " " + sv.host + " " + sv.name + "[" + std::to_string(sv.pid) + "]: " +
                   std::string(lvl) + " " + m.text;
            if (!trace_id.empty()) line += " trace=" + trace_id;
            break;
    }
    int n_lines = 1;
    if (sv.style != log_style::json) {
        for (const auto& c : m.continuation) {
            line += "\n" + c;
            ++n_lines;
        }
    }
    logs_[static_cast<size_t>(s)]->pending.push_back({ts, seq_++, std::move(line), n_lines, fault});
}

void simulator::emit_access(time_ms ts, const std::string& operation, int status, double duration_ms) {
    static const std::vector<std::string> agents = {
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
        "okhttp/4.12.0", "shop-ios/5.2.1 CFNetwork/1494", "curl/8.5.0"};
    const size_t sp = operation.find(' ');
    char rt[32];
    std::snprintf(rt, sizeof rt, "%.3f", duration_ms / 1000.0);
    std::string line = "10.0." + std::to_string(rng_.range(1, 9)) + "." + std::to_string(rng_.range(2, 250)) +
                       " - - [" + nginx_time(ts) + "] \"" + operation.substr(0, sp) + " " + operation.substr(sp + 1) +
                       " HTTP/1.1\" " + std::to_string(status) + " " + std::to_string(rng_.range(90, 4000)) + " \"-\" \"" +
                       rng_.pick(agents) + "\" rt=" + rt;
    logs_[0]->pending.push_back({ts / 1000 * 1000, seq_++, std::move(line), 1, false});
}

void simulator::emit_span(const std::string& trace_id, const std::string& span_id, const std::string& parent_id, int s,
                          const std::string& operation, time_ms start, double duration_ms, const std::string& error) {
    char dur[32];
    std::snprintf(dur, sizeof dur, "%.1f", duration_ms);
    std::string line = "{\"trace_id\":\"" + trace_id + "\",\"span_id\":\"" + span_id + "\",\"parent_id\":" +
                       (parent_id.empty() ? std::string("null") : "\"" + parent_id + "\"") + ",\"service\":\"" +
                       svc(s).name + "\",\"operation\":";
    append_json_string(line, operation);
    line += ",\"start\":\"" + iso_ms(start) + "\",\"duration_ms\":" + dur + ",\"status\":\"" +
            (error.empty() ? "ok" : "error") + "\",\"error\":";
    if (error.empty()) {
        line += "null";
    } else {
        append_json_string(line, error);
    }
    line += "}";
    spans_.pending.push_back({start, seq_++, std::move(line), 1, false});
}

span_result simulator::call(int s, const std::string& trace_id, const std::string& parent_span, time_ms start,
                            const std::string& operation, bool fault_active, int depth) {
    const service& sv = svc(s);
    const std::string span_id = rng_.hex(8);
    const bool store = is_store(sv.kind);
    double own_ms = store ? rng_.real(0.3, 6.0) : rng_.real(2.0, 25.0);

    // the root cause, once the fault runs, fails a share of the requests it gets
    if (s == plan_.root && fault_active && rng_.chance(plan_.fail_probability)) {
        const double dur = fault_is_slow(plan_.fault) ? rng_.real(2000.0, 8000.0) : rng_.real(1.0, 60.0);
        const time_ms end = start + static_cast<time_ms>(std::ceil(dur));
        emit_log(s, end, fault_message(plan_, s, rng_, end), trace_id, true);
        emit_span(trace_id, span_id, parent_span, s, operation, start, dur, fault_span_error(plan_, s, rng_));
        return {end, true};
    }

    time_ms t = start + static_cast<time_ms>(own_ms * 0.5);
    bool failed = false;
    int failed_callee = -1;
    if (depth < 6) {
        for (int c : sv.callees) {
            // calls along the incident's path are nearly always made, so the
            // symptom service's requests reach the root cause
            bool on_path = false;
            for (size_t k = 0; k + 1 < plan_.path.size(); ++k)
                on_path = on_path || (plan_.path[k] == s && plan_.path[k + 1] == c);
            const double p_call = on_path ? 0.95 : is_store(svc(c).kind) ? 0.5 : 0.35;
            if (!rng_.chance(p_call)) continue;
            const span_result r = call(c, trace_id, span_id, t + 1, svc(c).operation, fault_active, depth + 1);
            t = r.end;
            if (r.failed) {
                failed = true;
                failed_callee = c;
                break;
            }
        }
    }
    const time_ms end = t + static_cast<time_ms>(own_ms * 0.5) + 1;
    const double dur = static_cast<double>(end - start) + rng_.real(0.0, 0.9);
    if (failed) {
        const bool timeout = fault_is_slow(plan_.fault);
        emit_log(s, end, caller_error(plan_, s, failed_callee, timeout, rng_), trace_id);
        emit_span(trace_id, span_id, parent_span, s, operation, start, dur,
                  caller_span_error(plan_, failed_callee, timeout, rng_));
        return {end, true};
    }
    const double p_log = store ? 0.12 : 0.3;
    if (s != 0 && rng_.chance(p_log)) {
        log_message m;
        m.text = request_message(plan_, s, rng_, dur);
        emit_log(s, end, m, store ? std::string() : trace_id);
    }
    emit_span(trace_id, span_id, parent_span, s, operation, start, dur, "");
    return {end, false};
}

void simulator::simulate_trace(time_ms start) {
    // the edge routes to one entry; the entry on the incident's path gets most traffic
    const int path_entry = plan_.path[0] == 0 ? plan_.path[1] : plan_.path[0];
    std::vector<int> weighted;
    for (int e : plan_.entries) {
        weighted.push_back(e);
        if (e == path_entry) {
            weighted.push_back(e);
            weighted.push_back(e);
        }
    }
    const int entry = rng_.pick(weighted);
    const std::string& op = svc(entry).operation;
    const size_t sp = op.find(' ');
    const std::string edge_op = op.substr(0, sp) + " /api" + op.substr(sp + 1);
    const std::string trace_id = rng_.hex(16);
    const std::string edge_span = rng_.hex(8);
    // requests fail from two seconds after the onset on, so that every caller's
    // first error is later than the root's even at syslog's whole seconds
    const bool fault_active = start >= plan_.fault_start + 2000;

    const span_result r = call(entry, trace_id, edge_span, start + 1, op, fault_active, 1);
    const time_ms end = r.end + 1 + static_cast<time_ms>(rng_.below(3));
    const double dur = static_cast<double>(end - start) + rng_.real(0.0, 0.9);
    int status = 200;
    if (r.failed) {
        const bool timeout = fault_is_slow(plan_.fault);
        status = timeout ? 504 : 502;
        emit_log(0, end, caller_error(plan_, 0, entry, timeout, rng_), trace_id);
        emit_span(trace_id, edge_span, "", 0, edge_op, start, dur, timeout ? "504 Gateway Timeout" : "502 Bad Gateway");
    } else {
        // clients' own mistakes: not part of any incident
        const uint64_t r4 = rng_.below(100);
        if (r4 < 2) status = 404;
        else if (r4 < 4) status = 401;
        else if (r4 < 5) status = 499;
        emit_span(trace_id, edge_span, "", 0, edge_op, start, dur, "");
    }
    if (svc(0).access_log) emit_access(end, edge_op, status, dur);
}

tachyon::status simulator::flush(output_file& out, time_ms before, int service_index) {
    auto& v = out.pending;
    std::sort(v.begin(), v.end(), [](const entry& a, const entry& b) { return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq; });
    size_t n_done = 0;
    std::string buffer;
    for (; n_done < v.size() && v[n_done].ts < before; ++n_done) {
        entry& e = v[n_done];
        if (e.fault && service_index == plan_.root && answer_.evidence.size() < 2) {
            if (answer_.evidence.empty()) answer_.first_bad_timestamp = iso_ms(e.ts);
            answer_.evidence.push_back(svc(service_index).name + ":" + std::to_string(out.n_lines + 1));
        }
        out.n_lines += e.n_lines;
        buffer += e.text;
        buffer += '\n';
    }
    v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n_done));
    if (!buffer.empty() && std::fwrite(buffer.data(), 1, buffer.size(), out.file) != buffer.size())
        return tachyon::make_error(tachyon::errc::io_error, "incident: write failed under " + dir_.string());
    return {};
}

tachyon::status simulator::flush_all(time_ms before) {
    for (size_t i = 0; i < logs_.size(); ++i) TACHYON_TRY(flush(*logs_[i], before, static_cast<int>(i)));
    return flush(spans_, before, -1);
}

tachyon::status write_text(const std::filesystem::path& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) return tachyon::make_error(tachyon::errc::io_error, "incident: cannot write " + path.string());
    f << text;
    if (!f) return tachyon::make_error(tachyon::errc::io_error, "incident: write failed: " + path.string());
    return {};
}

tachyon::result<incident_answer> simulator::run() {
    std::error_code ec;
    for (const char* sub : {"logs", "traces", "changes"}) {
        std::filesystem::create_directories(dir_ / sub, ec);
        if (ec) return tachyon::make_error(tachyon::errc::io_error, "incident: cannot create " + (dir_ / sub).string() + ": " + ec.message());
    }
    for (const auto& s : plan_.services) {
        auto out = std::make_unique<output_file>();
        const auto path = dir_ / "logs" / (s.name + ".log");
        out->file = std::fopen(path.c_str(), "wb");
        if (!out->file) return tachyon::make_error(tachyon::errc::io_error, "incident: cannot write " + path.string());
        logs_.push_back(std::move(out));
    }
    {
        const auto path = dir_ / "traces" / "spans.jsonl";
        spans_.file = std::fopen(path.c_str(), "wb");
        if (!spans_.file) return tachyon::make_error(tachyon::errc::io_error, "incident: cannot write " + path.string());
    }

    const double scale = static_cast<double>(plan_.scale);
    const double rate_per_ms = plan_.request_rate * scale / 1000.0;
    const size_t n = plan_.services.size();
    // next background line of each service; apps every 4..12 s, stores 6..20 s
    std::vector<time_ms> next_background(n);
    std::vector<double> background_ms(n);
    for (size_t i = 0; i < n; ++i) {
        background_ms[i] = (is_store(plan_.services[i].kind) ? rng_.real(6000, 20000) : rng_.real(4000, 12000)) / scale;
        next_background[i] = plan_.window_start + static_cast<time_ms>(rng_.real(0, background_ms[i]));
    }
    // services below the root stay quiet (no warnings) so that nothing there
    // looks like an earlier failure
    std::vector<char> below_root(n, 0);
    {
        std::vector<int> stack = {plan_.root};
        while (!stack.empty()) {
            const int s = stack.back();
            stack.pop_back();
            for (int c : plan_.services[static_cast<size_t>(s)].callees)
                if (!below_root[static_cast<size_t>(c)]) {
                    below_root[static_cast<size_t>(c)] = 1;
                    stack.push_back(c);
                }
        }
    }
    time_ms next_trace = plan_.window_start + static_cast<time_ms>(-std::log(1.0 - rng_.real()) / rate_per_ms);
    time_ms next_red = plan_.red_herring >= 0 ? plan_.red_herring_start : plan_.window_end;
    time_ms next_warn = plan_.fault_start + rng_.range(1000, 20000);
    bool onset_done = false;

    // a deployed service announces its new version when it starts
    for (const auto& c : plan_.changes) {
        if (c.text.rfind("deploy ", 0) != 0 || c.at < plan_.window_start || c.at >= plan_.window_end - 60000) continue;
        const std::vector<std::string> w = [&] {
            std::vector<std::string> words;
            size_t at = 0;
            while (at < c.text.size()) {
                const size_t sp = c.text.find(' ', at);
                words.push_back(c.text.substr(at, sp - at));
                at = sp == std::string::npos ? c.text.size() : sp + 1;
            }
            return words;
        }();
        if (w.size() < 5) continue;
        for (size_t i = 0; i < n; ++i) {
            if (plan_.services[i].name != w[1]) continue;
            log_message m;
            m.text = "starting " + w[1] + " " + w[4] + " (rollout from " + w[2] + ")";
            emit_log(static_cast<int>(i), c.at + rng_.range(5000, 40000), m, "");
        }
    }

    constexpr time_ms slice = 60000;
    for (time_ms t0 = plan_.window_start; t0 < plan_.window_end; t0 += slice) {
        const time_ms t1 = std::min(t0 + slice, plan_.window_end);
        if (!onset_done && plan_.fault_start < t1) {
            // the first sign of the fault, logged by the root cause itself
            emit_log(plan_.root, plan_.fault_start, fault_message(plan_, plan_.root, rng_, plan_.fault_start), "", true);
            onset_done = true;
        }
        for (; next_trace < t1; next_trace += 1 + static_cast<time_ms>(-std::log(1.0 - rng_.real()) / rate_per_ms))
            simulate_trace(next_trace);
        for (size_t i = 0; i < n; ++i) {
            for (; next_background[i] < t1;
                 next_background[i] += 1 + static_cast<time_ms>(background_ms[i] * rng_.real(0.5, 1.5))) {
                const bool allow_warn = !below_root[i] && static_cast<int>(i) != plan_.root &&
                                        std::binary_search(plan_.noisy.begin(), plan_.noisy.end(), static_cast<int>(i));
                emit_log(static_cast<int>(i), next_background[i],
                         background_message(plan_, static_cast<int>(i), rng_, allow_warn), "");
            }
        }
        for (; next_red < t1 && next_red < plan_.red_herring_end;
             next_red += 1 + static_cast<time_ms>(rng_.real(15000, 90000) / scale))
            emit_log(plan_.red_herring, next_red, red_herring_message(plan_, plan_.red_herring, rng_), "");
        for (; next_warn < t1; next_warn += 1 + static_cast<time_ms>(rng_.real(20000, 60000) / scale)) {
            const std::string w = fault_warning(plan_, plan_.root, rng_);
            if (w.empty()) break;
            log_message m;
            m.lvl = level::warn;
            m.text = w;
            emit_log(plan_.root, next_warn, m, "");
        }
        TACHYON_TRY(flush_all(t1));
    }
    TACHYON_TRY(flush_all(INT64_MAX));

    std::string changes;
    for (const auto& c : plan_.changes) changes += iso_s(c.at) + " " + c.text + "\n";
    TACHYON_TRY(write_text(dir_ / "changes" / "changes.log", changes));
    TACHYON_TRY(write_text(dir_ / "task.txt", plan_.task + "\n"));

    answer_.root_cause_service = svc(plan_.root).name;
    answer_.fault = plan_.fault;
    answer_.seed = plan_.seed;
    TACHYON_ASSERT(answer_.evidence.size() == 2, "incident: the root cause logged fewer than two fault lines");
    TACHYON_TRY(write_text(dir_ / "answer.json", answer_json(answer_)));
    return answer_;
}

}  // namespace

tachyon::result<incident_answer> generate_incident(const incident_plan& plan, const std::filesystem::path& dir) {
    simulator sim(plan, dir);
    return sim.run();
}

}  // namespace incident
