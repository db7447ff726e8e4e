// The parts of `tachyon eval` (and the agent benchmark) that set up
// incidents and score runs: the incident-world program, seed ranges, the
// expected answer, and the summary tables.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/agent/agent_run.h"
#include "runtime/agent/agent_service.h"
#include "runtime/cli/cli.h"
#include "runtime/bench/tool_latency.h"

namespace tachyon {

// "A-B" (inclusive) or "A".
result<std::pair<uint64_t, uint64_t>> parse_seed_range(const std::string& text);

// `explicit_path` if given, else $TACHYON_INCIDENT_WORLD, else the build
// tree's examples/incident/incident-world beside this tachyon, else PATH.
result<std::string> find_incident_world(const std::string& explicit_path);

result<std::filesystem::path> make_eval_workspace();

struct expected_answer {
    std::string service;
    std::string fault_type;
};

struct prepared_incident {
    std::string incident_dir;  // what the tools see
    std::string task;
    expected_answer expected;
};

// Generates seed's incident under `workspace`, moves answer.json out of the
// incident directory and reads the task.
result<prepared_incident> prepare_incident(const std::string& world, const std::filesystem::path& workspace, uint64_t seed);

struct eval_case {
    uint64_t seed = 0;
    expected_answer expected;
    run_outcome outcome;
    std::string error;        // setup failure
    bool service_ok = false;
    bool fault_ok = false;
    bool success = false;     // verified, service and fault type right
};

void score_case(eval_case& c, run_outcome out);

// What eval and bench agents both read from their command line: --seeds,
// --world, the agent file, --concurrency and --threads.
struct eval_setup {
    uint64_t first_seed = 0, last_seed = 0;
    std::string world;
    std::shared_ptr<const agent_definition> agent;
    int concurrency = 1;
    int threads = 1;
};
result<eval_setup> parse_eval_setup(const cli::parsed_args& args);

struct eval_input {
    uint64_t seed = 0;
    prepared_incident incident;
    std::string error;  // preparation failed
};

// Generates every seed's incident under `workspace` (serially; it is fast).
std::vector<eval_input> prepare_incidents(const std::string& world, const std::filesystem::path& workspace, uint64_t first, uint64_t last);

struct eval_run_options {
    run_switches switches;
    tool_latency latency;  // every run's tools wait it (seeded per run from latency.seed and the case's seed)
    int concurrency = 1;
    std::string journal_dir = "runs";
    // Set: called on each case's request before it starts (bench agents
    // --replay hands each run its recording).
    std::function<void(const eval_input& input, run_request& request)> prepare;
};

// Runs the agent on every input, `concurrency` runs in flight (sharing the
// service's engine); `on_case` is called as each ends (any thread). Returns
// the cases in input order and the wall time of the whole batch.
std::vector<eval_case> run_cases(agent_service& service, const std::shared_ptr<const agent_definition>& agent,
                                 const std::vector<eval_input>& inputs, const eval_run_options& options,
                                 const std::function<void(const eval_case&)>& on_case, double* wall_ms);
std::string case_line(const eval_case& c);

struct eval_summary {
    size_t n = 0, n_success = 0, n_verified = 0, n_service = 0, n_fault = 0;
    size_t n_calls = 0, n_bad_calls = 0;
    double mean_ms = 0, p50_ms = 0, p95_ms = 0;  // time to verified answer, successful cases
    double p50_end_ms = 0, p95_end_ms = 0;       // time to the end of the run, every case
    double p50_wait_ms = 0;  // of the time to answer, the part spent waiting for tools with nothing decoding (successful cases)
    double mean_steps = 0, mean_generated = 0, mean_prefilled = 0;
    double wall_ms_sum = 0;
};

eval_summary summarize(const std::vector<eval_case>& cases);
std::string summary_text(const eval_summary& s);
std::string summary_json(const eval_summary& s, const std::vector<eval_case>& cases, const std::string& agent);

}  // namespace tachyon
