// The inference engine: one thread that owns a model, its KV cache and the
// batch, and runs a step loop over every active request (continuous
// batching: each step runs one forward over the decode tokens of all
// generating requests plus a chunk of pending prefill).
//
// Sessions are sequences whose KV lives between requests, so an agent's next
// turn only prefills what was appended. Requests are submitted from any
// thread; their callbacks run on the engine thread and must be quick (the
// runtime posts them to its own executor). Nothing here knows about I/O.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "inference/kv/kv_cache.h"
#include "inference/arch/model.h"
#include "inference/kv/prefix_cache.h"
#include "inference/engine/draft_cost.h"
#include "inference/engine/sampler.h"

namespace tachyon {

class kernel_context;

// The kernel threads an engine runs on when asked for `n_threads`: that
// many, or for 0 default_threads().
int engine_threads(int n_threads);

struct engine_options {
    int n_threads = 0;          // kernel threads; 0: one per hardware thread (engine_threads)
    int n_ctx = 4096;           // KV positions, all sessions together
    int block_size = 16;        // KV positions per block
    bool kv_f16 = true;         // K and V held as fp16 (half the memory and the bytes attention reads); false: f32
    int max_batch_tokens = 256; // tokens per forward step (prefill is chunked to fit)
    int max_active = 0;         // requests served at once; 0: no limit (continuous batching), 1: one at a time
    bool prefix_cache = true;   // sessions share the KV blocks of common prompt prefixes (prefix_cache.h)
    // Prompt-lookup drafts only while at most this many requests decode: a
    // small batch is latency-bound (a draft saves a step), a large one is
    // compute-bound (a rejected draft wastes the attention it cost).
    // Drafts from request::propose (forced text) are always tried.
    int max_lookup_batch = 2;
    // Prefill/decode split, the disaggregation large serving systems use, on
    // one machine: each step runs the decode tokens and the prefill chunks as
    // two forwards at the same time, decode on n_threads, prefill on a thread
    // of its own, and joins them. Off (the default, measured faster here):
    // one forward mixes decode tokens and prefill chunks on n_threads.
    bool split_prefill = false;
    // How much of each draft to verify, from the step times and kept-rates
    // the engine measures (draft_cost.h): on a CPU a long draft can cost
    // more steps than it saves. Off (the default): every draft is verified
    // whole. On the incident replays (Zen 4, 0.5B and 1.5B shapes) the two
    // were even within the machine's noise, so it is not on by default.
    bool draft_tuning = false;
};

using session_id = int64_t;
using request_id = int64_t;

enum class finish_reason { stop, length, cancelled, error };
std::string_view to_string(finish_reason reason);

struct request_stats {
    int n_appended = 0;       // tokens appended by the request
    int n_prefilled = 0;      // tokens whose forward actually ran (append minus reused)
    int n_cached = 0;         // tokens of the session taken from the prefix cache instead of computed
    int n_drafted = 0;        // speculative tokens proposed (request::n_draft)
    int n_draft_accepted = 0; // of those, kept: tokens generated without a forward of their own
    int n_generated = 0;
    double queue_ms = 0;      // submit → first forward
    double prefill_ms = 0;    // first forward → first generated token
    double decode_ms = 0;     // first generated token → done
    finish_reason finish = finish_reason::stop;
    std::string error;        // when finish == error

    double prefill_tokens_per_s() const { return prefill_ms > 0 ? n_prefilled * 1000.0 / prefill_ms : 0; }
    double decode_tokens_per_s() const { return decode_ms > 0 && n_generated > 1 ? (n_generated - 1) * 1000.0 / decode_ms : 0; }
};

// What the engine has done since it started, and its state now.
struct engine_counters {
    uint64_t n_requests = 0;          // requests ended
    uint64_t n_appended = 0;          // tokens appended by requests
    uint64_t n_prefilled = 0;         // tokens a forward computed for prompts
    uint64_t n_cached = 0;            // prompt tokens found in the prefix cache
    uint64_t n_cache_lookups = 0;     // fresh sequences looked up in the prefix cache
    uint64_t n_cache_lookup_tokens = 0;  // their prompt tokens (hit rate = n_cached / this)
    uint64_t n_generated = 0;         // tokens sampled
    uint64_t n_drafted = 0;           // speculative draft tokens verified
    uint64_t n_draft_accepted = 0;    // of those, kept
    uint64_t n_evicted_sessions = 0;  // idle sessions whose KV was dropped for memory (recomputed later)
    double busy_ms = 0;               // wall time spent in steps
    double busy_cpu_ms = 0;           // CPU time of the engine thread in steps (steady under machine load)
    int n_queued = 0;                 // requests waiting for their session or a slot
    int n_active = 0;                 // requests being served
    int n_kv_blocks = 0;              // KV capacity in blocks
    int n_kv_blocks_free = 0;         // blocks nobody holds
    int n_kv_blocks_cached = 0;       // blocks the prefix cache lists (some also used by sessions)
};

// Called for each generated token, on the engine thread.
// Contract: return false to stop generation (finish_reason::stop); the token
// passed is part of the session either way.
using token_callback = std::function<bool(int32_t token)>;
// Called once when the request ends, on the engine thread.
using done_callback = std::function<void(const request_stats& stats)>;
// Optional constraint: fills `allowed` [n_vocab] (1 = permitted) for the next
// token given the tokens generated so far in this request. Called on the
// engine thread before each sample.
using mask_callback = std::function<void(std::span<const int32_t> generated, std::span<uint8_t> allowed)>;

// Optional draft source, called on the engine thread before a decode step
// with the tokens generated so far: fills `draft` with tokens the caller
// expects next (e.g. text a grammar forces). The engine verifies them like
// prompt-lookup drafts, so a wrong guess costs time, never correctness.
using draft_callback = std::function<void(std::span<const int32_t> generated, std::vector<int32_t>& draft)>;

struct request {
    session_id session = 0;
    std::vector<int32_t> append;        // tokens appended to the session first
    int max_tokens = 0;                 // tokens to generate; 0: prefill only
    sampling_params sampling = sampling_params::greedy();
    std::vector<int32_t> stop_tokens;   // generation ends after emitting one of these
    token_callback on_token;
    // Called once, on the engine's thread, after on_token, constrain and
    // propose are released; the closure itself is destroyed there right
    // after the call, so what it captures must be safe to drop on that
    // thread at any later moment (move it into what the call hands on).
    done_callback on_done;
    mask_callback constrain;
    // Speculative decoding: each decode step also verifies up to n_draft
    // tokens guessed by prompt lookup (inference/engine/draft.h) in the same
    // forward, and keeps those the sampler itself picks. Same output as
    // without (greedy: identical tokens; sampled: the same distribution). 0: off.
    int n_draft = 0;
    // Drafts from the caller, tried before prompt lookup (any length up to the batch budget).
    draft_callback propose;
    // Oracle decoding (replaying a recorded run on another model): the i-th
    // generated token is forced[i], whatever the sampler picks. Each token
    // still costs what it would (its forward, its logits, the sampler), and
    // a draft is kept exactly as far as it matches. A forced token the
    // constraint forbids, or generation past the end of `forced`, ends the
    // request with an error naming the position. Empty: off.
    std::vector<int32_t> forced;
};

class engine {
public:
    static result<std::unique_ptr<engine>> open(const std::string& model_path, const engine_options& options);
    static std::unique_ptr<engine> create(std::unique_ptr<model> m, const engine_options& options);
    ~engine();  // cancels everything and joins the engine thread; never call it on that thread

    // True on the engine thread (inside a callback). An owner whose last
    // reference a callback drops must hand the engine to another thread to
    // destroy (model_host does).
    bool on_engine_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

    const model& get_model() const { return *model_; }
    const engine_options& options() const { return options_; }
    int n_threads() const;  // the kernel threads decode runs on (engine_threads)

    session_id create_session();
    // Drops the session's KV once its running request (if any) ends.
    void close_session(session_id session);
    // Keeps the first n tokens of the session (rewind); applied before the next request.
    void truncate_session(session_id session, int n_tokens);

    // Queues a request; one request per session at a time (a second waits).
    request_id submit(request req);
    void cancel(request_id id);

    // Convenience for CLIs and tests: submit and block until done.
    request_stats run(request req);

    // Tokens currently in the session's KV (engine thread's view).
    int session_length(session_id session) const;
    std::vector<int32_t> session_tokens(session_id session) const;
    int n_free_kv_blocks() const;
    engine_counters counters() const;
    // Forgets every prefix-cache entry (blocks in use by sessions stay theirs).
    void clear_prefix_cache();

private:
    engine(std::unique_ptr<model> m, const engine_options& options);

    struct active;  // a request being served
    struct session_state {
        seq_id seq = -1;
        std::vector<int32_t> tokens;  // [n] tokens in the KV, in order
        bool busy = false;
        bool closing = false;
        int n_cached_blocks = 0;      // leading full blocks already offered to the prefix cache
        uint64_t last_used = 0;       // admission tick, for evicting idle sessions under memory pressure
    };

    void loop();
    bool admit();   // moves queued requests whose session is free into the active set
    void step();    // one forward over all active requests
    void finish(active& a, finish_reason reason, std::string error = {});
    // Samples from `n_rows` logits rows of one request (row i follows batch
    // token i); row i > 0 counts only while the draft token before it was
    // what the sampler picked.
    struct draft_outcome {
        int judged = 0;  // draft positions the sampler reached
        int kept = 0;    // of those, the leading ones it picked
    };
    draft_outcome sample_rows(active& a, const float* logits, std::span<const int32_t> draft);
    void offer_to_cache(session_state& s);
    // Starts a fresh sequence for `s` from the longest cached prefix of its tokens.
    void attach_prefix(session_state& s, active& a);
    // kv_.reserve, freeing memory when short: unused prefix-cache blocks first,
    // then the KV of idle sessions, least recently used first.
    status reserve_kv(session_state& s, int n_new);
    bool evict_idle_session(const session_state& keep);

    std::unique_ptr<model> model_;
    engine_options options_;
    std::unique_ptr<kernel_context> ctx_;
    // split_prefill: the prefill side's kernels and thread, batch and logits
    struct side_thread;
    std::unique_ptr<kernel_context> ctx_prefill_;
    std::unique_ptr<side_thread> side_;
    forward_batch batch_prefill_;
    std::vector<float> logits_prefill_;  // [n_logits, n_vocab]
    double side_cpu_ms_ = 0;
    kv_cache kv_;  // touched only by the engine thread
    std::unique_ptr<prefix_cache> prefix_;  // engine thread only; null when options_.prefix_cache is off

    mutable std::mutex mutex_;             // guards everything below until the engine-thread-only part
    std::condition_variable wake_;
    std::deque<std::pair<request_id, request>> queue_;
    std::vector<request_id> cancels_;
    std::vector<std::pair<session_id, int>> truncates_;
    std::vector<session_id> closes_;
    std::unordered_map<session_id, session_state> sessions_;
    session_id next_session_ = 1;
    request_id next_request_ = 1;
    bool stop_ = false;
    bool clear_prefix_ = false;
    std::atomic<int> n_free_blocks_{0};
    std::atomic<int> n_queued_{0};
    mutable std::mutex counters_mutex_;
    engine_counters counters_;  // guarded by counters_mutex_

    // Engine-thread only.
    bool deferring_ = false;                     // inside admit(): on_done callbacks wait in deferred_
    std::vector<std::function<void()>> deferred_;
    std::vector<std::unique_ptr<active>> active_;
    forward_batch batch_;
    std::vector<float> logits_;  // [n_logits, n_vocab]
    std::vector<uint8_t> mask_;  // [n_vocab]
    uint64_t tick_ = 0;  // engine thread: admission counter
    draft_cost_model draft_cost_;  // engine thread: how much of a draft pays
    std::thread thread_;
};

}  // namespace tachyon
