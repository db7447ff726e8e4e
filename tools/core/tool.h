// The tool interface: what an agent can call. A tool has a name, a
// description and a JSON Schema for its arguments (all shown to the model),
// flags the runtime uses for scheduling, and an invoke function.
//
// invoke() runs on a worker the caller chooses (the runtime's tool pool); it
// must check `cancel` between units of work and return promptly once it is
// set. Arguments arrive already validated against parameters_schema().
// A failure the model should read (no such trace id, bad regex) is an error
// result with a message written for the model.
//
// begin() is how a call starts: the caller hands it the work (invoke() on the
// caller's worker) and the tool runs that work now or later. Only a tool that
// waits for something before its work (a decorator standing in for a remote
// backend's round trip) overrides it.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon::tools {

// A tool that does not say is taken to have side effects: it is never run
// speculatively, and a call of it that may have run when its process died is
// not run again without a person's decision.
struct tool_flags {
    bool read_only = false;  // no side effects: may be run speculatively, and again after a crash
    bool idempotent = true;  // the same arguments give the same result
    // > 0: the tool bounds its own calls to this (an MCP request, whose
    // progress notifications extend it up to a cap); a run waits that long
    // for it unless the agent file gives the tool a timeout of its own.
    int64_t max_duration_ms = 0;
};

struct call_context {
    const std::atomic<bool>* cancel = nullptr;  // set when the call is cancelled or timed out
    // The same for every attempt of one call of one run (a resumed run's
    // retry too): "<run id>:<step>:<index>". A tool with side effects passes
    // it on (an Idempotency-Key header) so that a remote service does the
    // work once. Empty when the caller has none.
    std::string_view idempotency_key;
    // The W3C traceparent of the call's span when the run is traced: a tool
    // that calls a service over HTTP (MCP) sends it on. Empty: none.
    std::string_view traceparent;
    bool cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
};

// The start of one call, as its caller sees it.
struct call_start {
    boost::asio::any_io_executor executor;  // the caller's strand: begin() runs on it, and so must `work`
    boost::asio::cancellation_slot cut_off;  // emitted when the call ends before its work started (timeout, cancel)
};

class tool {
public:
    virtual ~tool() = default;
    virtual std::string_view name() const = 0;
    virtual std::string_view description() const = 0;
    virtual std::string_view parameters_schema() const = 0;  // JSON Schema, object type
    virtual tool_flags flags() const { return {}; }
    // `arguments_json` is a JSON object. Returns the text the model reads.
    virtual result<std::string> invoke(std::string_view arguments_json, const call_context& ctx) = 0;
    // Starts the call's work: runs `work` on start.executor, at once by
    // default. A tool that waits first waits on an Asio timer (no thread held)
    // bound to start.cut_off, and drops `work` once that is emitted.
    virtual void begin(const call_start& start, std::function<void()> work) {
        (void)start;
        work();
    }
};

// Tools by name. Names are unique; registration order is kept (it is the
// order tools are listed to the model).
class registry {
public:
    status add(std::shared_ptr<tool> t);
    std::shared_ptr<tool> find(std::string_view name) const;
    const std::vector<std::shared_ptr<tool>>& all() const { return tools_; }

private:
    std::vector<std::shared_ptr<tool>> tools_;
};

}  // namespace tachyon::tools
