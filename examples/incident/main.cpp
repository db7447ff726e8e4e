// incident-world: the incident-analysis world of tachyon's flagship example.
//
//   incident-world generate --seed S --out DIR [--scale N]
//   incident-world trajectories --seeds A-B --out FILE.jsonl [--threads N]
//       [--mistake-rate R] [--search-limit N] [--instructions PATH] [--work-dir DIR]
//   incident-world solve --dir DIR [--instructions PATH] [--mistake]
//
// generate writes one incident directory (README.md describes it);
// trajectories writes one training transcript per seed; solve prints the
// expert's transcript on an existing incident.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "examples/incident/trajectories.h"
#include "examples/incident/world.h"

namespace {

constexpr const char* usage =
    "usage:\n"
    "  incident-world generate --seed S --out DIR [--scale N]\n"
    "  incident-world trajectories --seeds A-B --out FILE.jsonl [--threads N] [--mistake-rate R]\n"
    "                 [--search-limit N] [--instructions PATH] [--work-dir DIR]\n"
    "  incident-world solve --dir DIR [--instructions PATH] [--mistake]\n";

// --key value pairs (and bare --flags) after the command word.
struct options {
    std::map<std::string, std::string> values;
    std::string error;

    bool has(const std::string& k) const { return values.count(k) != 0; }
    std::string get(const std::string& k, const std::string& fallback = "") const {
        auto it = values.find(k);
        return it == values.end() ? fallback : it->second;
    }
};

options parse_options(int argc, char** argv, const std::vector<std::string>& flags) {
    options o;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) != 0) {
            o.error = std::string("unexpected argument '").append(a).append("'");
            return o;
        }
        a.erase(0, 2);
        if (std::find(flags.begin(), flags.end(), a) != flags.end()) {
            o.values.insert_or_assign(a, std::string(1, '1'));
            continue;
        }
        if (i + 1 >= argc) {
            o.error = std::string("option --").append(a).append(" needs a value");
            return o;
        }
        o.values[a] = argv[++i];
    }
    return o;
}

bool parse_u64(const std::string& s, uint64_t& out) {
    if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
    out = std::stoull(s);
    return true;
}

int fail(const std::string& message, int code = 1) {
    std::cerr << "incident-world: " << message << "\n";
    return code;
}

int cmd_generate(const options& o) {
    uint64_t seed = 0, scale = 1;
    if (!parse_u64(o.get("seed"), seed)) return fail("--seed must be a non-negative integer", 2);
    if (o.has("scale") && (!parse_u64(o.get("scale"), scale) || scale < 1 || scale > 100000))
        return fail("--scale must be an integer in 1..100000", 2);
    if (!o.has("out")) return fail("--out DIR is required", 2);
    const auto plan = incident::plan_incident(seed, static_cast<int>(scale));
    auto a = incident::generate_incident(plan, o.get("out"));
    if (!a) return fail(a.err().describe());
    std::cout << o.get("out") << ": " << plan.services.size() << " services, root cause " << a->root_cause_service
              << " (" << incident::to_string(a->fault) << ")\n";
    return 0;
}

std::string instructions_path(const options& o) { return o.get("instructions", INCIDENT_WORLD_INSTRUCTIONS); }

int cmd_solve(const options& o) {
    if (!o.has("dir")) return fail("--dir DIR is required", 2);
    auto instructions = incident::read_instructions(instructions_path(o));
    if (!instructions) return fail(instructions.err().describe());
    incident::expert_options eo;
    eo.mistake = o.has("mistake");
    auto segments = incident::solve_directory(o.get("dir"), *instructions, eo);
    if (!segments) return fail(segments.err().describe());
    std::cout << incident::join_segments(*segments) << "\n";
    return 0;
}

int cmd_trajectories(const options& o) {
    const std::string seeds = o.get("seeds");
    const size_t dash = seeds.find('-');
    uint64_t first = 0, last = 0, threads = 1;
    if (dash == std::string::npos || !parse_u64(seeds.substr(0, dash), first) ||
        !parse_u64(seeds.substr(dash + 1), last) || last < first)
        return fail("--seeds must be A-B with A <= B, e.g. 0-499", 2);
    if (!o.has("out")) return fail("--out FILE.jsonl is required", 2);
    if (o.has("threads") && (!parse_u64(o.get("threads"), threads) || threads < 1 || threads > 256))
        return fail("--threads must be an integer in 1..256", 2);
    incident::trajectory_options to;
    auto instructions = incident::read_instructions(instructions_path(o));
    if (!instructions) return fail(instructions.err().describe());
    to.instructions = *instructions;
    if (o.has("mistake-rate")) {
        try {
            to.mistake_rate = std::stod(o.get("mistake-rate"));
        } catch (...) {
            return fail("--mistake-rate must be a number in [0, 1]", 2);
        }
    }
    uint64_t limit = 3;
    if (o.has("search-limit") && (!parse_u64(o.get("search-limit"), limit) || limit < 1 || limit > 50))
        return fail("--search-limit must be an integer in 1..50", 2);
    to.search_limit = static_cast<int>(limit);
    // generated incidents are written and deleted at once: memory-backed by default
    to.work_dir = o.get("work-dir", std::filesystem::exists("/dev/shm") ? "/dev/shm"
                                                                         : std::filesystem::temp_directory_path().string());

    std::ofstream out(o.get("out"), std::ios::binary | std::ios::trunc);
    if (!out) return fail("cannot write " + o.get("out"));

    const uint64_t n = last - first + 1;
    constexpr uint64_t chunk = 256;  // results are written in seed order, a chunk at a time
    uint64_t n_service = 0, n_fault = 0, n_time = 0, n_evidence = 0, n_verified = 0, n_recovery = 0, n_chars = 0;
    uint64_t n_done = 0;
    std::vector<std::string> failures;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t base = first; base <= last; base += chunk) {
        const uint64_t n_here = std::min<uint64_t>(chunk, last - base + 1);
        std::vector<std::string> lines(n_here);
        std::vector<incident::trajectory> results(n_here);
        std::vector<std::string> errors(n_here);
        std::vector<size_t> transcript_chars(n_here, 0);
        std::atomic<uint64_t> next{0};
        std::vector<std::thread> pool;
        for (uint64_t w = 0; w < std::min(threads, n_here); ++w) {
            pool.emplace_back([&] {
                for (uint64_t i = next++; i < n_here; i = next++) {
                    auto t = incident::make_trajectory(base + i, to);
                    if (!t) {
                        errors[i] = t.err().describe();
                        continue;
                    }
                    lines[i] = incident::trajectory_json(*t);
                    transcript_chars[i] = incident::join_segments(t->segments).size();
                    t->segments.clear();
                    results[i] = std::move(*t);
                }
            });
        }
        for (auto& th : pool) th.join();
        for (uint64_t i = 0; i < n_here; ++i) {
            if (!errors[i].empty()) return fail("seed " + std::to_string(base + i) + ": " + errors[i]);
            out << lines[i] << "\n";
            const auto& t = results[i];
            n_service += t.correct_service;
            n_fault += t.correct_service && t.correct_fault;
            n_time += t.correct_time;
            n_evidence += t.correct_evidence;
            n_verified += t.run.verified;
            n_recovery += t.run.made_mistake;
            n_chars += transcript_chars[i];
            if (!(t.correct_service && t.correct_fault) && failures.size() < 20)
                failures.push_back("seed " + std::to_string(t.seed) + ": answered " + t.run.answer.service + "/" +
                                   t.run.answer.fault_type + ", truth " + t.truth.root_cause_service + "/" +
                                   std::string(incident::to_string(t.truth.fault)) +
                                   (t.run.trouble.empty() ? "" : " (" + t.run.trouble + ")"));
        }
        n_done += n_here;
    }
    if (!out.flush()) return fail("write failed: " + o.get("out"));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& f : failures) std::cerr << "  " << f << "\n";
    auto pct = [&](uint64_t k) { return 100.0 * static_cast<double>(k) / static_cast<double>(n_done); };
    std::fprintf(stderr,
                 "%llu trajectories in %.1f s (%.1f/s, %llu threads): service %.1f%%, service+fault %.1f%%, "
                 "first_bad_timestamp %.1f%%, evidence %.1f%%, verified %.1f%%, with recovery %.1f%%; "
                 "mean transcript %.0f chars\n",
                 static_cast<unsigned long long>(n), seconds, static_cast<double>(n) / seconds,
                 static_cast<unsigned long long>(threads), pct(n_service), pct(n_fault), pct(n_time),
                 pct(n_evidence), pct(n_verified), pct(n_recovery),
                 static_cast<double>(n_chars) / static_cast<double>(n_done));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << usage;
        return 2;
    }
    const std::string command = argv[1];
    if (command == "--help" || command == "-h" || command == "help") {
        std::cout << usage;
        return 0;
    }
    const options o = parse_options(argc, argv, {"mistake"});
    if (!o.error.empty()) return fail(o.error + "\n" + usage, 2);
    if (command == "generate") return cmd_generate(o);
    if (command == "trajectories") return cmd_trajectories(o);
    if (command == "solve") return cmd_solve(o);
    return fail("unknown command '" + command + "'\n" + usage, 2);
}
