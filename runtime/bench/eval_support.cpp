#include "runtime/bench/eval_support.h"

#include <simdjson.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/common/json_util.h"
#include "runtime/agent/tool_catalog.h"

extern char** environ;

namespace tachyon {
namespace {

result<std::string> slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return make_error(errc::not_found, p.string() + ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool executable(const std::filesystem::path& p) { return ::access(p.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(p); }

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    double pos = q * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

result<std::pair<uint64_t, uint64_t>> parse_seed_range(const std::string& text) {
    auto bad = [&] { return make_error(errc::invalid_argument, "--seeds '" + text + "': expected A-B or A (non-negative integers, A <= B)"); };
    auto dash = text.find('-');
    std::string a = text.substr(0, dash), b = dash == std::string::npos ? a : text.substr(dash + 1);
    uint64_t lo = 0, hi = 0;
    auto r1 = std::from_chars(a.data(), a.data() + a.size(), lo);
    auto r2 = std::from_chars(b.data(), b.data() + b.size(), hi);
    if (a.empty() || b.empty() || r1.ec != std::errc() || r2.ec != std::errc() || r1.ptr != a.data() + a.size() ||
        r2.ptr != b.data() + b.size() || lo > hi || hi - lo > 1000000)
        return bad();
    return std::make_pair(lo, hi);
}

result<std::string> find_incident_world(const std::string& explicit_path) {
    if (!explicit_path.empty()) {
        if (!executable(explicit_path)) return make_error(errc::not_found, "--world " + explicit_path + ": not an executable file");
        return explicit_path;
    }
    if (const char* env = std::getenv("TACHYON_INCIDENT_WORLD"); env && *env) {
        if (!executable(env)) return make_error(errc::not_found, std::string("TACHYON_INCIDENT_WORLD=") + env + ": not an executable file");
        return std::string(env);
    }
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto beside = self.parent_path().parent_path() / "examples" / "incident" / "incident-world";
        if (executable(beside)) return beside.string();
        auto same_dir = self.parent_path() / "incident-world";
        if (executable(same_dir)) return same_dir.string();
    }
    if (const char* path = std::getenv("PATH")) {
        std::stringstream ss(path);
        std::string dir;
        while (std::getline(ss, dir, ':')) {
            auto p = std::filesystem::path(dir) / "incident-world";
            if (!dir.empty() && executable(p)) return p.string();
        }
    }
    return make_error(errc::not_found, "incident-world not found: build it (target incident-world), pass --world PATH or set TACHYON_INCIDENT_WORLD");
}

result<std::filesystem::path> make_eval_workspace() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tachyon-eval-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return make_error(errc::io_error, "cannot create a temporary directory under " + std::filesystem::temp_directory_path().string());
    return std::filesystem::path(tmpl);
}

result<prepared_incident> prepare_incident(const std::string& world, const std::filesystem::path& workspace, uint64_t seed) {
    const auto dir = workspace / ("incident-" + std::to_string(seed));
    const auto answers = workspace / "answers";
    std::filesystem::create_directories(answers);
    std::string seed_s = std::to_string(seed), out_s = dir.string();
    const char* argv[] = {world.c_str(), "generate", "--seed", seed_s.c_str(), "--out", out_s.c_str(), nullptr};
    pid_t pid = 0;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    int rc = ::posix_spawn(&pid, world.c_str(), &actions, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return make_error(errc::io_error, world + ": cannot start (" + std::string(std::strerror(rc)) + ")");
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return make_error(errc::internal, world + " generate --seed " + seed_s + " failed (status " + std::to_string(status) + ")");
    // The answer leaves the incident directory: the agent's tools only ever see what remains.
    const auto answer_path = answers / (seed_s + ".json");
    std::error_code ec;
    std::filesystem::rename(dir / "answer.json", answer_path, ec);
    if (ec) return make_error(errc::io_error, (dir / "answer.json").string() + ": cannot move out of the incident (" + ec.message() + ")");
    auto answer = slurp(answer_path);
    if (!answer) return answer.err();
    auto task = slurp(dir / "task.txt");
    if (!task) return task.err();
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::string_view service, fault;
    if (parser.parse(simdjson::padded_string(*answer)).get(doc) || doc["root_cause_service"].get(service) || doc["fault_type"].get(fault))
        return make_error(errc::parse_error, answer_path.string() + ": expected root_cause_service and fault_type strings");
    prepared_incident p;
    p.incident_dir = dir.string();
    p.task = *task;
    while (!p.task.empty() && (p.task.back() == '\n' || p.task.back() == ' ')) p.task.pop_back();
    p.expected = {std::string(service), std::string(fault)};
    return p;
}

void score_case(eval_case& c, run_outcome out) {
    c.outcome = std::move(out);
    if (!c.outcome.answer.empty()) {
        simdjson::dom::parser parser;
        simdjson::dom::element doc;
        std::string_view service, fault;
        if (!parser.parse(simdjson::padded_string(c.outcome.answer)).get(doc)) {
            if (!doc["root_cause_service"].get(service)) c.service_ok = service == c.expected.service;
            if (!doc["fault_type"].get(fault)) c.fault_ok = fault == c.expected.fault_type;
        }
    }
    c.success = c.outcome.verified && c.service_ok && c.fault_ok;
}

result<eval_setup> parse_eval_setup(const cli::parsed_args& args) {
    eval_setup s;
    auto seeds = parse_seed_range(*args.get("seeds"));
    if (!seeds) return seeds.err();
    s.first_seed = seeds->first;
    s.last_seed = seeds->second;
    auto world = find_incident_world(args.get_or("world", ""));
    if (!world) return world.err();
    s.world = *world;
    auto agent = load_agent_file(*args.positional(0), builtin_tool_names());
    if (!agent) return agent.err();
    s.agent = std::make_shared<const agent_definition>(std::move(agent).value());
    auto concurrency = args.get_int("concurrency");
    if (!concurrency || *concurrency < 1 || *concurrency > 256) return make_error(errc::invalid_argument, "--concurrency must be in [1, 256]");
    s.concurrency = static_cast<int>(*concurrency);
    auto threads = args.get_int("threads");
    if (!threads || *threads < 1 || *threads > 256) return make_error(errc::invalid_argument, "--threads must be in [1, 256]");
    s.threads = static_cast<int>(*threads);
    return s;
}

std::vector<eval_input> prepare_incidents(const std::string& world, const std::filesystem::path& workspace, uint64_t first, uint64_t last) {
    std::vector<eval_input> out;
    for (uint64_t seed = first; seed <= last; ++seed) {
        eval_input in;
        in.seed = seed;
        auto p = prepare_incident(world, workspace, seed);
        if (p) in.incident = std::move(p).value();
        else in.error = p.err().message;
        out.push_back(std::move(in));
    }
    return out;
}

std::vector<eval_case> run_cases(agent_service& service, const std::shared_ptr<const agent_definition>& agent,
                                 const std::vector<eval_input>& inputs, const eval_run_options& options,
                                 const std::function<void(const eval_case&)>& on_case, double* wall_ms) {
    std::vector<eval_case> cases(inputs.size());
    std::mutex mutex;
    std::condition_variable all_done;
    size_t next = 0, finished = 0;
    const auto t0 = std::chrono::steady_clock::now();
    std::function<void()> launch = [&] {
        for (;;) {
            size_t i;
            {
                std::lock_guard lock(mutex);
                if (next >= inputs.size()) return;
                i = next++;
            }
            eval_case& c = cases[i];
            c.seed = inputs[i].seed;
            c.expected = inputs[i].incident.expected;
            if (!inputs[i].error.empty()) {
                c.error = inputs[i].error;
                if (on_case) on_case(c);
                std::lock_guard lock(mutex);
                if (++finished == cases.size()) all_done.notify_all();
                continue;  // take the next input on this same slot
            }
            run_request req;
            req.agent = agent;
            req.task = inputs[i].incident.task;
            req.inputs = {{"incident_dir", inputs[i].incident.incident_dir}};
            req.switches = options.switches;
            tool_latency latency = options.latency;
            latency.seed = options.latency.seed ^ (c.seed * 0x9E3779B97F4A7C15ull);
            req.wrap_tool = latency_wrapper(latency);
            req.journal_dir = options.journal_dir;
            if (options.prepare) options.prepare(inputs[i], req);
            service.start(std::move(req), nullptr, nullptr, [&, i](run_outcome out) {
                score_case(cases[i], std::move(out));
                if (on_case) on_case(cases[i]);
                // Start the next case before counting this one: once the count
                // is complete the caller returns and these locals are gone.
                launch();
                std::lock_guard lock(mutex);
                if (++finished == cases.size()) all_done.notify_all();
            });
            return;
        }
    };
    for (int k = 0; k < std::max(1, options.concurrency); ++k) launch();
    std::unique_lock lock(mutex);
    all_done.wait(lock, [&] { return finished == cases.size(); });
    if (wall_ms) *wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return cases;
}

std::string case_line(const eval_case& c) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "seed %llu: %s (expected %s/%s; %s, %d steps, %.2f s)%s%s",
                  static_cast<unsigned long long>(c.seed), c.success ? "ok" : "FAIL", c.expected.service.c_str(),
                  c.expected.fault_type.c_str(), c.outcome.state.c_str(), c.outcome.steps, c.outcome.time_to_answer_ms / 1000.0,
                  c.error.empty() && c.outcome.error.empty() ? "" : ": ", c.error.empty() ? c.outcome.error.c_str() : c.error.c_str());
    return buf;
}

eval_summary summarize(const std::vector<eval_case>& cases) {
    eval_summary s;
    std::vector<double> times, ends, waits;
    for (const auto& c : cases) {
        ends.push_back(c.outcome.total_ms);
        ++s.n;
        s.n_success += c.success;
        s.n_verified += c.outcome.verified;
        s.n_service += c.service_ok;
        s.n_fault += c.fault_ok;
        s.n_calls += static_cast<size_t>(c.outcome.n_tool_calls);
        s.n_bad_calls += static_cast<size_t>(c.outcome.n_bad_calls);
        s.mean_steps += c.outcome.steps;
        s.mean_generated += c.outcome.generated_tokens;
        s.mean_prefilled += c.outcome.prefill_tokens;
        if (c.success) {
            times.push_back(c.outcome.time_to_answer_ms);
            waits.push_back(c.outcome.tool_wait_ms);
        }
    }
    if (s.n) {
        s.mean_steps /= static_cast<double>(s.n);
        s.mean_generated /= static_cast<double>(s.n);
        s.mean_prefilled /= static_cast<double>(s.n);
    }
    for (double t : times) s.mean_ms += t / static_cast<double>(times.size());
    s.p50_ms = percentile(times, 0.5);
    s.p95_ms = percentile(times, 0.95);
    s.p50_end_ms = percentile(ends, 0.5);
    s.p95_end_ms = percentile(ends, 0.95);
    s.p50_wait_ms = percentile(waits, 0.5);
    return s;
}

std::string summary_text(const eval_summary& s) {
    char buf[1024];
    auto pct = [](size_t a, size_t b) { return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0; };
    std::snprintf(buf, sizeof buf,
                  "cases %zu | verified-correct %zu (%.1f %%) | verified %.1f %% | service right %.1f %% | fault right %.1f %%\n"
                  "time to verified answer (successes): mean %.2f s, p50 %.2f s, p95 %.2f s\n"
                  "per run: %.1f steps, %.0f tokens generated, %.0f prefilled | tool calls %zu, schema-valid %.1f %%\n",
                  s.n, s.n_success, pct(s.n_success, s.n), pct(s.n_verified, s.n), pct(s.n_service, s.n), pct(s.n_fault, s.n),
                  s.mean_ms / 1000, s.p50_ms / 1000, s.p95_ms / 1000, s.mean_steps, s.mean_generated, s.mean_prefilled, s.n_calls,
                  pct(s.n_calls - s.n_bad_calls, s.n_calls));
    return buf;
}

std::string summary_json(const eval_summary& s, const std::vector<eval_case>& cases, const std::string& agent) {
    std::ostringstream os;
    os << "{\"agent\": " << json::quote(agent) << ", \"cases\": " << s.n << ", \"success\": " << s.n_success
       << ", \"success_rate\": " << (s.n ? double(s.n_success) / double(s.n) : 0) << ", \"verified\": " << s.n_verified
       << ", \"service_right\": " << s.n_service << ", \"fault_right\": " << s.n_fault << ", \"tool_calls\": " << s.n_calls
       << ", \"bad_tool_calls\": " << s.n_bad_calls << ", \"time_to_verified_answer_ms\": {\"mean\": " << s.mean_ms
       << ", \"p50\": " << s.p50_ms << ", \"p95\": " << s.p95_ms << "}, \"mean_steps\": " << s.mean_steps
       << ", \"mean_generated_tokens\": " << s.mean_generated << ", \"runs\": [";
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        os << (i ? ", " : "") << "{\"seed\": " << c.seed << ", \"success\": " << (c.success ? "true" : "false")
           << ", \"state\": " << json::quote(c.outcome.state) << ", \"steps\": " << c.outcome.steps
           << ", \"time_to_answer_ms\": " << c.outcome.time_to_answer_ms << ", \"run_id\": " << json::quote(c.outcome.run_id) << "}";
    }
    os << "]}";
    return os.str();
}

}  // namespace tachyon
