// The scripted expert: solves an incident with the real log tools, called
// through the tool interface exactly as a model's calls would be, and records
// the conversation. Its strategy is the one a good on-call engineer follows
// and the one the shipped model learns:
//   1. error_summary {}  (which services fail, since when, an example failing trace)
//   2. get_trace on the symptom service's failing trace -> deepest failing span
//   3. in one turn: search_logs {service, level: ERROR, limit} and recent_changes {service}
//   4. the answer JSON, with the fault type read off the error messages (and
//      the changes), two evidence line ids and the first error time.
// The runtime then runs verify_root_cause; a rejection comes back as feedback
// naming a dependency that failed earlier, which the expert investigates.
// With `mistake` set it first answers the caller of the deepest failing span
// (a plausible wrong answer that only shows timeouts), to show a recovery.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "examples/incident/transcript.h"
#include "base/result.h"
#include "tools/core/tool.h"

namespace incident {

struct expert_options {
    bool mistake = false;  // answer the deepest failing span's caller first
    bool late_timestamp = false;  // first answer a later timestamp than the service's first error, then correct it
    bool info_evidence = false;   // first cite the INFO line recent_changes shows (a restart after a deploy), then the errors
    int search_limit = 3;  // search_logs limit: keeps transcripts short (2 evidence lines + 1)
    int max_answers = 3;   // give up after this many rejected answers
};

struct expert_answer {
    std::string service;
    std::string fault_type;
    std::string first_bad_timestamp;
    std::vector<std::string> evidence;
    std::string later_timestamp;  // not answered: the latest time on the lines read (for a deliberate late answer)
    std::string json() const;  // compact, keys in the contract's order
};

struct expert_run {
    conversation convo;            // turns only; the caller fills system and task
    expert_answer answer;          // the last answer given
    bool verified = false;         // verify_root_cause accepted the last answer
    int n_answers = 0;
    bool made_mistake = false;     // a deliberate wrong first answer was given (service or timestamp)
    std::string trouble;           // why the expert could not go on ("" when it answered)
};

// Runs the expert on the incident whose tools are in `tools` (the registry of
// add_log_tools). Tool failures are recorded in the conversation as the model
// would see them; an error result means a tool the expert needs is missing.
tachyon::result<expert_run> run_expert(const tachyon::tools::registry& tools, const std::string& task,
                                       const expert_options& options);

// The fault type that error messages of a root cause name; "" when none.
// Generic code errors (exceptions after a deploy) give "bad_deploy".
std::string classify_fault(std::string_view message);

}  // namespace incident
