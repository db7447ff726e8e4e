// What the services of the incident world write: the characteristic
// messages of each fault at the root cause (several phrasings each, in the
// idiom of the service's language), the timeouts and 5xx its callers log,
// stack traces, routine traffic, benign warnings and red-herring errors.
#pragma once

#include <string>
#include <vector>

#include "examples/incident/prng.h"
#include "examples/incident/world.h"

namespace incident {

enum class level { debug, info, warn, error };
std::string_view level_word(level l);  // "INFO", "WARN", ...

struct log_message {
    level lvl = level::info;
    std::string text;
    std::vector<std::string> continuation;  // stack trace lines after the first
};

// Faults that make the root slow (its callers time out) rather than fail fast.
bool fault_is_slow(fault_type f);

// An ERROR line of the root cause that names its fault.
log_message fault_message(const incident_plan& p, int svc, prng& rng, time_ms now);
// The short error text of the root's span in spans.jsonl.
std::string fault_span_error(const incident_plan& p, int svc, prng& rng);
// A WARN line that accompanies the fault at the root ("" for none).
std::string fault_warning(const incident_plan& p, int svc, prng& rng);

// What a caller logs when its call to `callee` failed (timeout or 5xx).
log_message caller_error(const incident_plan& p, int caller, int callee, bool timeout, prng& rng);
std::string caller_span_error(const incident_plan& p, int callee, bool timeout, prng& rng);

// Routine lines: a handled request, and periodic background (health checks,
// GC, jobs, benign warnings).
std::string request_message(const incident_plan& p, int svc, prng& rng, double duration_ms);
log_message background_message(const incident_plan& p, int svc, prng& rng, bool allow_warn);
// An error of the red herring service, unrelated to the incident.
log_message red_herring_message(const incident_plan& p, int svc, prng& rng);

}  // namespace incident
