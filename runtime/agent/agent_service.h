// Runs agents: one io_context (the event loop) on its own thread, a strand
// per run, a pool for tool calls, and one model host per model file shared
// by every run on it. The CLI (run, eval, bench agents) and the HTTP server
// use it; C++ programs can too.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/agent/agent_run.h"

namespace tachyon {

struct service_options {
    engine_options engine;       // for every model host
    int n_io_threads = 1;        // event loop threads
    int n_tool_threads = 4;      // concurrent tool calls
    // Set: every run generates on this server, whatever model its agent
    // names (`tachyon serve` in front of a cluster it does not host).
    std::shared_ptr<const remote::remote_model> remote;
    // Set: every run's spans are exported (runtime/telemetry/).
    std::shared_ptr<telemetry::tracer> tracer;
};

class agent_service {
public:
    explicit agent_service(const service_options& options);
    ~agent_service();  // cancels nothing: callers wait for their runs first

    // The host of `model_path`, opened on first use.
    result<std::shared_ptr<model_host>> host(const std::string& model_path, std::string_view chat_format = {});
    // Serves `host` for `model_path` from now on (a model not loaded from that file: SDK tests).
    void add_host(const std::string& model_path, std::shared_ptr<model_host> host);

    // Starts a run; `done` is called (on an event loop thread) with its outcome.
    void start(run_request request, run_observer* observer, std::shared_ptr<std::atomic<bool>> cancel,
               std::function<void(run_outcome)> done);
    // Runs and waits.
    run_outcome run(run_request request, run_observer* observer = nullptr, std::shared_ptr<std::atomic<bool>> cancel = nullptr);

    // Sets every cancel flag given to start()/run() that is still running.
    void cancel_all();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace tachyon
