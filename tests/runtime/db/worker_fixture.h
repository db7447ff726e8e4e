// Test support: what the worker and serve --db tests run: an agents folder
// with the incident tools and their check, an agent service whose model
// plays a script, and a worker that stops once nothing is left.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/agent/agent_def.h"
#include "runtime/agent/agent_service.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/db/worker.h"
#include "tests/runtime/scripted_model.h"
#include "tests/tools/incident_fixture.h"

namespace worker_fixture {

using namespace tachyon;

inline const char* k_answer_ok =
    R"({"root_cause_service": "payments-db", "fault_type": "connection_pool_exhaustion", "first_bad_timestamp": "2026-03-14T14:04:58Z", "evidence": ["payments-db:3", "payments-db:6"]})";
inline const char* k_answer_wrong =
    R"({"root_cause_service": "payments", "fault_type": "connection_pool_exhaustion", "first_bad_timestamp": "2026-03-14T14:05:10.100Z", "evidence": ["payments:2", "payments:3"]})";
inline const char* k_task = "users report checkout 502s since ~14:05 UTC, find the root cause";

inline std::string call(const std::string& name, const std::string& args) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

// The turns of a run that calls two read-only tools, gives a wrong answer
// (rejected by the check), then the right one.
inline const std::vector<std::string> k_turns = {call("error_summary", "{}"), call("search_logs", R"({"service": "payments-db"})"),
                                                 k_answer_wrong, k_answer_ok};

// An agents folder with test-agent.json (the incident tools and the check),
// its "model" a file the scripted model stands in for; `extra_tools`: more
// entries of its "tools" array (JSON objects, comma-led), `tool_fields`:
// more fields of its error_summary entry.
struct agents_folder {
    incident_fixture::temp_root dir{"db_worker_agents"};
    incident_fixture::temp_root incident{"db_worker_incident"};
    std::string model_path;
    std::string file;
    explicit agents_folder(const std::string& tool_fields = {}, const std::string& extra_tools = {}) {
        incident_fixture::write_incident(incident.path);
        std::ofstream(dir.path / "scripted.gguf", std::ios::binary) << "GGUF";
        file = (dir.path / "test-agent.json").string();
        std::ofstream(file) << R"({
  "name": "test-agent",
  "description": "Finds the root cause.",
  "instructions": "Find the root cause in {incident_dir}.",
  "model": "scripted.gguf",
  "chat_format": "chatml",
  "inputs": {"incident_dir": {"type": "directory", "description": "the incident"}},
  "tools": [
    {"name": "error_summary", "settings": {"root": "{incident_dir}"})" + tool_fields + R"(},
    {"name": "search_logs", "settings": {"root": "{incident_dir}"}})" + extra_tools + R"(
  ],
  "verify": {"checks": [{"tool": "verify_root_cause", "settings": {"root": "{incident_dir}"},
    "arguments": {"service": "$.root_cause_service", "fault_type": "$.fault_type",
                  "first_bad_timestamp": "$.first_bad_timestamp", "evidence": "$.evidence"}}]},
  "output_schema": {"type": "object", "properties": {"root_cause_service": {"type": "string"}, "fault_type": {"type": "string"},
    "first_bad_timestamp": {"type": "string"}, "evidence": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
    "required": ["root_cause_service", "fault_type", "first_bad_timestamp", "evidence"], "additionalProperties": false}
})";
        auto a = load_agent_file(file, builtin_tool_names());
        REQUIRE_MESSAGE(a.ok(), a.err().message);
        model_path = a->model;
    }
    std::map<std::string, std::string> inputs() const { return {{"incident_dir", incident.path.string()}}; }
};

// An agent service whose model plays `turns`.
inline std::unique_ptr<agent_service> scripted_service(const std::string& model_path, const std::vector<std::string>& turns,
                                                       std::chrono::microseconds per_forward = {}) {
    auto s = std::make_unique<agent_service>(service_options{});
    auto tok = scripted::chatml_tokenizer();
    auto m = std::make_unique<scripted::model>(tok, turns);
    m->set_fallback(tok.find_token("<|im_end|>"));
    m->set_forward_delay(per_forward);
    engine_options eo;
    eo.n_threads = 1;
    s->add_host(model_path, model_host::create(std::move(m), tok, chat_format::chatml, eo));
    return s;
}

inline db::worker_options worker_opts(const std::string& url, const std::string& agents) {
    db::worker_options o;
    o.db_url = url;
    o.agents_dir = agents;
    o.concurrency = 1;
    o.lease = std::chrono::milliseconds(60000);
    o.poll = std::chrono::milliseconds(50);
    o.exit_when_idle = true;
    return o;
}

inline int count_type(const std::vector<std::pair<int64_t, std::string>>& lines, const std::string& type) {
    int n = 0;
    for (const auto& [seq, line] : lines) n += line.find("\"type\":\"" + type + "\"") != std::string::npos ? 1 : 0;
    return n;
}

}  // namespace worker_fixture
