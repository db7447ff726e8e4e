// Training trajectories: for each seed, generate the incident into a
// temporary directory, let the expert solve it with the real tools, render
// the conversation as prompt-format segments, and delete the directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "examples/incident/expert.h"
#include "examples/incident/transcript.h"
#include "examples/incident/world.h"

namespace incident {

// The tools listed to the model, in this order. verify_root_cause is run by
// the runtime after a final answer and is not listed.
const std::vector<std::string>& agent_tool_names();

struct trajectory_options {
    std::string instructions;            // the agent instructions (instructions.txt)
    std::filesystem::path work_dir;      // where incidents are generated (deleted after)
    double mistake_rate = 0.15;          // share of trajectories with a wrong first answer and a recovery
    double late_timestamp_rate = 0.10;   // share answering a too-late first_bad_timestamp first, corrected from the verifier's words
    double info_evidence_rate = 0.35;    // share (of those whose changes show a log line) citing that INFO line first
    int scale = 1;
    int search_limit = 3;
};

struct trajectory {
    uint64_t seed = 0;
    std::vector<segment> segments;
    incident_answer truth;   // answer.json
    expert_run run;
    bool correct_service = false;  // the expert's last answer names answer.json's service
    bool correct_fault = false;
    bool correct_time = false;
    bool correct_evidence = false;
};

tachyon::result<trajectory> make_trajectory(uint64_t seed, const trajectory_options& options);

// {"seed": S, "segments": [{"text": "...", "train": false}, ...]}
std::string trajectory_json(const trajectory& t);

// Runs the expert on an existing incident directory and renders the
// transcript (for inspection; no answer.json needed).
tachyon::result<std::vector<segment>> solve_directory(const std::filesystem::path& dir, const std::string& instructions,
                                                      const expert_options& options);

// Whether seed `seed` gets a deliberate mistake at rate `rate` (a pure
// function of the seed).
bool wants_mistake(uint64_t seed, double rate);

}  // namespace incident
