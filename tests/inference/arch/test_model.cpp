#include "inference/arch/model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "inference/kernels/kernels.h"
#include "inference/kv/kv_cache.h"
#include "inference/gguf/model_writer.h"
#include "inference/engine/sampler.h"

using namespace tachyon;

namespace {

// A folder of this process's own: CTest runs the cases of this file as
// parallel processes, and files of one fixed name would race.
std::filesystem::path test_dir() {
    struct folder {
        std::filesystem::path path = std::filesystem::temp_directory_path() / ("tachyon-test-model-" + std::to_string(::getpid()));
        folder() { std::filesystem::create_directories(path); }
        ~folder() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static const folder dir;
    return dir.path;
}

const std::string models_dir = std::string(TACHYON_CONFORMANCE_DIR) + "/models";
const std::string stories = models_dir + "/stories260K.gguf";

bool have_stories() {
    if (std::filesystem::exists(stories)) return true;
    MESSAGE("skipped: " << stories << " is absent");
    return false;
}

struct logits_ref {
    std::vector<int32_t> tokens;             // token fed at each position
    std::vector<std::vector<float>> logits;  // logits after it
};

logits_ref read_logits_ref() {
    logits_ref ref;
    std::ifstream in(models_dir + "/stories260K_logits_llama2c_ref.txt");
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream is(line);
        std::string w;
        int pos = 0, token = 0;
        is >> w >> pos >> w >> token >> w;
        REQUIRE(pos == static_cast<int>(ref.tokens.size()));
        ref.tokens.push_back(token);
        std::vector<float> l;
        float v;
        while (is >> v) l.push_back(v);
        REQUIRE(l.size() == 512);
        ref.logits.push_back(std::move(l));
    }
    return ref;
}

std::vector<int32_t> read_ids_after(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) {
            std::istringstream is(line.substr(line.find(':') + 1));
            std::vector<int32_t> ids;
            int32_t id;
            while (is >> id) ids.push_back(id);
            return ids;
        }
    }
    return {};
}

kv_cache make_kv(const model& m, int n_ctx) {
    kv_cache_config c;
    c.n_layer = m.hparams().n_layer;
    c.n_kv_embd = m.hparams().n_embd_kv();
    c.block_size = 16;
    c.n_blocks = (n_ctx + 15) / 16;
    return kv_cache(c);
}

float max_abs_diff(const float* a, const std::vector<float>& b) {
    float d = 0.0f;
    for (size_t i = 0; i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

}  // namespace

TEST_CASE("stories260K binds with the hyper-parameters of its metadata") {
    if (!have_stories()) return;
    auto m = load_model(stories);
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
    const model_hparams& hp = (*m)->hparams();
    CHECK(hp.arch == "llama");
    CHECK(hp.n_vocab == 512);
    CHECK(hp.n_embd == 64);
    CHECK(hp.n_layer == 5);
    CHECK(hp.n_head == 8);
    CHECK(hp.n_head_kv == 4);
    CHECK(hp.head_dim == 8);
    CHECK(hp.n_ff == 172);
}

TEST_CASE("stories260K logits match llama2.c within 1e-4, token by token and batched, on every kernel set") {
    if (!have_stories()) return;
    auto m = load_model(stories);
    REQUIRE(m.ok());
    logits_ref ref = read_logits_ref();
    REQUIRE(ref.tokens.size() >= 16);  // BOS + 15 prompt tokens, then greedy steps
    const int n_vocab = (*m)->hparams().n_vocab;
    for (kernel_isa isa : {kernel_isa::scalar, default_isa()}) {
        CAPTURE(to_string(isa));
        kernel_context ctx(1, isa);

        // One token per forward call, as decoding runs.
        kv_cache kv = make_kv(**m, 64);
        seq_id s = kv.create();
        std::vector<float> logits(static_cast<size_t>(n_vocab));
        float worst = 0.0f;
        for (size_t p = 0; p < ref.tokens.size(); ++p) {
            forward_batch b;
            b.add(ref.tokens[p], s, static_cast<int32_t>(p), true);
            REQUIRE(kv.reserve(s, 1).ok());
            (*m)->forward(ctx, b, kv, logits.data());
            kv.commit(s, 1);
            worst = std::max(worst, max_abs_diff(logits.data(), ref.logits[p]));
        }
        CHECK(worst < 1e-4f);

        // The whole sequence in one call (prefill), all logits requested.
        kv_cache kv2 = make_kv(**m, 64);
        seq_id s2 = kv2.create();
        forward_batch all;
        for (size_t p = 0; p < ref.tokens.size(); ++p) all.add(ref.tokens[p], s2, static_cast<int32_t>(p), true);
        REQUIRE(kv2.reserve(s2, static_cast<int>(all.size())).ok());
        std::vector<float> all_logits(all.size() * static_cast<size_t>(n_vocab));
        (*m)->forward(ctx, all, kv2, all_logits.data());
        float worst_batched = 0.0f;
        for (size_t p = 0; p < ref.tokens.size(); ++p)
            worst_batched = std::max(worst_batched, max_abs_diff(&all_logits[p * static_cast<size_t>(n_vocab)], ref.logits[p]));
        CHECK(worst_batched < 1e-4f);
        MESSAGE(to_string(isa) << ": max |logit - llama2.c| token by token " << worst << ", batched " << worst_batched);
    }
}

TEST_CASE("stories260K greedy continuation of 'Once upon a time' reproduces the 64 reference ids") {
    if (!have_stories()) return;
    auto m = load_model(stories);
    REQUIRE(m.ok());
    const std::string ref_path = models_dir + "/stories260K_greedy_reference.txt";
    std::vector<int32_t> prompt = read_ids_after(ref_path, "prompt_ids");
    std::vector<int32_t> expected = read_ids_after(ref_path, "generated_ids");
    REQUIRE(prompt.size() == 5);
    REQUIRE(expected.size() == 64);

    kernel_context ctx(1);
    kv_cache kv = make_kv(**m, 128);
    seq_id s = kv.create();
    forward_batch b;
    for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], s, static_cast<int32_t>(i), i + 1 == prompt.size());
    std::vector<float> logits(512);
    REQUIRE(kv.reserve(s, static_cast<int>(b.size())).ok());
    (*m)->forward(ctx, b, kv, logits.data());
    kv.commit(s, static_cast<int>(b.size()));
    std::vector<int32_t> got;
    for (int i = 0; i < 64; ++i) {
        int32_t next = argmax(logits);
        got.push_back(next);
        b.clear();
        b.add(next, s, kv.n_tokens(s), true);
        REQUIRE(kv.reserve(s, 1).ok());
        (*m)->forward(ctx, b, kv, logits.data());
        kv.commit(s, 1);
    }
    CHECK(got == expected);
}

TEST_CASE("two sequences in one batch give the same logits as each alone") {
    if (!have_stories()) return;
    auto m = load_model(stories);
    REQUIRE(m.ok());
    logits_ref ref = read_logits_ref();
    kernel_context ctx(2);
    kv_cache kv = make_kv(**m, 128);
    seq_id a = kv.create(), c = kv.create();
    // a: the reference tokens; c: the same tokens from position 0, interleaved in one batch.
    forward_batch b;
    for (size_t p = 0; p < 10; ++p) {
        b.add(ref.tokens[p], a, static_cast<int32_t>(p), true);
        b.add(ref.tokens[p], c, static_cast<int32_t>(p), true);
    }
    REQUIRE(kv.reserve(a, 10).ok());
    REQUIRE(kv.reserve(c, 10).ok());
    std::vector<float> logits(b.size() * 512);
    (*m)->forward(ctx, b, kv, logits.data());
    for (size_t p = 0; p < 10; ++p) {
        CHECK(max_abs_diff(&logits[(2 * p) * 512], ref.logits[p]) < 1e-4f);
        CHECK(max_abs_diff(&logits[(2 * p + 1) * 512], ref.logits[p]) < 1e-4f);
    }
}

TEST_CASE("a file that is not a llama model is rejected with the reason") {
    gguf_writer w;
    w.set_string("general.architecture", "mamba");
    auto bytes = w.to_bytes();
    auto f = gguf_file::parse(bytes, "mamba.gguf");
    REQUIRE(f.ok());
    auto m = load_model(std::move(f).value());
    REQUIRE_FALSE(m.ok());
    CHECK(m.err().message.find("mamba.gguf") != std::string::npos);
    CHECK(m.err().message.find("'mamba' is not supported") != std::string::npos);

    gguf_writer w2;
    w2.set_string("general.architecture", "llama");
    w2.set_uint32("llama.embedding_length", 64);
    auto bytes2 = w2.to_bytes();
    auto f2 = gguf_file::parse(bytes2, "partial.gguf");
    REQUIRE(f2.ok());
    auto m2 = load_model(std::move(f2).value());
    REQUIRE_FALSE(m2.ok());
    CHECK(m2.err().message.find("llama.block_count") != std::string::npos);
}

TEST_CASE("attention on AMX-BF16 tiles follows the KV cache through truncation and rewriting") {
    // head_dim 32 with two query heads per KV head: the shape the tiles take.
    if (!cpu_has_amx_bf16() || default_isa() < kernel_isa::amx) {
        MESSAGE("skipped: this CPU has no AMX-BF16");
        return;
    }
    synthetic_llama_shape shape;
    shape.n_vocab = 256;
    shape.n_embd = 64;
    shape.n_layer = 2;
    shape.n_head = 2;
    shape.n_head_kv = 1;
    shape.n_ff = 128;
    const std::string path = (test_dir() / "tachyon-test-amx-attention.gguf").string();
    REQUIRE(write_synthetic_llama(path, shape, tensor_type::f32, 5).ok());
    auto m = load_model(path);
    REQUIRE(m.ok());
    const size_t n_vocab = 256;
    // Every step's logits on one kernel set: a 70-token prompt, four tokens
    // in one run (as a draft is verified), a rewind to 66 positions and
    // eight other tokens in one run, which ends where the first did. Their
    // chunk of 32 positions was copied to tiles before the rewind, from the
    // same blocks and as many positions: reading that copy again would
    // attend to the old tokens. Then two single tokens (decode).
    const auto steps = [&](kernel_isa isa, int n_threads) {
        kernel_context ctx(n_threads, isa);
        kv_cache kv = make_kv(**m, 128);
        const seq_id s = kv.create();
        std::vector<float> out;
        const auto run = [&](int first_pos, std::vector<int32_t> tokens) {
            forward_batch b;
            for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], s, first_pos + static_cast<int32_t>(i), true);
            REQUIRE(kv.reserve(s, static_cast<int>(tokens.size())).ok());
            std::vector<float> logits(tokens.size() * n_vocab);
            (*m)->forward(ctx, b, kv, logits.data());
            kv.commit(s, static_cast<int>(tokens.size()));
            out.insert(out.end(), logits.begin(), logits.end());
        };
        std::vector<int32_t> prompt;
        for (int i = 0; i < 70; ++i) prompt.push_back((i * 37 + 11) % 256);
        run(0, prompt);
        run(70, {200, 201, 202, 203});
        kv.truncate(s, 66);
        run(66, {5, 6, 7, 8, 9, 10, 11, 12});
        run(74, {13});
        run(75, {14});
        return out;
    };
    const std::vector<float> tiles = steps(kernel_isa::amx, 1), reference = steps(kernel_isa::avx512, 1);
    REQUIRE(tiles.size() == reference.size());
    // Two threads split the conversion and the tiles between them: the same numbers.
    CHECK(steps(kernel_isa::amx, 2) == tiles);
    float worst = 0.0f, scale = 0.0f;
    for (size_t i = 0; i < tiles.size(); ++i) {
        worst = std::max(worst, std::fabs(tiles[i] - reference[i]));
        scale = std::max(scale, std::fabs(reference[i]));
    }
    MESSAGE("max |logit difference| " << worst << " of logits up to " << scale);
    CHECK(worst < 1e-5f * scale);
    std::filesystem::remove(path);
}

namespace {

// A small synthetic llama with one metadata value replaced (or added) by `edit`.
template <class Edit>
std::string synthetic_with(const std::string& name, Edit edit) {
    const auto dir = test_dir();
    const std::string base = (dir / "tachyon-test-hparams-base.gguf").string();
    synthetic_llama_shape shape;
    shape.n_vocab = 64;
    shape.n_embd = 64;
    shape.n_layer = 1;
    shape.n_head = 2;
    shape.n_head_kv = 1;
    shape.n_ff = 64;
    shape.n_ctx = 128;
    REQUIRE(write_synthetic_llama(base, shape, tensor_type::f32, 3).ok());
    auto in = gguf_file::open(base);
    REQUIRE(in.ok());
    gguf_writer w;
    for (const auto& [key, value] : (*in)->metadata())
        if (key != "general.alignment") w.set_value(key, value);
    for (const gguf_tensor_info& t : (*in)->tensors()) w.add_tensor(t.name, t.shape, t.type, std::vector<std::byte>(t.data, t.data + t.n_bytes));
    edit(w);
    const std::string path = (dir / name).string();
    REQUIRE(w.write(path).ok());
    std::filesystem::remove(base);
    return path;
}

template <class Edit>
std::string load_error(const std::string& name, Edit edit) {
    const std::string path = synthetic_with(name, edit);
    auto m = load_model(path);
    std::filesystem::remove(path);
    REQUIRE_FALSE(m.ok());
    return m.err().message;
}

}  // namespace

TEST_CASE("hyper-parameters that would generate garbage are refused at load, naming the file and the key") {
    const float nan = std::nanf(""), inf = INFINITY;
    // The unedited file loads: each failure below is the edited value's.
    const std::string good = synthetic_with("hparams-good.gguf", [](gguf_writer&) {});
    auto m = load_model(good);
    std::filesystem::remove(good);
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
    CHECK((*m)->hparams().rope_base == 10000.0f);

    auto float_error = [&](const std::string& key, float v) {
        return load_error("bad.gguf", [&](gguf_writer& w) { w.set_float32(key, v); });
    };
    const std::string f = (test_dir() / "bad.gguf").string() + ": ";
    CHECK(float_error("llama.rope.freq_base", nan) == f + "llama.rope.freq_base: nan (expected a finite number > 0)");
    CHECK(float_error("llama.rope.freq_base", 0.0f) == f + "llama.rope.freq_base: 0 (expected a finite number > 0)");
    CHECK(float_error("llama.rope.freq_base", inf) == f + "llama.rope.freq_base: inf (expected a finite number > 0)");
    CHECK(float_error("llama.rope.freq_base", -10000.0f) == f + "llama.rope.freq_base: -10000 (expected a finite number > 0)");
    CHECK(float_error("llama.attention.layer_norm_rms_epsilon", nan) ==
          f + "llama.attention.layer_norm_rms_epsilon: nan (expected a finite number > 0)");
    CHECK(float_error("llama.attention.layer_norm_rms_epsilon", 0.0f) ==
          f + "llama.attention.layer_norm_rms_epsilon: 0 (expected a finite number > 0)");
    CHECK(float_error("llama.attention.layer_norm_rms_epsilon", -inf) ==
          f + "llama.attention.layer_norm_rms_epsilon: -inf (expected a finite number > 0)");
    CHECK(float_error("llama.attention.layer_norm_epsilon", nan) == f + "llama.attention.layer_norm_epsilon: nan (expected a finite number > 0)");
    CHECK(float_error("llama.rope.scaling.factor", 0.0f) == f + "llama.rope.scaling.factor: 0 (expected a finite number > 0)");
    CHECK(float_error("llama.rope.freq_scale", inf) == f + "llama.rope.freq_scale: inf (expected a finite number > 0)");
    // A value of the wrong type is named, not skipped for the default.
    const std::string wrong_type = load_error("bad.gguf", [](gguf_writer& w) { w.set_string("llama.rope.freq_base", "10000"); });
    CHECK(wrong_type.find(f) == 0);
    CHECK(wrong_type.find("llama.rope.freq_base") != std::string::npos);

    auto count_error = [&](const std::string& key, uint32_t v) {
        return load_error("bad.gguf", [&](gguf_writer& w) { w.set_uint32(key, v); });
    };
    CHECK(count_error("llama.attention.head_count", 0) == f + "llama.attention.head_count: 0 (expected an integer in [1, 16777216])");
    CHECK(count_error("llama.attention.head_count_kv", 0) == f + "llama.attention.head_count_kv: 0 (expected an integer in [1, 16777216])");
    CHECK(count_error("llama.embedding_length", 0) == f + "llama.embedding_length: 0 (expected an integer in [1, 16777216])");
    CHECK(count_error("llama.context_length", 0) == f + "llama.context_length: 0 (expected an integer in [1, 16777216])");
}

TEST_CASE("a tensor the architecture does not use is an error naming it") {
    const std::string msg = load_error("extra.gguf", [](gguf_writer& w) {
        w.add_tensor("blk.0.attn_q_norm.weight", {32}, tensor_type::f32, std::vector<std::byte>(32 * sizeof(float)));
    });
    CHECK(msg.find("extra.gguf") != std::string::npos);
    CHECK(msg.find("tensor 'blk.0.attn_q_norm.weight' is not used by architecture 'llama'") != std::string::npos);
}

TEST_CASE("an unknown architecture names the supported ones, a family's missing required key names the key and the file") {
    const std::string unknown = load_error("unknown.gguf", [](gguf_writer& w) { w.set_string("general.architecture", "rwkv7"); });
    CHECK(unknown.find("unknown.gguf") != std::string::npos);
    CHECK(unknown.find("'rwkv7' is not supported") != std::string::npos);
    for (const char* arch : {"llama", "qwen2", "qwen3", "granite", "smollm3", "phi3", "gemma2", "gemma3", "mistral3"})
        CHECK(unknown.find(arch) != std::string::npos);

    // A llama-shaped file relabelled gemma2 (its keys copied): everything
    // but the sliding window, which gemma2 cannot run without.
    const std::string gemma = load_error("gemma2.gguf", [](gguf_writer& w) {
        w.set_string("general.architecture", "gemma2");
        w.set_uint32("gemma2.embedding_length", 64);
        w.set_uint32("gemma2.block_count", 1);
        w.set_uint32("gemma2.attention.head_count", 2);
        w.set_uint32("gemma2.attention.head_count_kv", 1);
        w.set_uint32("gemma2.feed_forward_length", 64);
    });
    CHECK(gemma.find("gemma2.gguf") != std::string::npos);
    CHECK(gemma.find("gemma2.attention.sliding_window") != std::string::npos);

    const std::string scaling = load_error("scaling.gguf", [](gguf_writer& w) { w.set_string("llama.rope.scaling.type", "longrope"); });
    CHECK(scaling.find("llama.rope.scaling.type 'longrope' (expected none, linear, yarn or llama3)") != std::string::npos);
}

TEST_CASE("exact loading computes the same logits as the file's weights dequantized to f32 ahead of time") {
    const auto dir = test_dir();
    const std::string q8 = (dir / "exact-q8.gguf").string(), f32 = (dir / "exact-f32.gguf").string();
    synthetic_llama_shape shape;
    shape.n_vocab = 64;
    shape.n_embd = 64;
    shape.n_layer = 2;
    shape.n_head = 2;
    shape.n_head_kv = 1;
    shape.n_ff = 128;
    shape.n_ctx = 64;
    REQUIRE(write_synthetic_llama(q8, shape, tensor_type::q8_0, 9).ok());
    REQUIRE(requantize_model(q8, f32, tensor_type::f32).ok());
    load_options exact;
    exact.exact = true;
    auto a = load_model(q8, exact), b = load_model(f32), fast = load_model(q8);
    std::filesystem::remove(q8);
    std::filesystem::remove(f32);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(fast.ok());
    auto run = [&](model& m) {
        kernel_context ctx(1);
        kv_cache kv = make_kv(m, 16);
        const seq_id s = kv.create();
        forward_batch batch;
        for (int p = 0; p < 8; ++p) batch.add((p * 7) % 64, s, p, true);
        REQUIRE(kv.reserve(s, 8).ok());
        std::vector<float> logits(8 * 64);
        m.forward(ctx, batch, kv, logits.data());
        return logits;
    };
    // The same float math up to summation order; the fast path rounds activations to q8_0, 100 times further.
    const std::vector<float> want = run(**b);
    const float exact_diff = max_abs_diff(run(**a).data(), want), fast_diff = max_abs_diff(run(**fast).data(), want);
    MESSAGE("max |logit - f32 file|: exact " << exact_diff << ", fast " << fast_diff);
    CHECK(exact_diff < 1e-5f);
    CHECK(fast_diff > 100 * exact_diff);
}

TEST_CASE("mistral3's attention temperature sharpens the queries from attention.temperature_length on, and leaves earlier positions") {
    auto as_mistral3 = [](bool temperature) {
        return [temperature](gguf_writer& w) {
            w.set_string("general.architecture", "mistral3");
            w.set_uint32("mistral3.embedding_length", 64);
            w.set_uint32("mistral3.block_count", 1);
            w.set_uint32("mistral3.attention.head_count", 2);
            w.set_uint32("mistral3.attention.head_count_kv", 1);
            w.set_uint32("mistral3.feed_forward_length", 64);
            w.set_uint32("mistral3.context_length", 128);
            if (temperature) {
                w.set_float32("mistral3.attention.temperature_scale", 0.5f);
                w.set_uint32("mistral3.attention.temperature_length", 4);
            }
        };
    };
    auto logits_of = [](const std::string& path) {
        auto m = load_model(path);
        std::filesystem::remove(path);
        REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
        kernel_context ctx(1);
        kv_cache kv = make_kv(**m, 16);
        const seq_id s = kv.create();
        forward_batch batch;
        for (int p = 0; p < 10; ++p) batch.add((p * 5) % 64, s, p, true);
        REQUIRE(kv.reserve(s, 10).ok());
        std::vector<float> logits(10 * 64);
        (*m)->forward(ctx, batch, kv, logits.data());
        return logits;
    };
    const std::vector<float> plain = logits_of(synthetic_with("m3-plain.gguf", as_mistral3(false)));
    const std::vector<float> temp = logits_of(synthetic_with("m3-temp.gguf", as_mistral3(true)));
    auto row_diff = [&](int p) {
        float d = 0.0f;
        for (int i = 0; i < 64; ++i) d = std::max(d, std::fabs(plain[static_cast<size_t>(p * 64 + i)] - temp[static_cast<size_t>(p * 64 + i)]));
        return d;
    };
    for (int p = 0; p < 4; ++p) CHECK(row_diff(p) == 0.0f);  // factor 1 + 0.5 ln(1) = 1
    for (int p = 4; p < 10; ++p) CHECK(row_diff(p) > 0.0f);
}

namespace {

// Bytes of [p, p + n) mapped into this process now (/proc/self/pagemap's
// present bit, which needs no privilege), whole pages only.
size_t resident_bytes(const void* p, size_t n) {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page, end = (reinterpret_cast<uintptr_t>(p) + n) / page;
    if (end <= begin) return 0;
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    std::vector<uint64_t> entries(end - begin);
    const auto want = static_cast<ssize_t>(entries.size() * 8);
    const ssize_t got = ::pread(fd, entries.data(), static_cast<size_t>(want), static_cast<off_t>(begin * 8));
    ::close(fd);
    if (got != want) return 0;
    size_t present = 0;
    for (uint64_t e : entries) present += e >> 63;
    return present * page;
}

}  // namespace

namespace {

// Loads a copy of `file` of the conformance set, runs four batches through
// it, and checks that the file's pages of the matrices whose packed copies
// replace them stay out of memory.
void check_packed_weights_leave_memory(const std::string& file) {
    const std::string path = std::string(TACHYON_CONFORMANCE_DIR) + "/arch/" + file;
    if (!std::filesystem::exists(path)) {
        MESSAGE("skipped: " << path << " is absent");
        return;
    }
    // A copy written in one piece: the page cache then holds it in large
    // folios, as it does a model just downloaded or quantized, and a read of
    // one page maps the whole folio around it.
    const std::string copy = (test_dir() / file).string();
    {
        std::ifstream in(path, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::ofstream(copy, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    auto m = load_model(copy);
    std::filesystem::remove(copy);  // the mapping keeps the file
    REQUIRE(m.ok());
    // The matrices whose packed copies replace them, and of those the ones
    // no matrix read in place lies within 2 MiB of (a read there maps the
    // page cache's folio around it, which may reach into a neighbour).
    struct span_of {
        const std::byte* p;
        size_t n;
        bool replaced;
    };
    // token_embd.weight is packed only as a tied output; else its lookups
    // read it in place.
    const bool tied = (*m)->file().find_tensor("output.weight") == nullptr;
    std::vector<span_of> all;
    for (const gguf_tensor_info& t : (*m)->file().tensors()) {
        if (t.shape.size() != 2) continue;
        const bool packed = panels_replace_weights(t.type, t.shape[1], t.shape[0]);
        all.push_back({t.data, t.n_bytes, packed && (tied || t.name != "token_embd.weight")});
    }
    constexpr size_t reach = size_t{2} << 20;
    size_t replaced = 0;
    std::vector<std::pair<const void*, size_t>> released;
    for (const span_of& a : all) {
        if (!a.replaced) continue;
        replaced += a.n;
        const bool near_kept = std::any_of(all.begin(), all.end(), [&](const span_of& b) {
            return !b.replaced && b.p < a.p + a.n + reach && a.p < b.p + b.n + reach;
        });
        if (!near_kept) released.emplace_back(a.p, a.n);
    }
    if (released.empty()) {
        MESSAGE("skipped: this CPU's kernels read in place every matrix of " << file << ", or one near each packed one");
        return;
    }
    kernel_context ctx(1);
    kv_cache kv = make_kv(**m, 64);
    const seq_id s = kv.create();
    const int n_vocab = (*m)->hparams().n_vocab;
    for (int step = 0; step < 4; ++step) {
        forward_batch batch;
        for (int p = 0; p < 8; ++p) batch.add((step * 8 + p) * 7919 % n_vocab, s, step * 8 + p, p == 7);
        REQUIRE(kv.reserve(s, (step + 1) * 8).ok());
        std::vector<float> logits(static_cast<size_t>(n_vocab));
        (*m)->forward(ctx, batch, kv, logits.data());
    }
    const std::vector<char> touched(size_t{1} << 20, 1);
    REQUIRE(resident_bytes(touched.data(), touched.size()) >= touched.size() - 2 * 4096);  // the probe sees pages
    size_t back = 0, checked = 0;
    for (auto [p, n] : released) {
        back += resident_bytes(p, n);
        checked += n;
    }
    MESSAGE(file << ": replaced " << replaced << " bytes; of the " << checked << " away from weights read in place, " << back << " mapped after the forwards");
    CHECK(back < checked / 10);
}

}  // namespace

TEST_CASE("weights whose packed copies replace them leave the file's pages, and run after run do not come back: memory is one copy") {
    // A Qwen2.5-0.5B shape: a tied output, k-quants (packed from AVX2 up),
    // q5_0 and q8_0 fallbacks (packed at the AVX-512 level below AMX).
    check_packed_weights_leave_memory("qwen2_896.Q4_K_M.gguf");
    // Llama 3: k-quants only.
    check_packed_weights_leave_memory("llama3.Q4_K_M.gguf");
    check_packed_weights_leave_memory("gemma3.Q4_K_M.gguf");
    check_packed_weights_leave_memory("smollm3.Q4_K_M.gguf");
    check_packed_weights_leave_memory("gemma2.Q4_K_M.gguf");
}
