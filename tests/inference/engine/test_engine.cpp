#include "inference/engine/engine.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "inference/kernels/memory_bandwidth.h"

using namespace tachyon;

namespace {

const std::string models_dir = std::string(TACHYON_CONFORMANCE_DIR) + "/models";
const std::string stories = models_dir + "/stories260K.gguf";

bool have_stories() {
    if (std::filesystem::exists(stories)) return true;
    MESSAGE("skipped: " << stories << " is absent");
    return false;
}

std::vector<int32_t> ids_after(const std::string& key) {
    std::ifstream in(models_dir + "/stories260K_greedy_reference.txt");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) != 0) continue;
        std::istringstream is(line.substr(line.find(':') + 1));
        std::vector<int32_t> ids;
        int32_t id;
        while (is >> id) ids.push_back(id);
        return ids;
    }
    return {};
}

std::unique_ptr<engine> open_engine(int n_threads = 1, int n_ctx = 2048, bool draft_tuning = false) {
    engine_options o;
    o.n_threads = n_threads;
    o.n_ctx = n_ctx;
    o.draft_tuning = draft_tuning;
    auto e = engine::open(stories, o);
    REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.err().message));
    return std::move(e).value();
}

struct generation {
    std::vector<int32_t> tokens;
    request_stats stats;
};

generation generate(engine& e, session_id s, std::vector<int32_t> append, int n) {
    generation g;
    request r;
    r.session = s;
    r.append = std::move(append);
    r.max_tokens = n;
    r.on_token = [&g](int32_t t) {
        g.tokens.push_back(t);
        return true;
    };
    g.stats = e.run(std::move(r));
    return g;
}

}  // namespace

TEST_CASE("greedy generation through the engine reproduces the reference continuation") {
    if (!have_stories()) return;
    auto e = open_engine();
    auto prompt = ids_after("prompt_ids");
    auto expected = ids_after("generated_ids");
    session_id s = e->create_session();
    auto g = generate(*e, s, prompt, 64);
    CHECK(g.tokens == expected);
    CHECK(g.stats.finish == finish_reason::length);
    CHECK(g.stats.n_prefilled == 5);
    CHECK(g.stats.n_generated == 64);
    CHECK(e->session_length(s) == 5 + 64);
}

TEST_CASE("a session keeps its KV: the next request prefills only what it appends") {
    if (!have_stories()) return;
    auto e = open_engine();
    auto prompt = ids_after("prompt_ids");
    auto expected = ids_after("generated_ids");
    session_id s = e->create_session();
    auto first = generate(*e, s, prompt, 10);
    REQUIRE(first.tokens.size() == 10);
    // Continue the same session: the last generated token is fed now (1), nothing else re-runs.
    auto second = generate(*e, s, {}, 10);
    CHECK(second.stats.n_prefilled == 1);
    std::vector<int32_t> both = first.tokens;
    both.insert(both.end(), second.tokens.begin(), second.tokens.end());
    CHECK(both == std::vector<int32_t>(expected.begin(), expected.begin() + 20));

    // Appending tokens prefills exactly those (plus the pending last token).
    auto third = generate(*e, s, {expected[20], expected[21]}, 1);
    CHECK(third.stats.n_prefilled == 3);
}

TEST_CASE("truncating a session rewinds it, regenerating gives the same tokens") {
    if (!have_stories()) return;
    auto e = open_engine();
    auto prompt = ids_after("prompt_ids");
    session_id s = e->create_session();
    auto a = generate(*e, s, prompt, 12);
    e->truncate_session(s, static_cast<int>(prompt.size()) - 1);
    auto b = generate(*e, s, {prompt.back()}, 12);
    CHECK(a.tokens == b.tokens);
    CHECK(b.stats.n_prefilled == 1);
}

TEST_CASE("concurrent sessions are batched and each gets what it would get alone") {
    if (!have_stories()) return;
    auto e = open_engine(2);
    auto prompt = ids_after("prompt_ids");
    auto expected = ids_after("generated_ids");
    const int n_sessions = 6;
    std::vector<std::vector<int32_t>> outs(n_sessions);
    std::vector<std::future<request_stats>> done;
    for (int i = 0; i < n_sessions; ++i) {
        auto p = std::make_shared<std::promise<request_stats>>();
        done.push_back(p->get_future());
        request r;
        r.session = e->create_session();
        r.append = prompt;
        r.max_tokens = 40 + i;
        r.on_token = [&outs, i](int32_t t) {
            outs[static_cast<size_t>(i)].push_back(t);
            return true;
        };
        r.on_done = [p](const request_stats& st) { p->set_value(st); };
        e->submit(std::move(r));
    }
    for (int i = 0; i < n_sessions; ++i) {
        auto st = done[static_cast<size_t>(i)].get();
        CHECK(st.finish == finish_reason::length);
        CHECK(outs[static_cast<size_t>(i)] == std::vector<int32_t>(expected.begin(), expected.begin() + 40 + i));
    }
}

TEST_CASE("the token callback stops generation by returning false, stop tokens end it") {
    if (!have_stories()) return;
    auto e = open_engine();
    auto prompt = ids_after("prompt_ids");
    auto expected = ids_after("generated_ids");
    session_id s = e->create_session();
    int seen = 0;
    request r;
    r.session = s;
    r.append = prompt;
    r.max_tokens = 50;
    r.on_token = [&seen](int32_t) { return ++seen < 3; };
    auto st = e->run(std::move(r));
    CHECK(st.finish == finish_reason::stop);
    CHECK(st.n_generated == 3);

    session_id s2 = e->create_session();
    request r2;
    r2.session = s2;
    r2.append = prompt;
    r2.max_tokens = 50;
    r2.stop_tokens = {expected[4]};
    auto st2 = e->run(std::move(r2));
    CHECK(st2.finish == finish_reason::stop);
    CHECK(st2.n_generated == 5);
}

TEST_CASE("a constraint mask restricts every sampled token") {
    if (!have_stories()) return;
    auto e = open_engine();
    session_id s = e->create_session();
    request r;
    r.session = s;
    r.append = ids_after("prompt_ids");
    r.max_tokens = 20;
    std::vector<int32_t> got;
    r.on_token = [&got](int32_t t) {
        got.push_back(t);
        return true;
    };
    r.constrain = [](std::span<const int32_t>, std::span<uint8_t> allowed) {
        for (size_t i = 0; i < allowed.size(); ++i) allowed[i] = (i % 2 == 0) ? 1 : 0;  // even ids only
    };
    e->run(std::move(r));
    REQUIRE(got.size() == 20);
    for (int32_t t : got) CHECK(t % 2 == 0);
}

TEST_CASE("bad requests end with an error, never a crash") {
    if (!have_stories()) return;
    auto e = open_engine(1, 64);
    session_id s = e->create_session();
    auto bad_token = generate(*e, s, {1, 99999}, 4);
    CHECK(bad_token.stats.finish == finish_reason::error);
    CHECK(bad_token.stats.error.find("outside the vocabulary") != std::string::npos);

    request unknown;
    unknown.session = 12345;
    unknown.append = {1};
    auto st = e->run(std::move(unknown));
    CHECK(st.finish == finish_reason::error);
    CHECK(st.error.find("unknown or closed session") != std::string::npos);

    // More tokens than the KV cache holds (64 positions).
    std::vector<int32_t> long_prompt(100, 5);
    session_id s2 = e->create_session();
    auto full = generate(*e, s2, long_prompt, 4);
    CHECK(full.stats.finish == finish_reason::error);
    CHECK(full.stats.error.find("blocks needed") != std::string::npos);

    auto empty = generate(*e, e->create_session(), {}, 4);
    CHECK(empty.stats.finish == finish_reason::error);
}

TEST_CASE("cancel ends a running request, closing sessions returns their KV blocks") {
    if (!have_stories()) return;
    auto e = open_engine();
    const int free_at_start = [&] {
        // The engine publishes the count after its first loop iteration.
        generate(*e, e->create_session(), {1}, 1);
        return e->n_free_kv_blocks();
    }();
    session_id s = e->create_session();
    std::promise<void> first_token;
    std::atomic<bool> signalled{false};
    request r;
    r.session = s;
    r.append = ids_after("prompt_ids");
    r.max_tokens = 1000000;
    r.on_token = [&](int32_t) {
        if (!signalled.exchange(true)) first_token.set_value();
        return true;
    };
    std::promise<request_stats> done;
    r.on_done = [&](const request_stats& st) { done.set_value(st); };
    request_id id = e->submit(std::move(r));
    first_token.get_future().wait();
    e->cancel(id);
    auto st = done.get_future().get();
    CHECK(st.finish == finish_reason::cancelled);
    CHECK(st.n_generated >= 1);
    CHECK(e->n_free_kv_blocks() < free_at_start);
    e->close_session(s);
    e->clear_prefix_cache();                     // the cache kept the full blocks of the closed session
    generate(*e, e->create_session(), {1}, 1);  // lets the engine process the close
    CHECK(e->n_free_kv_blocks() == free_at_start - 1);  // only the new one-token session holds a block
}

namespace {

std::unique_ptr<engine> open_engine_with(bool prefix_cache, int n_ctx = 2048, int n_threads = 1) {
    engine_options o;
    o.n_threads = n_threads;
    o.n_ctx = n_ctx;
    o.prefix_cache = prefix_cache;
    auto e = engine::open(stories, o);
    REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.err().message));
    return std::move(e).value();
}

// A prompt of 69 tokens: the reference prompt and its continuation.
std::vector<int32_t> long_prompt() {
    auto p = ids_after("prompt_ids");
    auto g = ids_after("generated_ids");
    p.insert(p.end(), g.begin(), g.end());
    return p;
}

}  // namespace

TEST_CASE("prefix cache: a second session with the same prompt computes only the uncached tail, same output") {
    if (!have_stories()) return;
    auto cached = open_engine_with(true);
    auto plain = open_engine_with(false);
    const auto prompt = long_prompt();
    REQUIRE(prompt.size() == 69);
    auto reference = generate(*plain, plain->create_session(), prompt, 24);
    CHECK(reference.stats.n_cached == 0);
    CHECK(reference.stats.n_prefilled == 69);

    auto first = generate(*cached, cached->create_session(), prompt, 24);
    CHECK(first.stats.n_cached == 0);
    CHECK(first.tokens == reference.tokens);
    auto second = generate(*cached, cached->create_session(), prompt, 24);
    CHECK(second.stats.n_cached == 64);    // four full blocks of 16; the last token is always computed
    CHECK(second.stats.n_prefilled == 5);
    CHECK(second.tokens == reference.tokens);

    // A prompt that diverges inside block 3 reuses blocks 0-1 only, and still matches the uncached engine.
    auto forked = prompt;
    forked[40] = forked[40] == 7 ? 8 : 7;
    auto f_plain = generate(*plain, plain->create_session(), forked, 16);
    auto f_cached = generate(*cached, cached->create_session(), forked, 16);
    CHECK(f_cached.stats.n_cached == 32);
    CHECK(f_cached.tokens == f_plain.tokens);

    auto c = cached->counters();
    CHECK(c.n_cached == 64 + 32);
    CHECK(c.n_cache_lookups == 3);
    CHECK(c.n_kv_blocks_cached > 0);
    CHECK(plain->counters().n_kv_blocks_cached == 0);
}

TEST_CASE("prefix cache: a stateless client re-sending its growing conversation hits the cache every turn") {
    if (!have_stories()) return;
    auto e = open_engine_with(true);
    auto conversation = long_prompt();
    conversation.resize(20);
    int total_cached = 0;
    for (int turn = 0; turn < 4; ++turn) {
        session_id s = e->create_session();  // a fresh request each turn, as over HTTP
        auto g = generate(*e, s, conversation, 12);
        if (turn > 0) CHECK(g.stats.n_cached >= static_cast<int>(conversation.size()) - 1 - 12 - 15);
        total_cached += g.stats.n_cached;
        conversation.insert(conversation.end(), g.tokens.begin(), g.tokens.end());
        e->close_session(s);
    }
    CHECK(total_cached > 0);
}

TEST_CASE("prefix cache: concurrent sessions sharing a prefix get what each gets alone") {
    if (!have_stories()) return;
    auto cached = open_engine_with(true, 2048, 2);
    auto plain = open_engine_with(false);
    const auto base = long_prompt();
    const int n = 6;
    std::vector<std::vector<int32_t>> prompts, want(n), got(n);
    for (int i = 0; i < n; ++i) {
        auto p = base;
        p.resize(static_cast<size_t>(40 + 5 * i));  // shares 2+ blocks with the others
        prompts.push_back(p);
        want[static_cast<size_t>(i)] = generate(*plain, plain->create_session(), p, 20).tokens;
    }
    generate(*cached, cached->create_session(), base, 1);  // warms the cache
    std::vector<std::future<request_stats>> done;
    for (int i = 0; i < n; ++i) {
        auto pr = std::make_shared<std::promise<request_stats>>();
        done.push_back(pr->get_future());
        request r;
        r.session = cached->create_session();
        r.append = prompts[static_cast<size_t>(i)];
        r.max_tokens = 20;
        r.on_token = [&got, i](int32_t t) {
            got[static_cast<size_t>(i)].push_back(t);
            return true;
        };
        r.on_done = [pr](const request_stats& st) { pr->set_value(st); };
        cached->submit(std::move(r));
    }
    for (int i = 0; i < n; ++i) {
        auto st = done[static_cast<size_t>(i)].get();
        CHECK(st.n_cached >= 32);
        CHECK(got[static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
    }
}

TEST_CASE("KV memory pressure: unused cache blocks, then idle sessions give way, the idle session recomputes later") {
    if (!have_stories()) return;
    // 128 positions = 8 blocks of 16.
    auto e = open_engine_with(true, 128);
    auto plain = open_engine_with(false);
    auto p = long_prompt();
    std::vector<int32_t> a(p.begin(), p.begin() + 60), b(p.begin() + 5, p.begin() + 65);
    session_id sa = e->create_session();
    auto ga = generate(*e, sa, a, 10);  // 70 tokens: 5 blocks, idle afterwards
    REQUIRE(ga.stats.finish == finish_reason::length);
    auto gb = generate(*e, e->create_session(), b, 10);  // needs 5 blocks of 8: session a must give way
    CHECK(gb.stats.finish == finish_reason::length);
    CHECK(gb.tokens == generate(*plain, plain->create_session(), b, 10).tokens);
    CHECK(e->counters().n_evicted_sessions >= 1);

    // Session a goes on as if nothing happened: its KV is recomputed.
    auto ga2 = generate(*e, sa, {}, 8);
    session_id pa = plain->create_session();
    generate(*plain, pa, a, 10);
    auto want = generate(*plain, pa, {}, 8);
    CHECK(ga2.stats.finish == finish_reason::length);
    CHECK(ga2.tokens == want.tokens);
}

TEST_CASE("no KV block leaks after 1,000 sessions through the prefix cache") {
    if (!have_stories()) return;
    auto e = open_engine_with(true, 512);
    const int n_blocks = 512 / 16;
    const auto base = long_prompt();
    for (int i = 0; i < 1000; ++i) {
        std::vector<int32_t> prompt(base.begin(), base.begin() + 20 + (i * 7) % 45);
        prompt[0] = static_cast<int32_t>(1 + i % 4);  // four distinct prefixes: they fit in the cache together
        session_id s = e->create_session();
        auto g = generate(*e, s, prompt, 3);
        REQUIRE(g.stats.finish == finish_reason::length);
        e->close_session(s);
    }
    auto c = e->counters();
    CHECK(c.n_requests == 1000);
    CHECK(c.n_cached > 0);
    e->clear_prefix_cache();
    session_id last = e->create_session();
    generate(*e, last, {1}, 1);  // processes the close and the clear
    CHECK(e->n_free_kv_blocks() == n_blocks - 1);  // only the last one-token session holds a block
}

namespace {

generation generate_spec(engine& e, session_id s, std::vector<int32_t> append, int n, int n_draft,
                         sampling_params sampling = sampling_params::greedy(), mask_callback constrain = {}) {
    generation g;
    request r;
    r.session = s;
    r.append = std::move(append);
    r.max_tokens = n;
    r.n_draft = n_draft;
    r.sampling = sampling;
    r.constrain = std::move(constrain);
    r.on_token = [&g](int32_t t) {
        g.tokens.push_back(t);
        return true;
    };
    g.stats = e.run(std::move(r));
    return g;
}

}  // namespace

TEST_CASE("speculative decoding: greedy output is identical with and without drafts, and drafts are accepted") {
    if (!have_stories()) return;
    // Every draft verified whole (with draft_tuning, how much of one is
    // verified, and whether any is, depends on the step times measured).
    auto e = open_engine();
    const auto prompt = long_prompt();  // the reference text twice over: lookups find it
    auto plain = generate_spec(*e, e->create_session(), prompt, 120, 0);
    auto spec = generate_spec(*e, e->create_session(), prompt, 120, 8);
    CHECK(spec.tokens == plain.tokens);
    // Drafts cut to what the measured costs pay for: the same tokens.
    auto tuned_engine = open_engine(1, 2048, true);
    for (int round = 0; round < 3; ++round) {
        auto tuned = generate_spec(*tuned_engine, tuned_engine->create_session(), prompt, 120, 8);
        CHECK(tuned.tokens == plain.tokens);
        CHECK(tuned.stats.n_draft_accepted <= tuned.stats.n_drafted);
    }
    CHECK(spec.stats.n_generated == 120);
    CHECK(plain.stats.n_drafted == 0);
    CHECK(spec.stats.n_drafted > 0);
    CHECK(spec.stats.n_draft_accepted > 0);
    CHECK(spec.stats.n_draft_accepted <= spec.stats.n_drafted);
    // The session holds exactly prompt + generated tokens, in the KV too: it continues identically.
    session_id sp = e->create_session(), ss = e->create_session();
    generate_spec(*e, sp, prompt, 30, 0);
    generate_spec(*e, ss, prompt, 30, 8);
    CHECK(e->session_tokens(sp) == e->session_tokens(ss));
    CHECK(generate_spec(*e, sp, {}, 40, 0).tokens == generate_spec(*e, ss, {}, 40, 8).tokens);
    auto c = e->counters();
    CHECK(c.n_draft_accepted > 0);
}

TEST_CASE("speculative decoding respects max_tokens, stop tokens and the constraint mask") {
    if (!have_stories()) return;
    auto e = open_engine();
    const auto prompt = long_prompt();
    auto plain = generate_spec(*e, e->create_session(), prompt, 50, 0);
    for (int n : {1, 2, 7, 13}) {
        auto g = generate_spec(*e, e->create_session(), prompt, n, 8);
        CHECK(g.stats.n_generated == n);
        CHECK(g.tokens == std::vector<int32_t>(plain.tokens.begin(), plain.tokens.begin() + n));
    }
    // A stop token in the middle of an accepted draft ends the request there.
    request r;
    r.session = e->create_session();
    r.append = prompt;
    r.max_tokens = 50;
    r.n_draft = 8;
    r.stop_tokens = {plain.tokens[20]};
    std::vector<int32_t> got;
    r.on_token = [&got](int32_t t) {
        got.push_back(t);
        return true;
    };
    auto st = e->run(std::move(r));
    CHECK(st.finish == finish_reason::stop);
    auto first_stop = std::find(plain.tokens.begin(), plain.tokens.end(), plain.tokens[20]);
    CHECK(got == std::vector<int32_t>(plain.tokens.begin(), first_stop + 1));

    // Under a mask, drafts the mask forbids are never kept: same tokens as masked decoding without drafts.
    auto odd_only = [](std::span<const int32_t>, std::span<uint8_t> allowed) {
        for (size_t i = 0; i < allowed.size(); ++i) allowed[i] = (i % 2 == 1) ? 1 : 0;
    };
    auto m0 = generate_spec(*e, e->create_session(), prompt, 40, 0, sampling_params::greedy(), odd_only);
    auto m8 = generate_spec(*e, e->create_session(), prompt, 40, 8, sampling_params::greedy(), odd_only);
    CHECK(m0.tokens == m8.tokens);
    for (int32_t t : m8.tokens) CHECK(t % 2 == 1);
}

TEST_CASE("prefill/decode split: sessions prefilling beside others decoding get what each gets alone") {
    if (!have_stories()) return;
    auto plain = open_engine_with(false);
    engine_options o;
    o.n_ctx = 4096;
    o.prefix_cache = false;
    o.split_prefill = true;
    o.max_batch_tokens = 16;  // prompts take several chunks while earlier sessions decode
    auto opened = engine::open(stories, o);
    REQUIRE(opened.ok());
    auto& split = **opened;
    const auto base = long_prompt();
    const int n = 6;
    std::vector<std::vector<int32_t>> prompts, want(n), got(n);
    for (int i = 0; i < n; ++i) {
        auto p = base;
        p.resize(static_cast<size_t>(20 + 9 * i));
        prompts.push_back(p);
        want[static_cast<size_t>(i)] = generate(*plain, plain->create_session(), p, 30).tokens;
    }
    std::vector<std::future<request_stats>> done;
    for (int i = 0; i < n; ++i) {
        auto pr = std::make_shared<std::promise<request_stats>>();
        done.push_back(pr->get_future());
        request r;
        r.session = split.create_session();
        r.append = prompts[static_cast<size_t>(i)];
        r.max_tokens = 30;
        r.on_token = [&got, i](int32_t t) {
            got[static_cast<size_t>(i)].push_back(t);
            return true;
        };
        r.on_done = [pr](const request_stats& st) { pr->set_value(st); };
        split.submit(std::move(r));
        if (i % 2 == 1) done[static_cast<size_t>(i - 1)].wait();  // the next ones arrive mid-decode
    }
    for (int i = 0; i < n; ++i) {
        auto st = done[static_cast<size_t>(i)].get();
        CHECK(st.finish == finish_reason::length);
        CHECK(st.n_prefilled == static_cast<int>(prompts[static_cast<size_t>(i)].size()));
        CHECK(got[static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
    }
    CHECK(split.counters().busy_cpu_ms > 0);
}

TEST_CASE("the engine loads the model for its context: phi3 takes its long RoPE factors beyond the original context") {
    const std::string phi3 = std::string(TACHYON_CONFORMANCE_DIR) + "/arch/phi3.Q4_K_M.gguf";
    if (!std::filesystem::exists(phi3)) {
        MESSAGE("skipped: " << phi3 << " is absent");
        return;
    }
    for (int n_ctx : {4096, 8192}) {
        CAPTURE(n_ctx);
        engine_options o;
        o.n_ctx = n_ctx;
        auto e = engine::open(phi3, o);
        REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.err().message));
        // rope.scaling.original_context_length is 4096.
        CHECK((*e)->get_model().hparams().rope_factors_long == (n_ctx > 4096));
    }
}

TEST_CASE("a model names the memory one decoded token's matrices read, and bench decode's bandwidth reads exactly it") {
    const std::string shipped = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";
    auto m = load_model(shipped);
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
    const auto& hp = (*m)->hparams();
    const auto reads = (*m)->decode_reads();
    // q, k, v, o, gate, up and down of every layer, and the output projection
    CHECK(reads.size() == static_cast<size_t>(7 * hp.n_layer + 1));
    // the file's bytes of those matrices (f16): the panels hold the same rows (a tail under 32 rows stays in place)
    const gguf_file& f = (*m)->file();
    size_t file_bytes = 0;
    for (const gguf_tensor_info& t : f.tensors())
        if (t.shape.size() == 2 && t.name != "token_embd.weight") file_bytes += static_cast<size_t>(t.n_elements()) * 2;
    if (f.find_tensor("output.weight") == nullptr) file_bytes += static_cast<size_t>(hp.n_vocab) * static_cast<size_t>(hp.n_embd) * 2;
    size_t total = 0;
    for (const auto& r : reads) {
        CHECK(r.data() != nullptr);
        CHECK(r.size() > 0);
        total += r.size();
    }
    CHECK(total <= file_bytes);
    CHECK(total >= file_bytes * 9 / 10);
    // the measurement reads every region from its first 256-byte boundary to its last
    size_t trimmed = 0;
    for (const auto& r : reads) {
        const auto begin = (reinterpret_cast<uintptr_t>(r.data()) + 255) / 256 * 256;
        const auto end = (reinterpret_cast<uintptr_t>(r.data()) + r.size()) / 256 * 256;
        if (end > begin) trimmed += end - begin;
    }
    kernel_context ctx(2);
    const bandwidth_sample bw = measure_read_bandwidth(ctx, reads, 0.001);
    CHECK(bw.bytes == trimmed);
    CHECK(bw.n_threads == 2);
    CHECK(bw.gb_per_s > 0);
}

TEST_CASE("an engine left to choose its threads takes one per hardware thread, and takes a given count as it is") {
    const std::string shipped = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";
    engine_options o;
    o.n_ctx = 256;
    CHECK(o.n_threads == 0);  // the default: automatic
    auto e = engine::open(shipped, o);
    REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.err().message));
    // even for a model whose matmuls are too small to split: each matmul and
    // each layer's attention decides for itself whether to fan out
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    CHECK((*e)->n_threads() == hw);
    CHECK(engine_threads(0) == hw);
    CHECK(engine_threads(3) == 3);
    o.n_threads = 2;
    auto two = engine::open(shipped, o);
    REQUIRE(two.ok());
    CHECK((*two)->n_threads() == 2);
    o.n_threads = -1;
    auto bad = engine::open(shipped, o);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("n_threads") != std::string::npos);
}
