// How a run's outcome is shown: one JSON object (--json) or a summary for
// people.
#pragma once

#include <string>

#include "runtime/agent/agent_run.h"

namespace tachyon {

std::string outcome_json(const run_outcome& out);
// [{"call_id", "name", "arguments", "reason", "message"}, ...]: the calls a parked run waits on.
std::string pending_json(const std::vector<journal::call_pending_event>& pending);
std::string outcome_summary(const run_outcome& out);

}  // namespace tachyon
