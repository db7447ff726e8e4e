// Resuming an agent run from its journal. A resumed run goes through the same
// loop as a new one, from its first step: a turn the journal holds whole is
// not generated again (its recorded tokens go through the same stream
// handling, and the KV is rebuilt by prefilling the conversation when the
// first new turn starts), a call with a recorded result is not run again
// (the model reads the recorded text), and an event the journal holds
// already is not written twice. The run goes on for real from the first step
// without a recorded result.
//
// A call that was started (its tool_start, the intent, is in the journal)
// but has no result may have run. A read-only tool runs it again; any other
// parks the run in state needs_attention until a person decides: "retry"
// (run it again, with the same idempotency key) or "skip" (the model reads
// that it was not run). A call of a tool that requires approval parks the
// run in awaiting_approval until it is approved or rejected (the model reads
// a rejection as the tool's error).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/journal/journal.h"

namespace tachyon {

struct run_request;
struct run_switches;

// A person's decision on a call a run is parked on.
struct call_decision {
    std::string call_id;
    std::string action;  // "approve" or "reject" (awaiting approval); "retry" or "skip" (needs attention)
    std::string reason;  // optional; a rejection's reason reaches the model
};

// What a resumed run takes from its journal instead of doing again. Used on
// the run's strand only.
class run_replay {
public:
    explicit run_replay(journal::run_log log);
    run_replay(const run_replay&) = delete;  // holds pointers into its log
    run_replay& operator=(const run_replay&) = delete;

    const journal::run_log& log() const { return log_; }
    // The turn of `step` when the journal holds it whole (text and tokens);
    // null: generate it.
    const journal::model_turn_event* turn(int64_t step) const;
    // The recorded result of this call (same id, tool and arguments, not cut
    // by the journal's result cap); null: none.
    const journal::tool_call_event* result(const std::string& call_id, const std::string& name,
                                           const std::string& arguments_json) const;
    // The call was started (its intent is in the journal) and has no result:
    // it may have run.
    bool maybe_ran(const std::string& call_id, const std::string& name, const std::string& arguments_json) const;
    // The decision on `call_id` that applies now (a retry or skip given
    // before the call's last start does not), null when none.
    const call_decision* decision(const std::string& call_id) const;
    void add_decision(const call_decision& d);
    // True when the journal holds this event already (a turn's start or
    // record, a rejected call, feedback, a rejected answer, a verify check,
    // the final answer): it is not written again. Each recorded event
    // answers true once.
    bool holds(const journal::event_body& body);

private:
    journal::run_log log_;
    std::map<int64_t, const journal::model_turn_event*> turns_;
    std::map<std::string, const journal::tool_call_event*> results_;    // by call key
    std::map<std::string, const journal::tool_start_event*> started_;   // started, no result yet
    std::map<std::string, call_decision> decisions_;                    // by call id
    std::multiset<std::string> recorded_;                              // keys of events held
};

// The run_switches as the journal's run_start records them, and back
// (a name missing from the map keeps its default).
std::map<std::string, bool> switches_to_map(const run_switches& s);
run_switches switches_from_map(const std::map<std::string, bool>& m);

// Reads the journal of `run_id` in `dir` and checks that the run can go on:
// it did not end (no run_end: its process died) or it is parked
// (needs_attention, awaiting_approval), and each decision names a call it
// is parked on with an action that fits (approve/reject for approval,
// retry/skip for attention). Errors name the run, the call and what was
// expected.
result<journal::run_log> read_resumable(const std::filesystem::path& dir, const std::string& run_id,
                                        const std::vector<call_decision>& decisions);
// The same checks on a journal read from elsewhere (a database).
status check_resumable(const journal::run_log& log, const std::string& run_id, const std::vector<call_decision>& decisions);

// The request that continues the run of `log` (read_resumable): the agent
// file, task, inputs and switches of its run_start, the replay and the
// decisions. The caller adds what is its own (an approval hook, custom
// tools) and may point the agent at another model path.
result<run_request> resume_request(journal::run_log log, std::vector<call_decision> decisions);

}  // namespace tachyon
