#include "inference/engine/engine.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <future>

#include "base/log.h"
#include "inference/engine/draft.h"
#include "inference/kernels/kernels.h"

namespace tachyon {
namespace {

using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

kv_cache_config kv_config_for(const model& m, const engine_options& o) {
    kv_cache_config c;
    c.n_layer = m.hparams().n_layer;
    c.n_kv_embd = m.hparams().n_embd_kv();
    c.block_size = o.block_size;
    c.n_blocks = (o.n_ctx + o.block_size - 1) / o.block_size;
    c.f16 = o.kv_f16;
    return c;
}

}  // namespace

std::string_view to_string(finish_reason reason) {
    switch (reason) {
        case finish_reason::stop: return "stop";
        case finish_reason::length: return "length";
        case finish_reason::cancelled: return "cancelled";
        case finish_reason::error: return "error";
    }
    return "?";
}

struct engine::active {
    request_id id = 0;
    request req;
    session_state* session = nullptr;
    sampler smp;
    std::vector<int32_t> generated;
    request_stats stats;
    clock_type::time_point submitted, started, first_token;
    bool started_ = false;
    bool in_prefill = true;
    bool done = false;

    active(request_id i, request&& r, session_state* s)
        : id(i), req(std::move(r)), session(s), smp(req.sampling), submitted(clock_type::now()) {}
};

// Runs one job at a time on a thread of its own: the prefill side of the
// prefill/decode split.
struct engine::side_thread {
    side_thread() : thread([this] { run(); }) {}
    ~side_thread() {
        {
            std::lock_guard lock(mutex);
            stop = true;
        }
        cv.notify_all();
        thread.join();
    }
    void start(std::function<void()> fn) {
        {
            std::lock_guard lock(mutex);
            job = std::move(fn);
            done = false;
        }
        cv.notify_all();
    }
    void wait() {
        std::unique_lock lock(mutex);
        cv.wait(lock, [this] { return done; });
    }

private:
    void run() {
        std::unique_lock lock(mutex);
        for (;;) {
            cv.wait(lock, [this] { return stop || job; });
            if (!job) return;
            auto fn = std::move(job);
            job = nullptr;
            lock.unlock();
            fn();
            lock.lock();
            done = true;
            cv.notify_all();
        }
    }

    std::mutex mutex;
    std::condition_variable cv;
    std::function<void()> job;
    bool done = true;
    bool stop = false;
    std::thread thread;  // last: started once the rest is ready
};

engine::engine(std::unique_ptr<model> m, const engine_options& options)
    : model_(std::move(m)),
      options_(options),
      ctx_(std::make_unique<kernel_context>(engine_threads(options.n_threads))),
      kv_(kv_config_for(*model_, options)),
      draft_cost_(options.max_batch_tokens) {
    if (options.prefix_cache) prefix_ = std::make_unique<prefix_cache>(options.block_size);
    if (options.split_prefill) {
        ctx_prefill_ = std::make_unique<kernel_context>(1);
        side_ = std::make_unique<side_thread>();
    }
    counters_.n_kv_blocks = kv_.config().n_blocks;
    thread_ = std::thread([this] { loop(); });
}

int engine_threads(int n_threads) {
    return n_threads > 0 ? n_threads : default_threads();
}

int engine::n_threads() const { return ctx_->n_threads(); }

result<std::unique_ptr<engine>> engine::open(const std::string& model_path, const engine_options& options) {
    if (options.n_ctx <= 0 || options.block_size <= 0 || options.max_batch_tokens <= 0 || options.n_threads < 0) {
        return make_error(errc::invalid_argument,
                          "engine options: n_ctx, block_size and max_batch_tokens must be positive, n_threads 0 (automatic) or more");
    }
    // The context it will run picks phi3's long or short RoPE factors.
    load_options lo;
    lo.n_ctx = options.n_ctx;
    auto m = load_model(model_path, lo);
    if (!m) return m.err();
    return create(std::move(m).value(), options);
}

std::unique_ptr<engine> engine::create(std::unique_ptr<model> m, const engine_options& options) {
    return std::unique_ptr<engine>(new engine(std::move(m), options));
}

engine::~engine() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    side_.reset();
    if (prefix_) prefix_->clear(kv_);
}

session_id engine::create_session() {
    std::lock_guard lock(mutex_);
    session_id id = next_session_++;
    sessions_.emplace(id, session_state{});  // its KV sequence is made on the engine thread, at first use
    return id;
}

void engine::close_session(session_id session) {
    {
        std::lock_guard lock(mutex_);
        closes_.push_back(session);
    }
    wake_.notify_all();
}

void engine::truncate_session(session_id session, int n_tokens) {
    {
        std::lock_guard lock(mutex_);
        truncates_.emplace_back(session, n_tokens);
    }
    wake_.notify_all();
}

request_id engine::submit(request req) {
    request_id id;
    {
        std::lock_guard lock(mutex_);
        id = next_request_++;
        queue_.emplace_back(id, std::move(req));
    }
    wake_.notify_all();
    return id;
}

void engine::cancel(request_id id) {
    {
        std::lock_guard lock(mutex_);
        cancels_.push_back(id);
    }
    wake_.notify_all();
}

request_stats engine::run(request req) {
    auto done = std::make_shared<std::promise<request_stats>>();
    auto fut = done->get_future();
    done_callback user_done = std::move(req.on_done);
    req.on_done = [done, user_done](const request_stats& s) {
        if (user_done) user_done(s);
        done->set_value(s);
    };
    submit(std::move(req));
    return fut.get();
}

int engine::session_length(session_id session) const {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(session);
    return it == sessions_.end() ? 0 : static_cast<int>(it->second.tokens.size());
}

std::vector<int32_t> engine::session_tokens(session_id session) const {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(session);
    return it == sessions_.end() ? std::vector<int32_t>{} : it->second.tokens;
}

int engine::n_free_kv_blocks() const { return n_free_blocks_.load(std::memory_order_relaxed); }

engine_counters engine::counters() const {
    std::lock_guard lock(counters_mutex_);
    return counters_;
}

void engine::clear_prefix_cache() {
    {
        std::lock_guard lock(mutex_);
        clear_prefix_ = true;
    }
    wake_.notify_all();
}

void engine::attach_prefix(session_state& s, active& a) {
    const int max_tokens = static_cast<int>(s.tokens.size()) - (a.req.max_tokens > 0 ? 1 : 0);  // keep one to compute logits from
    std::vector<int> blocks = prefix_->match(s.tokens, max_tokens);
    s.n_cached_blocks = static_cast<int>(blocks.size());
    a.stats.n_cached = static_cast<int>(blocks.size()) * options_.block_size;
    {
        std::lock_guard lock(counters_mutex_);
        ++counters_.n_cache_lookups;
        counters_.n_cache_lookup_tokens += s.tokens.size();
    }
    if (blocks.empty()) return;
    kv_.drop(s.seq);
    s.seq = kv_.create_shared(blocks);
}

status engine::reserve_kv(session_state& s, int n_new) {
    for (;;) {
        auto st = kv_.reserve(s.seq, n_new);
        if (st) return st;
        const int want = (n_new + options_.block_size - 1) / options_.block_size + 1;
        if (prefix_ && prefix_->evict(want, kv_) > 0) continue;
        if (!evict_idle_session(s)) return st;
    }
}

// Policy when the KV is full: the idle session used least recently gives up
// its KV (its tokens stay, its full blocks stay in the prefix cache until
// evicted in turn); its next request recomputes what is no longer cached.
// A session with a request in flight is never evicted, so no run fails
// while another's KV could be recomputed.
bool engine::evict_idle_session(const session_state& keep) {
    session_state* victim = nullptr;
    {
        std::lock_guard lock(mutex_);  // other threads add sessions
        for (auto& [id, st] : sessions_) {
            if (&st == &keep || st.busy || st.seq < 0 || kv_.n_tokens(st.seq) == 0) continue;
            if (victim == nullptr || st.last_used < victim->last_used) victim = &st;
        }
    }
    if (victim == nullptr) return false;
    kv_.drop(victim->seq);
    victim->seq = -1;
    victim->n_cached_blocks = 0;
    std::lock_guard lock(counters_mutex_);
    ++counters_.n_evicted_sessions;
    return true;
}

void engine::finish(active& a, finish_reason reason, std::string error) {
    if (a.done) return;
    a.done = true;
    auto now = clock_type::now();
    if (!a.started_) a.started = now;
    a.stats.finish = reason;
    a.stats.error = std::move(error);
    a.stats.n_generated = static_cast<int>(a.generated.size());
    a.stats.queue_ms = ms_between(a.submitted, a.started);
    if (a.generated.empty()) {
        a.stats.prefill_ms = ms_between(a.started, now);
    } else {
        a.stats.prefill_ms = ms_between(a.started, a.first_token);
        a.stats.decode_ms = ms_between(a.first_token, now);
    }
    {
        std::lock_guard lock(counters_mutex_);
        ++counters_.n_requests;
        counters_.n_appended += static_cast<uint64_t>(a.stats.n_appended);
        counters_.n_prefilled += static_cast<uint64_t>(a.stats.n_prefilled);
        counters_.n_cached += static_cast<uint64_t>(a.stats.n_cached);
        counters_.n_generated += static_cast<uint64_t>(a.stats.n_generated);
        counters_.n_drafted += static_cast<uint64_t>(a.stats.n_drafted);
        counters_.n_draft_accepted += static_cast<uint64_t>(a.stats.n_draft_accepted);
    }
    n_free_blocks_.store(kv_.n_free_blocks(), std::memory_order_relaxed);  // what on_done's caller will read
    if (reason == finish_reason::error) TACHYON_LOG(warn, "engine: request " << a.id << " failed: " << a.stats.error);
    // Callbacks may hold their owner alive (an agent run): released here, on
    // time, rather than whenever the finished request is swept.
    a.req.on_token = nullptr;
    a.req.constrain = nullptr;
    a.req.propose = nullptr;
    if (!a.req.on_done) return;
    if (deferring_) {
        // Inside admit() the lock is held; callbacks may call back into the engine.
        deferred_.push_back([cb = std::move(a.req.on_done), stats = a.stats] { cb(stats); });
    } else {
        a.req.on_done(a.stats);
        a.req.on_done = nullptr;
    }
}

// Applies control messages and admits queued requests. Returns false when the
// engine is stopping. Called with the lock held.
bool engine::admit() {
    for (auto [sid, n] : truncates_) {
        auto it = sessions_.find(sid);
        if (it == sessions_.end() || n < 0) continue;
        session_state& s = it->second;
        if (n < static_cast<int>(s.tokens.size())) s.tokens.resize(static_cast<size_t>(n));
        if (s.seq >= 0 && n < kv_.n_tokens(s.seq)) kv_.truncate(s.seq, n);
        s.n_cached_blocks = std::min(s.n_cached_blocks, n / options_.block_size);
    }
    truncates_.clear();
    if (clear_prefix_ && prefix_) prefix_->clear(kv_);
    clear_prefix_ = false;
    for (request_id id : cancels_) {
        for (auto& a : active_)
            if (a->id == id) finish(*a, finish_reason::cancelled);
        for (auto it = queue_.begin(); it != queue_.end(); ++it) {
            if (it->first != id) continue;
            active tmp(it->first, std::move(it->second), nullptr);
            finish(tmp, finish_reason::cancelled);
            queue_.erase(it);
            break;
        }
    }
    cancels_.clear();
    for (session_id sid : closes_) {
        auto it = sessions_.find(sid);
        if (it == sessions_.end()) continue;
        it->second.closing = true;
    }
    closes_.clear();
    for (auto it = queue_.begin(); it != queue_.end();) {
        auto sit = sessions_.find(it->second.session);
        if (sit == sessions_.end() || sit->second.closing) {
            active tmp(it->first, std::move(it->second), nullptr);
            finish(tmp, finish_reason::error, "unknown or closed session " + std::to_string(tmp.req.session));
            it = queue_.erase(it);
            continue;
        }
        if (sit->second.busy) {
            ++it;
            continue;
        }
        if (options_.max_active > 0) {
            int n_running = 0;
            for (const auto& a : active_) n_running += a->done ? 0 : 1;
            if (n_running >= options_.max_active) break;  // the rest wait their turn, in order
        }
        sit->second.busy = true;
        sit->second.last_used = ++tick_;
        if (sit->second.seq < 0) sit->second.seq = kv_.create();
        auto a = std::make_unique<active>(it->first, std::move(it->second), &sit->second);
        a->stats.n_appended = static_cast<int>(a->req.append.size());
        const int n_vocab = model_->hparams().n_vocab;
        bool bad = false;
        for (int32_t t : a->req.append) bad = bad || t < 0 || t >= n_vocab;
        for (int32_t t : a->req.forced) bad = bad || t < 0 || t >= n_vocab;
        if (bad) {
            finish(*a, finish_reason::error, "request holds a token id outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
        } else {
            sit->second.tokens.insert(sit->second.tokens.end(), a->req.append.begin(), a->req.append.end());
            if (prefix_ && kv_.n_tokens(sit->second.seq) == 0) attach_prefix(sit->second, *a);
        }
        active_.push_back(std::move(a));
        it = queue_.erase(it);
    }
    // Release finished requests and closed idle sessions.
    for (auto& a : active_) {
        if (a->done && a->session != nullptr) a->session->busy = false;
    }
    active_.erase(std::remove_if(active_.begin(), active_.end(), [](const auto& a) { return a->done; }), active_.end());
    n_queued_.store(static_cast<int>(queue_.size()), std::memory_order_relaxed);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (it->second.closing && !it->second.busy) {
            if (it->second.seq >= 0) kv_.drop(it->second.seq);
            it = sessions_.erase(it);
        } else {
            ++it;
        }
    }
    return !stop_;
}

void engine::step() {
    const int n_vocab = model_->hparams().n_vocab;
    const bool split = side_ != nullptr;
    batch_.clear();
    batch_prefill_.clear();
    int budget_decode = options_.max_batch_tokens, budget_prefill = options_.max_batch_tokens;
    struct planned_entry {
        active* a;
        int n;                       // tokens it put in the batch
        std::vector<int32_t> draft;  // of those, speculative (after the pending token)
        draft_source source;         // where the draft came from
        bool prefill_side;           // split: in batch_prefill_
    };
    std::vector<planned_entry> planned;
    int n_decoding = 0;
    for (const auto& up : active_) n_decoding += !up->done && !up->in_prefill ? 1 : 0;
    const bool lookup = n_decoding <= options_.max_lookup_batch;
    int n_decoding_left = n_decoding;  // decoding requests not yet in the batch
    bool any_prefill = false;          // a prompt chunk is in this step: its time says nothing of a draft's cost
    // Decoding requests first (one token each, plus a draft), so decoding
    // never stalls behind a long prefill; prefill fills the rest of the
    // budget in chunks (split: a budget and a batch of its own).
    for (int pass = 0; pass < 2; ++pass) {
        for (auto& up : active_) {
            active& a = *up;
            const bool decoding = !a.in_prefill;
            if ((pass == 0) != decoding) continue;
            const bool prefill_side = split && !decoding;
            int& budget = prefill_side ? budget_prefill : budget_decode;
            forward_batch& batch = prefill_side ? batch_prefill_ : batch_;
            if (a.done || budget <= 0) continue;
            session_state& s = *a.session;
            const int computed = kv_.n_tokens(s.seq);
            const int pending = static_cast<int>(s.tokens.size()) - computed;
            if (pending <= 0) {
                // Nothing to compute: prefill-only request whose tokens are all in the KV.
                if (a.req.max_tokens <= 0 || a.generated.size() >= static_cast<size_t>(a.req.max_tokens)) {
                    finish(a, a.req.max_tokens <= 0 ? finish_reason::stop : finish_reason::length);
                } else {
                    // Generation wanted but no token to feed (empty session): nothing can be predicted.
                    finish(a, finish_reason::error, "cannot generate from an empty session: append at least one token");
                }
                continue;
            }
            std::vector<int32_t> draft;
            draft_source source = draft_source::proposed;
            if (decoding) --n_decoding_left;
            if (decoding && pending == 1 && (a.req.n_draft > 0 || a.req.propose)) {
                const int room = std::min(budget - 1, a.req.max_tokens - static_cast<int>(a.generated.size()) - 1);
                if (room > 0 && a.req.propose) {
                    a.req.propose(a.generated, draft);
                    if (static_cast<int>(draft.size()) > room) draft.resize(static_cast<size_t>(room));
                    for (int32_t t : draft)
                        if (t < 0 || t >= n_vocab) draft.clear();  // a bad guess is no guess
                }
                if (room > 0 && draft.empty() && a.req.n_draft > 0 && lookup) {
                    draft = prompt_lookup_draft(s.tokens, {.n_draft = std::min(a.req.n_draft, room)});
                    source = draft_source::lookup;
                }
                if (!draft.empty() && options_.draft_tuning) {
                    // The step holds what is planned so far, this request's
                    // token and one token of each decoding request after it.
                    const int n_base = static_cast<int>(batch.size()) + 1 + n_decoding_left;
                    draft.resize(static_cast<size_t>(draft_cost_.choose(source, static_cast<int>(draft.size()), n_base)));
                }
            }
            any_prefill = any_prefill || !decoding;
            const int n = std::min(pending, budget) + static_cast<int>(draft.size());
            if (auto st = reserve_kv(s, n); !st) {
                finish(a, finish_reason::error, st.err().message);
                continue;
            }
            if (!a.started_) {
                a.started_ = true;
                a.started = clock_type::now();
            }
            const bool last_chunk = n - static_cast<int>(draft.size()) == pending;
            const bool want = last_chunk && a.req.max_tokens > 0;
            for (int i = 0; i < n; ++i) {
                const int32_t t = i < pending ? s.tokens[static_cast<size_t>(computed + i)] : draft[static_cast<size_t>(i - pending)];
                batch.add(t, s.seq, computed + i, want && i >= pending - 1);
            }
            budget -= n;
            planned.push_back({&a, n, std::move(draft), source, prefill_side});
        }
    }
    if (batch_.size() == 0 && batch_prefill_.size() == 0) return;
    const auto t_forward = clock_type::now();

    // The two forwards touch different sequences' KV blocks and take their
    // own activations from the model: they may run at once.
    const bool side_work = batch_prefill_.size() > 0;
    if (side_work) {
        const size_t n_logits = static_cast<size_t>(batch_prefill_.n_logits());
        if (logits_prefill_.size() < n_logits * n_vocab) logits_prefill_.resize(n_logits * n_vocab);
        side_->start([this] {
            const double c0 = thread_cpu_ms();
            model_->forward(*ctx_prefill_, batch_prefill_, kv_, logits_prefill_.data());
            side_cpu_ms_ += thread_cpu_ms() - c0;
        });
    }
    if (batch_.size() > 0) {
        const size_t n_logits = static_cast<size_t>(batch_.n_logits());
        if (logits_.size() < n_logits * n_vocab) logits_.resize(n_logits * n_vocab);
        model_->forward(*ctx_, batch_, kv_, logits_.data());
    }
    if (side_work) side_->wait();

    size_t row = 0, row_prefill = 0;
    for (auto& [ap, n, draft, source, prefill_side] : planned) {
        active& a = *ap;
        session_state& s = *a.session;
        const int computed = kv_.n_tokens(s.seq);
        kv_.commit(s.seq, n);
        const int n_real = n - static_cast<int>(draft.size());
        if (a.in_prefill) a.stats.n_prefilled += n_real;
        const bool has_logits = computed + n_real == static_cast<int>(s.tokens.size()) && a.req.max_tokens > 0;
        if (has_logits) {
            size_t& r = prefill_side ? row_prefill : row;
            const float* rows = prefill_side ? &logits_prefill_[r * n_vocab] : &logits_[r * n_vocab];
            r += 1 + draft.size();
            if (!a.done) {
                const draft_outcome d = sample_rows(a, rows, draft);
                // Keys and values of draft tokens the sampler did not pick are dropped.
                if (d.kept < static_cast<int>(draft.size())) kv_.truncate(s.seq, computed + n_real + d.kept);
                if (!draft.empty()) draft_cost_.record_draft(source, d.judged, d.kept);
            } else if (!draft.empty()) {
                kv_.truncate(s.seq, computed + n_real);
            }
        }
        offer_to_cache(s);
    }
    // The forward and the sampling of its rows: what a draft token adds to a step.
    if (!any_prefill && batch_prefill_.size() == 0)
        draft_cost_.record_step(static_cast<int>(batch_.size()), ms_between(t_forward, clock_type::now()));
}

engine::draft_outcome engine::sample_rows(active& a, const float* logits, std::span<const int32_t> draft) {
    const int n_vocab = model_->hparams().n_vocab;
    session_state& s = *a.session;
    draft_outcome out;
    // Counted before a token can finish the request, which reports its stats.
    a.stats.n_drafted += static_cast<int>(draft.size());
    for (size_t i = 0; i <= draft.size() && !a.done; ++i) {
        std::span<const float> row(logits + i * static_cast<size_t>(n_vocab), static_cast<size_t>(n_vocab));
        std::span<const uint8_t> allowed;
        if (a.req.constrain) {
            // The constraint sees only tokens that were kept, so a rejected draft never reaches it.
            mask_.assign(static_cast<size_t>(n_vocab), 1);
            a.req.constrain(a.generated, mask_);
            allowed = mask_;
            if (std::find(mask_.begin(), mask_.end(), uint8_t{1}) == mask_.end()) {
                finish(a, finish_reason::error, "the constraint allows no token");
                break;
            }
        }
        int32_t token = a.smp.sample(row, s.tokens, allowed);
        if (!a.req.forced.empty()) {
            const size_t pos = a.generated.size();
            if (pos >= a.req.forced.size()) {
                finish(a, finish_reason::error, "generation went on past the " + std::to_string(pos) + " forced tokens");
                break;
            }
            token = a.req.forced[pos];
            if (!allowed.empty() && !allowed[static_cast<size_t>(token)]) {
                finish(a, finish_reason::error,
                       "forced token " + std::to_string(token) + " at position " + std::to_string(pos) + " is not allowed by the constraint");
                break;
            }
        }
        if (a.generated.empty()) a.first_token = clock_type::now();
        a.in_prefill = false;
        a.generated.push_back(token);
        {
            std::lock_guard lock(mutex_);
            s.tokens.push_back(token);
        }
        const bool matches_draft = i < draft.size() && token == draft[i];
        out.judged += i < draft.size() ? 1 : 0;
        out.kept += matches_draft ? 1 : 0;
        a.stats.n_draft_accepted += matches_draft ? 1 : 0;
        bool go_on = a.req.on_token ? a.req.on_token(token) : true;
        bool stop_token = std::find(a.req.stop_tokens.begin(), a.req.stop_tokens.end(), token) != a.req.stop_tokens.end();
        if (!go_on || stop_token) {
            finish(a, finish_reason::stop);
        } else if (static_cast<int>(a.generated.size()) >= a.req.max_tokens) {
            finish(a, finish_reason::length);
        }
        if (!matches_draft) break;
    }
    return out;
}

void engine::offer_to_cache(session_state& s) {
    if (!prefix_) return;
    const int n_full = kv_.n_tokens(s.seq) / options_.block_size;
    if (n_full <= s.n_cached_blocks) return;
    prefix_->insert(std::span<const int32_t>(s.tokens).first(static_cast<size_t>(n_full) * options_.block_size),
                    kv_.block_table(s.seq).first(static_cast<size_t>(n_full)), kv_);
    s.n_cached_blocks = n_full;
}

void engine::loop() {
    n_free_blocks_.store(kv_.n_free_blocks());
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] {
                return stop_ || !queue_.empty() || !cancels_.empty() || !truncates_.empty() || !closes_.empty() ||
                       clear_prefix_ || !active_.empty();
            });
            deferring_ = true;
            bool go_on = admit();
            deferring_ = false;
            if (!go_on) break;
        }
        for (auto& cb : deferred_) cb();
        deferred_.clear();
        const auto t0 = clock_type::now();
        const double c0 = thread_cpu_ms();
        step();
        const double step_cpu_ms = thread_cpu_ms() - c0 + side_cpu_ms_;
        side_cpu_ms_ = 0;
        const double step_ms = ms_between(t0, clock_type::now());
        n_free_blocks_.store(kv_.n_free_blocks(), std::memory_order_relaxed);
        std::lock_guard lock(counters_mutex_);
        counters_.busy_ms += step_ms;
        counters_.busy_cpu_ms += step_cpu_ms;
        counters_.n_active = static_cast<int>(std::count_if(active_.begin(), active_.end(), [](const auto& a) { return !a->done; }));
        counters_.n_queued = n_queued_.load(std::memory_order_relaxed);
        counters_.n_kv_blocks_free = kv_.n_free_blocks();
        counters_.n_kv_blocks_cached = prefix_ ? prefix_->n_blocks() : 0;
    }
    // Shutting down: everything still queued or running ends as cancelled.
    for (auto& cb : deferred_) cb();
    deferred_.clear();
    std::deque<std::pair<request_id, request>> queued;
    {
        std::lock_guard lock(mutex_);
        queued.swap(queue_);
    }
    for (auto& a : active_) finish(*a, finish_reason::cancelled);
    for (auto& [id, req] : queued) {
        active tmp(id, std::move(req), nullptr);
        finish(tmp, finish_reason::cancelled);
    }
}

}  // namespace tachyon
