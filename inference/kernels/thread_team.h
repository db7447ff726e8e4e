// A fixed team of threads that runs one range at a time, split into one
// contiguous part per thread. Parts are claimed, not assigned: each thread
// first claims its own part (the caller part 0; the same rows land on the
// same core call after call), then any part still unclaimed, so a call whose
// workers are slow to wake (asleep, or their core busy with another process)
// is finished by the caller instead of waiting on them: never much slower
// than running serially.
//
// Decode calls the team some fifty times per token for a few microseconds
// of work each, so a call has to cost far less than that: between calls the
// workers poll an epoch counter, with a pause per poll for `spin_us`, then
// yielding the core to any other runnable thread (the runtime's, when an
// engine shares the machine with its agents) until `yield_us`, and then
// block, so a team that sits idle (an engine waiting on tools) costs no CPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace tachyon {

class thread_team {
public:
    using body_fn = void (*)(const void* fn, int64_t begin, int64_t end);

    // n_threads counts the caller: a team of 2 starts one worker.
    explicit thread_team(int n_threads, int spin_us = 20, int yield_us = 500);
    ~thread_team();
    thread_team(const thread_team&) = delete;
    thread_team& operator=(const thread_team&) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // body(fn, begin, end) over [0, n) in size() contiguous parts, each a
    // multiple of `grain` long except the last (some parts may be empty),
    // each run by whichever thread claims it first. Returns when every part
    // is done. One call at a time.
    void run(int64_t n, int64_t grain, body_fn body, const void* fn);

private:
    void work(int index);
    void run_part(int64_t index) const;
    // Claims and runs the parts of call `call` (the epoch it was started
    // with) that no other thread has claimed, starting with part `own`.
    void run_parts(uint64_t call, int own);
    // Polls `word` until it differs from `seen` or the spin time is up, then
    // blocks on it; returns the new value.
    uint64_t await_change(const std::atomic<uint64_t>& word, uint64_t seen);

    int spin_us_, yield_us_;
    std::vector<std::thread> workers_;
    // The current call, written by the caller before it bumps epoch_.
    int64_t n_ = 0, part_ = 0;
    body_fn body_ = nullptr;
    const void* fn_ = nullptr;
    std::atomic<uint64_t> epoch_{0};    // one more per call; stop_ set with the last
    // [size()] the last call that claimed each part: a part is free for call
    // c while its entry is below c (every part of a call is claimed before
    // it returns, so a worker waking for a call that is over claims nothing)
    std::unique_ptr<std::atomic<uint64_t>[]> claimed_;
    std::atomic<uint64_t> done_{0};     // parts finished, over all calls
    std::atomic<int> sleepers_{0};      // threads blocked in await_change
    std::atomic<bool> stop_{false};
};

}  // namespace tachyon
