#include "inference/kernels/thread_team.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace tachyon;

namespace {

// Runs the team over [0, n) and counts how often each index was visited.
std::vector<int> visits(thread_team& team, int64_t n, int64_t grain) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    struct ctx_t {
        std::vector<std::atomic<int>>* seen;
        int64_t grain;
        int64_t n;
        std::atomic<int> bad_parts{0};
    } ctx{&seen, grain, n};
    team.run(n, grain, [](const void* p, int64_t b, int64_t e) {
        auto* c = static_cast<ctx_t*>(const_cast<void*>(p));
        // every part but the last starts and ends on a multiple of grain
        if (b % c->grain != 0 || (e != c->n && e % c->grain != 0)) c->bad_parts.fetch_add(1);
        for (int64_t i = b; i < e; ++i) (*c->seen)[static_cast<size_t>(i)].fetch_add(1);
    }, &ctx);
    CHECK(ctx.bad_parts.load() == 0);
    std::vector<int> out;
    for (auto& s : seen) out.push_back(s.load());
    return out;
}

}  // namespace

TEST_CASE("a thread team visits every index of the range exactly once, in grain-aligned parts") {
    for (int threads : {1, 2, 3, 5}) {
        thread_team team(threads);
        CHECK(team.size() == threads);
        for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1001}}) {
            for (int64_t grain : {int64_t{1}, int64_t{4}, int64_t{100}}) {
                CAPTURE(threads);
                CAPTURE(n);
                CAPTURE(grain);
                const auto v = visits(team, n, grain);
                int wrong = 0;
                for (int c : v) wrong += c != 1;
                CHECK(wrong == 0);
            }
        }
    }
}

TEST_CASE("a thread team runs back-to-back calls and wakes after its workers went to sleep") {
    thread_team team(3, /*spin_us=*/5, /*yield_us=*/20);
    std::atomic<int64_t> sum{0};
    const auto add = [](const void* p, int64_t b, int64_t e) {
        auto* s = static_cast<std::atomic<int64_t>*>(const_cast<void*>(p));
        for (int64_t i = b; i < e; ++i) s->fetch_add(i, std::memory_order_relaxed);
    };
    int64_t expected = 0;
    for (int call = 0; call < 20000; ++call) {
        // Every 1000th call comes after the workers have blocked.
        if (call % 1000 == 999) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        team.run(10, 1, add, &sum);
        expected += 45;
        // run() returns only when every part is done
        if (sum.load() != expected) {
            CHECK(sum.load() == expected);
            break;
        }
    }
    CHECK(sum.load() == expected);
}

TEST_CASE("a call whose worker is asleep is finished by the caller instead of waiting for it to wake") {
    // No spinning: between calls the worker blocks, and waking it takes far
    // longer than the caller needs to claim both (empty-bodied) parts.
    thread_team team(2, /*spin_us=*/0, /*yield_us=*/0);
    struct record_t {
        std::thread::id caller;
        std::atomic<int> by_caller{0}, visited{0};
    } rec;
    rec.caller = std::this_thread::get_id();
    int calls_by_caller_alone = 0;
    for (int call = 0; call < 50; ++call) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        rec.by_caller = 0;
        rec.visited = 0;
        team.run(2, 1, [](const void* p, int64_t b, int64_t e) {
            auto* r = static_cast<record_t*>(const_cast<void*>(p));
            if (std::this_thread::get_id() == r->caller) r->by_caller.fetch_add(static_cast<int>(e - b));
            r->visited.fetch_add(static_cast<int>(e - b));
        }, &rec);
        CHECK(rec.visited.load() == 2);
        if (rec.by_caller.load() == 2) ++calls_by_caller_alone;
    }
    CHECK(calls_by_caller_alone > 0);
}
