// How a run's outcome is shown: one JSON object (--json) or a summary for
// people.
#pragma once

#include <string>

#include "runtime/agent/agent_run.h"

namespace tachyon {

std::string outcome_json(const run_outcome& out);
std::string outcome_summary(const run_outcome& out);

}  // namespace tachyon
