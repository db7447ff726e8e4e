// The harness of the agent-run tests (test_agent_run.cpp,
// test_agent_run_journal.cpp): a scripted model behind the agent loop, the
// incident tools on a temporary root, and tools that sleep.
#pragma once

#include "runtime/agent/agent_run.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <variant>
#include <set>
#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "runtime/agent/agent_runner.h"
#include "runtime/agent/agent_service.h"
#include "runtime/journal/journal.h"
#include "runtime/common/json_util.h"
#include "runtime/agent/run_report.h"
#include "runtime/journal/timeline.h"
#include "runtime/agent/tool_catalog.h"
#include "tests/runtime/scripted_model.h"
#include "tests/tools/incident_fixture.h"


namespace agent_run_test {
using namespace tachyon;


inline const char* k_answer_ok =
    R"({"root_cause_service": "payments-db", "fault_type": "connection_pool_exhaustion", "first_bad_timestamp": "2026-03-14T14:04:58Z", "evidence": ["payments-db:3", "payments-db:6"]})";
inline const char* k_answer_wrong =
    R"({"root_cause_service": "payments", "fault_type": "connection_pool_exhaustion", "first_bad_timestamp": "2026-03-14T14:05:10.100Z", "evidence": ["payments:2", "payments:3"]})";

inline const char* k_output_schema =
    R"({"type":"object","properties":{"root_cause_service":{"type":"string"},"fault_type":{"type":"string"},"first_bad_timestamp":{"type":"string"},"evidence":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["root_cause_service","fault_type","first_bad_timestamp","evidence"],"additionalProperties":false})";

inline std::string call(const std::string& name, const std::string& args) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

// A slow tool for timeouts: sleeps `ms` unless cancelled.
class sleepy_tool : public tools::tool {
public:
    explicit sleepy_tool(int ms) : ms_(ms) {}
    std::string_view name() const override { return "sleepy"; }
    std::string_view description() const override { return "Sleeps."; }
    std::string_view parameters_schema() const override { return R"({"type":"object","properties":{},"additionalProperties":false})"; }
    result<std::string> invoke(std::string_view, const tools::call_context& ctx) override {
        for (int i = 0; i < ms_ / 5; ++i) {
            if (ctx.cancelled()) return make_error(errc::cancelled, "sleepy: cancelled");
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return std::string("rested");
    }

private:
    int ms_;
};

struct harness {
    incident_fixture::temp_root root{"agent_run"};
    incident_fixture::temp_root journal_dir{"agent_run_journal"};
    std::shared_ptr<agent_definition> agent = std::make_shared<agent_definition>();
    bool prefix_cache = true;  // the engine's
    bool journal = true;
    boost::asio::io_context io_;  // destroyed after any host a test made from this harness
    std::shared_ptr<call_predictor> predictor;  // speculative tools: shared by this harness's runs when set
    run_observer* observer = nullptr;
    tool_wrapper wrap;  // the run's tool decorator, if any

    harness() {
        incident_fixture::write_incident(root.path);
        agent->file = "test-agent.json";
        agent->name = "test-agent";
        agent->instructions = "Find the root cause in {incident_dir}.";
        agent->chat_format = "chatml";
        for (const char* t : {"error_summary", "get_trace", "search_logs", "recent_changes"})
            agent->tools.push_back({t, {{"root", "{incident_dir}"}}, std::nullopt, {}});
        agent_verify_check check;
        check.tool = "verify_root_cause";
        check.arguments = {{"service", "$.root_cause_service"},
                           {"fault_type", "$.fault_type"},
                           {"first_bad_timestamp", "$.first_bad_timestamp"},
                           {"evidence", "$.evidence"}};
        check.settings = {{"root", "{incident_dir}"}};
        agent->verify.push_back(check);
        agent->output_schema = k_output_schema;
    }

    // A host whose scripted model plays `turns` in order, across runs.
    chat_format format = chat_format::chatml;  // the scripted model's family

    std::shared_ptr<model_host> make_host(const std::vector<std::string>& turns, int n_ctx = 1 << 15) const {
        auto tok = scripted::chatml_tokenizer();
        auto m = std::make_unique<scripted::model>(tok, turns);
        m->set_fallback(tok.find_token("<|im_end|>"));
        engine_options eo;
        eo.n_ctx = n_ctx;
        eo.prefix_cache = prefix_cache;
        return model_host::create(std::move(m), tok, format, eo);
    }

    approval_hook approve;  // the runs' approval hook, if any

    // Continues run `run_id` from its journal as `tachyon run --resume` does
    // (the agent as this harness has it), on `host`.
    run_outcome resume(const std::string& run_id, std::shared_ptr<model_host> host, std::vector<call_decision> decisions = {},
                       std::vector<std::shared_ptr<tools::tool>> custom = {}) {
        auto log = read_resumable(journal_dir.path, run_id, decisions);
        REQUIRE_MESSAGE(log.ok(), (log.ok() ? "" : log.err().message));
        run_request req;
        req.agent = agent;
        req.task = log->start()->task;
        req.inputs = log->start()->inputs;
        req.switches = switches_from_map(log->start()->switches);
        req.decisions = std::move(decisions);
        req.resume = std::make_shared<run_replay>(std::move(log).value());
        req.custom_tools = std::move(custom);
        req.approve = approve;
        return drive(std::move(req), std::move(host));
    }

    run_outcome run(const std::vector<std::string>& turns, run_switches sw = {}, std::vector<std::shared_ptr<tools::tool>> custom = {},
                    std::shared_ptr<std::atomic<bool>> cancel = nullptr, std::shared_ptr<model_host> shared_host = nullptr) {
        auto host = shared_host ? shared_host : make_host(turns);
        run_request req;
        req.agent = agent;
        req.task = "users report checkout 502s since ~14:05 UTC, find the root cause";
        req.inputs = {{"incident_dir", root.path.string()}};
        req.switches = sw;
        req.journal_dir = journal ? journal_dir.path.string() : std::string();
        req.custom_tools = std::move(custom);
        req.wrap_tool = wrap;
        req.approve = approve;
        return drive(std::move(req), std::move(host), std::move(cancel));
    }

    run_outcome drive(run_request req, std::shared_ptr<model_host> host, std::shared_ptr<std::atomic<bool>> cancel = nullptr) {
        boost::asio::thread_pool pool(4);
        // The service would open the model from a file; drive run_agent directly with the scripted host.
        // One event loop for the harness: the engine may drop a finished
        // request's callbacks (which hold executors) after a run returns.
        boost::asio::io_context& io = io_;
        io.restart();
        run_outcome out;
        run_environment env{host, &pool, observer, cancel ? cancel : std::make_shared<std::atomic<bool>>(false), predictor};
        boost::asio::co_spawn(boost::asio::make_strand(io), run_agent(env, req), [&](std::exception_ptr e, run_outcome o) {
            REQUIRE_FALSE(e);
            out = std::move(o);
        });
        io.run();
        pool.join();
        return out;
    }
};

}  // namespace agent_run_test
