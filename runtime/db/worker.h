// `tachyon worker`: claims queued runs from the database (run_store.h) and
// runs them on an agent service, up to `concurrency` at a time, each under
// a lease it renews every third of the lease. A claimed run whose journal
// holds events (its worker died) is resumed from that journal through the
// same resume path as `tachyon run --resume`: turns and tool results it
// holds are not done again, and a call with side effects that may have run
// parks the run in needs_attention. A parked run a serve node sent back to
// the queue with a person's decisions (run_store.h, request_resume) is
// resumed the same way, the decisions journaled as it goes on. A run a
// serve node asked to cancel (NOTIFY, or seen at the lease's renewal) is
// cancelled and ends so in its journal. Each event goes to the database
// under the claim's epoch; a worker that lost its lease is refused, stops
// the run and lets it go.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "base/result.h"
#include "runtime/agent/agent_service.h"

namespace tachyon::db {

struct worker_options {
    std::string db_url;
    std::string agents_dir = "agents";  // <agent>.json, by the name a run was queued with
    int concurrency = 2;                // runs at a time
    std::chrono::milliseconds lease{10000};
    // How long it waits for a notification (a run queued) before it looks
    // again: runs whose lease expired send none.
    std::chrono::milliseconds poll{1000};
    std::string owner;                  // empty: "<host>:<pid>"
    bool exit_when_idle = false;        // stop once nothing is left to claim and no run is going
};

struct worker_stats {
    int claimed = 0;   // claims taken
    int resumed = 0;   // of those, runs resumed from their journal
    int finished = 0;  // runs this worker ended in the database
    int lost = 0;      // runs whose lease went to another worker while running here
};

class worker {
public:
    worker(agent_service& service, worker_options options);
    ~worker();
    // Claims and runs until stop() (or, with exit_when_idle, until idle);
    // blocks the calling thread. The error that stopped it, if one did.
    status run();
    // From any thread (a signal handler's thread): running runs are
    // cancelled, and their end is recorded.
    void stop();
    worker_stats stats() const;
    const std::string& owner() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace tachyon::db
