#include "inference/kernels/thread_team.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace tachyon {

thread_team::thread_team(int n_threads, int spin_us, int yield_us) : spin_us_(spin_us), yield_us_(std::max(spin_us, yield_us)) {
    claimed_ = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(std::max(1, n_threads)));
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

thread_team::~thread_team() {
    stop_.store(true, std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    epoch_.notify_all();
    for (auto& t : workers_) t.join();
}

uint64_t thread_team::await_change(const std::atomic<uint64_t>& word, uint64_t seen) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto stop_pausing = start + std::chrono::microseconds(spin_us_);
    const auto give_up = start + std::chrono::microseconds(yield_us_);
    bool pausing = true;
    for (int polls = 1;; ++polls) {
        const uint64_t v = word.load(std::memory_order_acquire);
        if (v != seen) return v;
        if (pausing) {
            _mm_pause();
        } else {
            std::this_thread::yield();
        }
        if (polls % 64 == 0 || !pausing) {
            const auto now = clock::now();
            if (now > give_up) break;
            pausing = now < stop_pausing;
        }
    }
    // Counted before the last look (both seq_cst), so a changer that finds
    // no sleeper has already changed the word that wait() compares.
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    uint64_t v;
    while ((v = word.load(std::memory_order_seq_cst)) == seen) word.wait(seen, std::memory_order_seq_cst);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return v;
}

void thread_team::run_part(int64_t index) const {
    const int64_t begin = std::min(n_, part_ * index);
    const int64_t end = std::min(n_, begin + part_);
    if (begin < end) body_(fn_, begin, end);
}

void thread_team::run_parts(uint64_t call, int own) {
    const int parts = size();
    for (int k = 0; k < parts; ++k) {
        const int p = (own + k) % parts;
        uint64_t seen = claimed_[static_cast<size_t>(p)].load(std::memory_order_relaxed);
        if (seen >= call || !claimed_[static_cast<size_t>(p)].compare_exchange_strong(seen, call, std::memory_order_relaxed)) continue;
        run_part(p);
        done_.fetch_add(1, std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) > 0) done_.notify_all();
    }
}

void thread_team::work(int index) {
    uint64_t seen = 0;
    for (;;) {
        // acquire: the call's fields, written before its epoch
        seen = await_change(epoch_, seen);
        if (stop_.load(std::memory_order_relaxed)) return;
        run_parts(seen, index);
    }
}

void thread_team::run(int64_t n, int64_t grain, body_fn body, const void* fn) {
    const int64_t parts = size();
    grain = std::max<int64_t>(1, grain);
    n_ = n;
    part_ = (n + grain * parts - 1) / (grain * parts) * grain;
    body_ = body;
    fn_ = fn;
    // Every part of the call adds one to done_, whoever runs it.
    const uint64_t target = done_.load(std::memory_order_relaxed) + static_cast<uint64_t>(parts);
    const uint64_t call = epoch_.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (sleepers_.load(std::memory_order_seq_cst) > 0) epoch_.notify_all();
    run_parts(call, 0);
    uint64_t d = done_.load(std::memory_order_acquire);
    while (d != target) d = await_change(done_, d);
}

}  // namespace tachyon
