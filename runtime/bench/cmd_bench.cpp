// `tachyon bench decode`: prompt processing and generation speed of the
// inference core, measured like llama-bench's pp/tg tests (mean ± stddev over
// repetitions after a warm-up), plus aggregate speed of B concurrent streams.
// `tachyon bench synth-model`: a random-weight model of a given shape to
// measure with.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <random>
#include <sstream>

#include "inference/engine/engine.h"
#include "inference/kernels/kernels.h"
#include "inference/kernels/memory_bandwidth.h"
#include "inference/gguf/model_writer.h"
#include "runtime/cli/cli.h"

namespace tachyon {
namespace {

struct series {
    std::string name;
    std::vector<double> samples;  // tokens per second
    double mean() const {
        double s = 0;
        for (double v : samples) s += v;
        return samples.empty() ? 0 : s / static_cast<double>(samples.size());
    }
    double stddev() const {
        if (samples.size() < 2) return 0;
        double m = mean(), s = 0;
        for (double v : samples) s += (v - m) * (v - m);
        return std::sqrt(s / static_cast<double>(samples.size() - 1));
    }
};

std::vector<int32_t> random_tokens(int n, int n_vocab, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> out(static_cast<size_t>(n));
    for (auto& t : out) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(n_vocab));
    return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `depth` tokens of context into session s first, not timed (the same
// ones every time: after the first, the prefix cache holds them).
void fill_context(engine& e, session_id s, int depth) {
    if (depth <= 0) return;
    request r;
    r.session = s;
    r.append = random_tokens(depth, e.get_model().hparams().n_vocab, 99);
    e.run(std::move(r));
}

// Prefill of n_prompt tokens into a fresh session after `depth` tokens of
// context; tokens/s.
double run_pp(engine& e, int n_prompt, int depth, uint64_t seed) {
    session_id s = e.create_session();
    fill_context(e, s, depth);
    request r;
    r.session = s;
    r.append = random_tokens(n_prompt, e.get_model().hparams().n_vocab, seed);
    auto t0 = std::chrono::steady_clock::now();
    e.run(std::move(r));
    double secs = seconds_since(t0);
    e.close_session(s);
    return n_prompt / secs;
}

// n_gen tokens decoded one by one after `depth` tokens of context (and one
// more), in `n_streams` sessions at once; aggregate tokens/s.
double run_tg(engine& e, int n_gen, int depth, int n_streams, uint64_t seed) {
    std::vector<session_id> sessions;
    std::vector<std::future<request_stats>> done;
    for (int i = 0; i < n_streams; ++i) {
        sessions.push_back(e.create_session());
        fill_context(e, sessions.back(), depth);
    }
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n_streams; ++i) {
        auto p = std::make_shared<std::promise<request_stats>>();
        done.push_back(p->get_future());
        request r;
        r.session = sessions[static_cast<size_t>(i)];
        r.append = random_tokens(1, e.get_model().hparams().n_vocab, seed + static_cast<uint64_t>(i));
        r.max_tokens = n_gen;
        r.on_done = [p](const request_stats& st) { p->set_value(st); };
        e.submit(std::move(r));
    }
    int total = 0;
    for (auto& f : done) total += f.get().n_generated;
    double secs = seconds_since(t0);
    for (session_id s : sessions) e.close_session(s);
    return total / secs;
}

// Bytes of weights one decoded token reads: every tensor of the file except
// the token embeddings, of which a token reads one row (unless the output
// projection is tied to them, when all of it is read).
uint64_t weight_bytes_per_token(const gguf_file& f) {
    const bool tied = f.find_tensor("output.weight") == nullptr;
    uint64_t total = 0;
    for (const gguf_tensor_info& t : f.tensors()) {
        const auto tr = traits_of(t.type);
        const uint64_t bytes = static_cast<uint64_t>(t.n_elements()) / tr.block_size * tr.type_size;
        if (t.name == "token_embd.weight" && !tied) {
            total += t.shape.empty() ? 0 : bytes / static_cast<uint64_t>(std::max<int64_t>(1, t.shape.back()));
            continue;
        }
        total += bytes;
    }
    return total;
}

int bench_decode(const cli::parsed_args& args) {
    auto fail = [](const error& e) {
        std::cerr << "tachyon bench decode: " << e.message << "\n";
        return 1;
    };
    auto n_prompt = args.get_int("n-prompt");
    auto n_gen = args.get_int("n-gen");
    auto threads = args.get_int("threads");
    auto reps = args.get_int("repetitions");
    auto batch = args.get_int("batch");
    auto depth = args.get_int("depth");
    for (auto* r : {&n_prompt, &n_gen, &threads, &reps, &batch, &depth})
        if (!*r) return fail(r->err());
    if (*threads < 0 || *reps < 1 || *batch < 1 || *n_prompt < 0 || *n_gen < 0 || *depth < 0 || *depth > (1 << 20))
        return fail(make_error(errc::invalid_argument, "repetitions and batch must be >= 1; -t (0: automatic), -p, -n and -d >= 0"));
    const int d = static_cast<int>(*depth);
    const std::string at_depth = d > 0 ? " @ d" + std::to_string(d) : "";
    const std::string path = *args.get("model");

    engine_options o;
    o.n_threads = static_cast<int>(*threads);
    o.max_batch_tokens = std::max<int>(512, static_cast<int>(*n_prompt));
    o.n_ctx = static_cast<int>(std::max<int64_t>(d + *n_prompt + 16, (d + *n_gen + 16) * *batch)) + 64;
    o.kv_f16 = !args.flag("kv-f32");
    auto opened = engine::open(path, o);
    if (!opened) return fail(opened.err());
    engine& e = **opened;
    const long long n_threads = e.n_threads();  // what -t 0 chose
    const model_hparams& hp = e.get_model().hparams();

    // The read bandwidth from the weights' own pages where the model names
    // them (a fresh buffer of the same size can lie in memory that reads at
    // another rate: a VM's, half of it on two threads, and decode then read
    // "121 %" of it), before the tests and after: this machine's memory
    // speed drifts by the minute, and the faster of the two counts.
    const bool measure_bw = *n_gen > 0 && !args.flag("no-bandwidth");
    // Generation reads every weight once per step.
    const uint64_t bytes_per_token = weight_bytes_per_token(e.get_model().file());
    const auto reads = e.get_model().decode_reads();
    kernel_context bw_ctx(static_cast<int>(n_threads));
    const auto read_bandwidth = [&] {
        return (reads.empty() ? measure_read_bandwidth(bw_ctx, bytes_per_token, 0.5) : measure_read_bandwidth(bw_ctx, reads, 0.5)).gb_per_s;
    };
    const double bw_before = measure_bw ? read_bandwidth() : 0.0;

    std::vector<series> results;
    if (*n_prompt > 0) {
        series s{"pp" + std::to_string(*n_prompt) + at_depth, {}};
        run_pp(e, static_cast<int>(*n_prompt), d, 1);  // warm-up: page in the weights
        for (int64_t i = 0; i < *reps; ++i) s.samples.push_back(run_pp(e, static_cast<int>(*n_prompt), d, 100 + static_cast<uint64_t>(i)));
        results.push_back(s);
    }
    if (*n_gen > 0) {
        const std::string suffix = *batch > 1 ? " x" + std::to_string(*batch) : "";
        series s{"tg" + std::to_string(*n_gen) + suffix + at_depth, {}};
        run_tg(e, std::min<int>(16, static_cast<int>(*n_gen)), d, static_cast<int>(*batch), 7);  // warm-up
        for (int64_t i = 0; i < *reps; ++i)
            s.samples.push_back(run_tg(e, static_cast<int>(*n_gen), d, static_cast<int>(*batch), 200 + static_cast<uint64_t>(i)));
        results.push_back(s);
    }

    // Each stream's token reads its K and V so far (fp16), over the test's mean context.
    const bool kv_f16 = e.options().kv_f16;
    const double kv_elem = kv_f16 ? 2.0 : 4.0;
    const double mean_ctx = static_cast<double>(d) + static_cast<double>(*n_gen + 1) / 2.0;
    const auto kv_per_token = static_cast<uint64_t>(2.0 * kv_elem * hp.n_layer * static_cast<double>(hp.n_embd_kv()) * mean_ctx);
    double tg_gb_s = 0, bw_gb_s = 0;
    const bool bw_own_pages = !reads.empty();
    const series* tg = nullptr;
    for (const auto& r : results)
        if (r.name.rfind("tg", 0) == 0) tg = &r;
    if (tg != nullptr && measure_bw) {
        // Batched streams share each step's weight reads, not their K/V.
        tg_gb_s = (tg->mean() / static_cast<double>(*batch) * static_cast<double>(bytes_per_token) +
                   tg->mean() * static_cast<double>(kv_per_token)) / 1e9;
        bw_gb_s = std::max(bw_before, read_bandwidth());
    }

    std::string name = hp.name.empty() ? path : hp.name;
    if (args.flag("json")) {
        std::ostringstream os;
        os << "{\"model\": \"" << path << "\", \"n_params_layers\": " << hp.n_layer << ", \"n_embd\": " << hp.n_embd
           << ", \"threads\": " << n_threads << ", \"batch\": " << *batch << ", \"kernels\": \"" << to_string(default_isa())
           << "\", \"weight_bytes_per_token\": " << bytes_per_token << ", \"kv_bytes_per_token\": " << kv_per_token;
        if (bw_gb_s > 0)
            os << ", \"tg_weight_gb_per_s\": " << tg_gb_s << ", \"read_bandwidth_gb_per_s\": " << bw_gb_s
               << ", \"read_bandwidth_of\": \"" << (bw_own_pages ? "weights" : "buffer") << "\"";
        os << ", \"tests\": [";
        for (size_t i = 0; i < results.size(); ++i) {
            os << (i ? ", " : "") << "{\"test\": \"" << results[i].name << "\", \"tokens_per_s\": " << results[i].mean()
               << ", \"stddev\": " << results[i].stddev() << ", \"samples\": [";
            for (size_t j = 0; j < results[i].samples.size(); ++j) os << (j ? ", " : "") << results[i].samples[j];
            os << "]}";
        }
        os << "]}\n";
        std::cout << os.str();
        return 0;
    }
    std::printf("| %-28s | %7s | %-10s | %18s |\n", "model", "threads", "test", "t/s");
    std::printf("| %-28s | %7s | %-10s | %18s |\n", "----------------------------", "-------", "----------", "------------------");
    for (const auto& r : results) {
        char tps[64];
        std::snprintf(tps, sizeof tps, "%.2f ± %.2f", r.mean(), r.stddev());
        std::printf("| %-28.28s | %7lld | %-10s | %18s |\n", name.c_str(), n_threads, r.name.c_str(), tps);
    }
    std::printf("kernels: %s (TACHYON_KERNELS caps the level)\n", std::string(to_string(default_isa())).c_str());
    std::printf("weights read per token: %.1f MiB", static_cast<double>(bytes_per_token) / (1 << 20));
    if (*n_gen > 0)
        std::printf(", K/V %.1f MiB a stream (%s, %.0f positions on average)", static_cast<double>(kv_per_token) / (1 << 20),
                    kv_f16 ? "fp16" : "f32", mean_ctx);
    if (bw_gb_s > 0) {
        std::printf("; %s reads them at %.1f GB/s = %.0f %% of this machine's read bandwidth %s (%.1f GB/s, %lld threads)",
                    tg->name.c_str(), tg_gb_s, 100 * tg_gb_s / bw_gb_s, bw_own_pages ? "from the weights' own pages" : "at the weights' size",
                    bw_gb_s, n_threads);
    }
    std::printf("\n");
    return 0;
}

std::optional<tensor_type> parse_type(const std::string& name) {
    for (tensor_type t : {tensor_type::f32, tensor_type::f16, tensor_type::bf16, tensor_type::q8_0, tensor_type::q4_0})
        if (to_string(t) == name) return t;
    return std::nullopt;
}

int synth_model(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon bench synth-model: " << m << "\n";
        return 1;
    };
    auto type = parse_type(*args.get("type"));
    if (!type) return fail("--type must be one of f32, f16, bf16, q8_0, q4_0; got '" + *args.get("type") + "'");
    synthetic_llama_shape s;
    struct field {
        const char* option;
        int* target;
    } fields[] = {{"vocab", &s.n_vocab}, {"dim", &s.n_embd}, {"layers", &s.n_layer}, {"heads", &s.n_head},
                  {"kv-heads", &s.n_head_kv}, {"ffn", &s.n_ff}};
    for (auto& f : fields) {
        auto v = args.get_int(f.option);
        if (!v) return fail(v.err().message);
        if (*v < 1 || *v > (1 << 20)) return fail(std::string("--") + f.option + " must be in [1, 1048576]");
        *f.target = static_cast<int>(*v);
    }
    auto seed = args.get_int("seed");
    if (!seed) return fail(seed.err().message);
    s.vocab_from = args.get("vocab-from").value_or("");
    s.arch = args.get("arch").value_or("llama");
    if (auto path = args.get("chat-template"); path && !path->empty()) {
        std::ifstream in(*path, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        if (!in || text.str().empty()) return fail("--chat-template " + *path + ": expected a readable, non-empty template file");
        s.chat_template = text.str();
    }
    auto st = write_synthetic_llama(*args.positional(0), s, *type, static_cast<uint64_t>(*seed));
    if (!st) return fail(st.err().message);
    std::cout << "wrote " << *args.positional(0) << "\n";
    return 0;
}

int quantize(const cli::parsed_args& args) {
    auto type = parse_type(*args.get("type"));
    if (!type) {
        std::cerr << "tachyon quantize: --type must be one of f32, f16, bf16, q8_0, q4_0; got '" << *args.get("type") << "'\n";
        return 1;
    }
    auto st = requantize_model(*args.positional(0), *args.positional(1), *type);
    if (!st) {
        std::cerr << "tachyon quantize: " << st.err().message << "\n";
        return 1;
    }
    std::cout << "wrote " << *args.positional(1) << "\n";
    return 0;
}

}  // namespace

cli::command_spec make_bench_decode_command() {
    cli::command_spec c;
    c.name = "bench decode";
    c.summary = "prompt-processing and generation tokens/s of a GGUF model (like llama-bench pp/tg)";
    c.options = {
        {"model", 'm', cli::option_kind::value, "PATH", "", "GGUF model file", true},
        {"n-prompt", 'p', cli::option_kind::value, "N", "512", "prompt tokens for the pp test (0: skip)"},
        {"depth", 'd', cli::option_kind::value, "N", "0", "tokens of context before each test, not timed (llama-bench -d)"},
        {"n-gen", 'n', cli::option_kind::value, "N", "128", "generated tokens for the tg test (0: skip)"},
        {"threads", 't', cli::option_kind::value, "N", "0", "kernel threads (0: one per hardware thread; a call too small to pay for the fan-out runs on one)"},
        {"repetitions", 'r', cli::option_kind::value, "N", "5", "measured repetitions per test"},
        {"batch", 'b', cli::option_kind::value, "B", "1", "concurrent generation streams (aggregate tokens/s)"},
        {"json", 0, cli::option_kind::flag, "", "", "print one JSON object"},
        {"no-bandwidth", 0, cli::option_kind::flag, "", "", "skip measuring the read bandwidth the tg rate is compared with"},
        {"kv-f32", 0, cli::option_kind::flag, "", "", "hold the KV cache in f32 (default fp16: half the memory and the bytes attention reads)"},
    };
    c.run = bench_decode;
    return c;
}

cli::command_spec make_bench_synth_model_command() {
    cli::command_spec c;
    c.name = "bench synth-model";
    c.summary = "write a GGUF (llama, qwen2 or qwen3) with random weights of a given shape, for benchmarks";
    c.positionals = {{"OUT.gguf", "file to write"}};
    c.options = {
        {"type", 0, cli::option_kind::value, "TYPE", "f32", "weight type: f32, f16, bf16, q8_0, q4_0"},
        {"arch", 0, cli::option_kind::value, "ARCH", "llama", "architecture: llama, qwen2 (Q/K/V biases) or qwen3 (per-head Q/K norms)"},
        {"vocab", 0, cli::option_kind::value, "N", "32000", "vocabulary size"},
        {"dim", 0, cli::option_kind::value, "N", "512", "embedding length"},
        {"layers", 0, cli::option_kind::value, "N", "8", "blocks"},
        {"heads", 0, cli::option_kind::value, "N", "8", "attention heads"},
        {"kv-heads", 0, cli::option_kind::value, "N", "4", "key/value heads"},
        {"ffn", 0, cli::option_kind::value, "N", "1408", "feed-forward length"},
        {"seed", 0, cli::option_kind::value, "S", "1", "random seed"},
        {"vocab-from", 0, cli::option_kind::value, "GGUF", "", "copy the tokenizer of this GGUF (its size replaces --vocab)"},
        {"chat-template", 0, cli::option_kind::value, "FILE", "", "write this Jinja file as tokenizer.chat_template"},
    };
    c.run = synth_model;
    return c;
}

cli::command_spec make_quantize_command() {
    cli::command_spec c;
    c.name = "quantize";
    c.summary = "convert a GGUF model's weight matrices to another type (f32, f16, bf16, q8_0, q4_0)";
    c.positionals = {{"IN.gguf", "model to read"}, {"OUT.gguf", "file to write"}};
    c.options = {{"type", 0, cli::option_kind::value, "TYPE", "q8_0", "target type"}};
    c.run = quantize;
    return c;
}

}  // namespace tachyon
