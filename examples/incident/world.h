// The incident world: a seeded plan of one production incident (topology,
// fault, timeline, red herrings, task text), and the generator that writes it
// as an incident directory (logs/, traces/, changes/, task.txt, answer.json;
// see README.md). Everything is a pure function of (seed, scale).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "examples/incident/clock.h"
#include "base/result.h"

namespace incident {

enum class fault_type {
    connection_pool_exhaustion,
    oom_kill,
    bad_deploy,
    certificate_expiry,
    disk_full,
    upstream_timeout,
    rate_limited,
    cache_stampede,
    config_error,
    slow_query,
    deadlock,
    dns_failure,
};
inline constexpr int n_fault_types = 12;

std::string_view to_string(fault_type f);
bool parse_fault_type(std::string_view name, fault_type& out);

enum class service_kind { edge, app, sql_store, cache_store, queue_store, search_store };
enum class runtime_lang { java, python, go, node, native };
enum class log_style { json, plain, syslog };

struct service {
    std::string name;
    service_kind kind = service_kind::app;
    runtime_lang lang = runtime_lang::go;
    log_style style = log_style::json;
    bool access_log = false;       // also writes nginx access lines (edge services)
    int pid = 0;
    std::string host;              // ip-10-0-3-17
    std::string operation;         // what a call to it does: "POST /checkout"
    std::string external;          // third-party endpoint it calls ("" for none)
    std::vector<int> callees;      // indices into incident_plan::services, sorted
};

struct change_entry {
    time_ms at = 0;
    std::string text;  // without the time stamp: "deploy payments v2.14.1 -> v2.15.0 by ci-bot"
};

struct incident_plan {
    uint64_t seed = 0;
    int scale = 1;
    std::vector<service> services;  // [0] is the edge
    std::vector<int> entries;       // apps the edge routes to
    time_ms window_start = 0;
    time_ms window_end = 0;
    time_ms fault_start = 0;
    fault_type fault = fault_type::bad_deploy;
    int root = -1;                  // root-cause service
    int symptom = -1;               // what users see failing
    std::vector<int> path;          // symptom ... root along callees
    double fail_probability = 1.0;  // of a request reaching the root once the fault runs
    double request_rate = 0.3;      // traces per second at scale 1
    int red_herring = -1;           // a service with unrelated errors (-1: none)
    time_ms red_herring_start = 0;
    time_ms red_herring_end = 0;
    std::vector<int> noisy;             // services that log benign warnings
    std::vector<change_entry> changes;  // sorted by time
    std::string task;
    // bad_deploy / config_error: what changed (for messages)
    std::string config_key, config_old, config_new;
};

incident_plan plan_incident(uint64_t seed, int scale = 1);

// What answer.json holds.
struct incident_answer {
    std::string root_cause_service;
    fault_type fault = fault_type::bad_deploy;
    std::string first_bad_timestamp;    // ISO, as the first fault line shows it
    std::vector<std::string> evidence;  // "<service>:<line>"
    uint64_t seed = 0;
};

std::string answer_json(const incident_answer& a);

// Writes the incident directory (created; must not hold an older incident's
// files that the new one would not overwrite). Returns what answer.json says.
tachyon::result<incident_answer> generate_incident(const incident_plan& plan, const std::filesystem::path& dir);

// Small helpers shared with the expert and tests.
bool is_store(service_kind k);

}  // namespace incident
