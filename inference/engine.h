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
#include "inference/kv_cache.h"
#include "inference/model.h"
#include "inference/sampler.h"

namespace tachyon {

class kernel_context;

struct engine_options {
    int n_threads = 1;          // kernel threads; 1 is fastest for tiny models
    int n_ctx = 4096;           // KV positions, all sessions together
    int block_size = 16;        // KV positions per block
    int max_batch_tokens = 256; // tokens per forward step (prefill is chunked to fit)
    int max_active = 0;         // requests served at once; 0: no limit (continuous batching), 1: one at a time
};

using session_id = int64_t;
using request_id = int64_t;

enum class finish_reason { stop, length, cancelled, error };
std::string_view to_string(finish_reason reason);

struct request_stats {
    int n_appended = 0;       // tokens appended by the request
    int n_prefilled = 0;      // tokens whose forward actually ran (append minus reused)
    int n_generated = 0;
    double queue_ms = 0;      // submit → first forward
    double prefill_ms = 0;    // first forward → first generated token
    double decode_ms = 0;     // first generated token → done
    finish_reason finish = finish_reason::stop;
    std::string error;        // when finish == error

    double prefill_tokens_per_s() const { return prefill_ms > 0 ? n_prefilled * 1000.0 / prefill_ms : 0; }
    double decode_tokens_per_s() const { return decode_ms > 0 && n_generated > 1 ? (n_generated - 1) * 1000.0 / decode_ms : 0; }
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

struct request {
    session_id session = 0;
    std::vector<int32_t> append;        // tokens appended to the session first
    int max_tokens = 0;                 // tokens to generate; 0: prefill only
    sampling_params sampling = sampling_params::greedy();
    std::vector<int32_t> stop_tokens;   // generation ends after emitting one of these
    token_callback on_token;
    done_callback on_done;
    mask_callback constrain;
};

class engine {
public:
    static result<std::unique_ptr<engine>> open(const std::string& model_path, const engine_options& options);
    static std::unique_ptr<engine> create(std::unique_ptr<model> m, const engine_options& options);
    ~engine();  // cancels everything and joins the engine thread

    const model& get_model() const { return *model_; }
    const engine_options& options() const { return options_; }

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

private:
    engine(std::unique_ptr<model> m, const engine_options& options);

    struct active;  // a request being served
    struct session_state {
        seq_id seq = -1;
        std::vector<int32_t> tokens;  // [n] tokens in the KV, in order
        bool busy = false;
        bool closing = false;
    };

    void loop();
    bool admit();   // moves queued requests whose session is free into the active set
    void step();    // one forward over all active requests
    void finish(active& a, finish_reason reason, std::string error = {});

    std::unique_ptr<model> model_;
    engine_options options_;
    std::unique_ptr<kernel_context> ctx_;
    kv_cache kv_;  // touched only by the engine thread

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
    std::atomic<int> n_free_blocks_{0};

    // Engine-thread only.
    bool deferring_ = false;                     // inside admit(): on_done callbacks wait in deferred_
    std::vector<std::function<void()>> deferred_;
    std::vector<std::unique_ptr<active>> active_;
    forward_batch batch_;
    std::vector<float> logits_;  // [n_logits, n_vocab]
    std::vector<uint8_t> mask_;  // [n_vocab]
    std::thread thread_;
};

}  // namespace tachyon
