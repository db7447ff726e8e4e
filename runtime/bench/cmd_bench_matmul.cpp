// `tachyon bench matmul`: how fast this machine's kernels stream one weight
// type, without a model file: random weights of any type with kernels (valid
// block scales), multiplied by 1..8 tokens on 1..N threads, in GB/s of
// weights read, set against the machine's read bandwidth at the same size.
// Decode of a model larger than the caches runs at about that rate.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "inference/gguf/fp16.h"
#include "inference/gguf/quant.h"
#include "inference/kernels/kernels.h"
#include "inference/kernels/memory_bandwidth.h"
#include "runtime/cli/cli.h"

namespace tachyon {
namespace {

constexpr tensor_type kernel_types[] = {tensor_type::f32,  tensor_type::f16,  tensor_type::bf16,   tensor_type::q8_0,
                                        tensor_type::q4_0, tensor_type::q4_1, tensor_type::q5_0,   tensor_type::q5_1,
                                        tensor_type::iq4_nl, tensor_type::q2_k, tensor_type::q3_k, tensor_type::q4_k,
                                        tensor_type::q5_k, tensor_type::q6_k, tensor_type::iq4_xs};

std::string type_names() {
    std::string s;
    for (tensor_type t : kernel_types) s += (s.empty() ? "" : ", ") + std::string(to_string(t));
    return s;
}

void put_half(std::byte* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

// n_rows rows of `type`: random quant bits with fp16 block scales (and mins)
// of a sensible size, or random normal values for the float types, so that
// no kernel meets infinities or NaNs.
std::vector<std::byte> random_weights(tensor_type type, int64_t n_rows, int64_t n_cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const size_t bytes = row_size(type, n_cols) * static_cast<size_t>(n_rows);
    std::vector<std::byte> w(bytes);
    const int64_t n = n_rows * n_cols;
    std::normal_distribution<float> normal(0.0f, 0.05f);
    if (type == tensor_type::f32 || type == tensor_type::f16 || type == tensor_type::bf16) {
        std::vector<float> v(static_cast<size_t>(n));
        for (auto& x : v) x = normal(rng);
        quantize_row(type, v.data(), w.data(), n);
        return w;
    }
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
        const uint32_t r = rng();
        std::memcpy(w.data() + i, &r, 4);
    }
    std::uniform_real_distribution<float> scale(0.001f, 0.05f);
    const auto traits = traits_of(type);
    const int64_t n_blocks = n / traits.block_size;
    for (int64_t i = 0; i < n_blocks; ++i) {
        std::byte* b = w.data() + i * traits.type_size;
        switch (type) {
            case tensor_type::q4_1:
            case tensor_type::q5_1:
            case tensor_type::q4_k:
            case tensor_type::q5_k:  // d, then the min (or dmin)
                put_half(b, scale(rng));
                put_half(b + 2, scale(rng));
                break;
            case tensor_type::q2_k:
                put_half(b + offsetof(block_q2_k, d), scale(rng));
                put_half(b + offsetof(block_q2_k, dmin), scale(rng));
                break;
            case tensor_type::q3_k: put_half(b + offsetof(block_q3_k, d), scale(rng)); break;
            case tensor_type::q6_k: put_half(b + offsetof(block_q6_k, d), scale(rng)); break;
            default: put_half(b, scale(rng)); break;  // d first: q8_0, q4_0, q5_0, iq4_nl, iq4_xs
        }
    }
    return w;
}

struct matmul_sample {
    int n_threads = 0;
    int n_tokens = 0;
    double us_per_matmul = 0;  // best pass
    double gb_per_s = 0;       // weights read per second, best pass
    double read_gb_per_s = 0;  // the machine's read bandwidth at the same size
};

int bench_matmul(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon bench matmul: " << m << "\n";
        return 1;
    };
    const std::string type_name = *args.get("type");
    std::optional<tensor_type> type;
    for (tensor_type t : kernel_types)
        if (to_string(t) == type_name) type = t;
    if (!type) return fail("--type must be one of " + type_names() + "; got '" + type_name + "'");
    auto rows = args.get_int("rows");
    if (!rows) return fail(rows.err().message);
    auto cols = args.get_int("cols");
    if (!cols) return fail(cols.err().message);
    const int64_t block = traits_of(*type).block_size;
    if (*rows < 1 || *rows > (int64_t{1} << 20)) return fail("--rows must be in 1..1048576");
    if (*cols < block || *cols % block != 0 || *cols > (int64_t{1} << 20))
        return fail("--cols must be a positive multiple of " + std::to_string(block) + " (the block size of " + type_name + "), at most 1048576");
    auto mib = args.get_int("mib");
    if (!mib) return fail(mib.err().message);
    if (*mib < 1 || *mib > 16384) return fail("--mib must be in 1..16384");
    auto seconds = args.get_double("seconds");
    if (!seconds) return fail(seconds.err().message);
    if (!(*seconds > 0 && *seconds <= 60)) return fail("--seconds must be in (0, 60]");
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    std::string t_text = args.get_or("threads", "");
    if (t_text.empty()) {
        for (unsigned t = 1; t <= hw; t *= 2) t_text += (t_text.empty() ? "" : ",") + std::to_string(t);
        if (hw & (hw - 1)) t_text += "," + std::to_string(hw);
    }
    auto threads = cli::int_list(t_text, "-t", 256, "1,2");
    if (!threads) return fail(threads.err().message);
    auto tokens = cli::int_list(*args.get("tokens"), "--tokens", 256, "1,2");
    if (!tokens) return fail(tokens.err().message);

    // Enough copies of the matrix to fill --mib, multiplied one after the
    // other as decode multiplies its layers: each pass reads them all once.
    const size_t matrix_bytes = row_size(*type, *cols) * static_cast<size_t>(*rows);
    const size_t n_matrices = std::max<size_t>(1, ((static_cast<size_t>(*mib) << 20) + matrix_bytes - 1) / matrix_bytes);
    std::vector<std::vector<std::byte>> w;
    for (size_t i = 0; i < n_matrices; ++i) w.push_back(random_weights(*type, *rows, *cols, static_cast<uint32_t>(i + 1)));
    const int max_tokens = *std::max_element(tokens->begin(), tokens->end());
    std::vector<float> x(static_cast<size_t>(*cols) * static_cast<size_t>(max_tokens));
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& v : x) v = normal(rng);
    std::vector<float> y(static_cast<size_t>(*rows) * static_cast<size_t>(max_tokens));
    // Packed as a model packs them (kernels.h: pack_panels_into; llama.cpp's
    // pack_weights: those panels_replace_weights names always, float weights
    // up to 16 MiB, all in one allocation of huge pages), unless --in-place.
    const bool in_place = args.flag("in-place");
    std::vector<const std::byte*> panels(n_matrices, nullptr);
    weight_panels arena;
    size_t total_bytes = matrix_bytes * n_matrices;
    const bool replaced = panels_replace_weights(*type, *rows, *cols);
    const bool model_packs = packs_quantized(*type) || replaced || total_bytes <= (size_t{16} << 20);
    if (!in_place && model_packs && panels_pay(*type, *rows, *cols)) {
        const size_t stride = (panels_bytes(*type, *rows, *cols) + 63) / 64 * 64;
        arena = allocate_weight_panels(stride * n_matrices);
        for (size_t i = 0; i < n_matrices; ++i) {
            std::byte* dst = arena.storage.get() + stride * i;
            pack_panels_into(*type, w[i].data(), *rows, *cols, dst);
            panels[i] = dst;
        }
        // what the kernels read: the panels alone where they replace the weights
        if (replaced) total_bytes = panels_bytes(*type, *rows, *cols) * n_matrices;
    }
    const bool packed = panels[0] != nullptr;

    std::vector<matmul_sample> samples;
    for (int nt : *threads) {
        kernel_context ctx(nt);
        const double read_gb_s = args.flag("no-bandwidth") ? 0.0 : measure_read_bandwidth(ctx, total_bytes, 0.3).gb_per_s;
        for (int n_tok : *tokens) {
            using clock = std::chrono::steady_clock;
            const auto pass = [&] {
                for (size_t i = 0; i < n_matrices; ++i) matmul(ctx, *type, w[i].data(), *rows, *cols, x.data(), n_tok, y.data(), panels[i]);
            };
            pass();  // warm-up: threads started, scratch grown
            double best = 1e30;
            const auto start = clock::now();
            int n_passes = 0;
            while (n_passes < 3 || std::chrono::duration<double>(clock::now() - start).count() < *seconds) {
                const auto t0 = clock::now();
                pass();
                best = std::min(best, std::chrono::duration<double>(clock::now() - t0).count());
                ++n_passes;
            }
            matmul_sample s;
            s.n_threads = nt;
            s.n_tokens = n_tok;
            s.us_per_matmul = best * 1e6 / static_cast<double>(n_matrices);
            s.gb_per_s = static_cast<double>(total_bytes) / best / 1e9;
            s.read_gb_per_s = read_gb_s;
            samples.push_back(s);
        }
    }

    const std::string isa(to_string(default_isa()));
    if (args.flag("json")) {
        std::ostringstream os;
        os << "{\"type\": \"" << type_name << "\", \"rows\": " << *rows << ", \"cols\": " << *cols << ", \"matrices\": " << n_matrices
           << ", \"weight_bytes\": " << total_bytes << ", \"packed\": " << (packed ? "true" : "false") << ", \"kernels\": \"" << isa
           << "\", \"samples\": [";
        for (size_t i = 0; i < samples.size(); ++i) {
            const auto& s = samples[i];
            os << (i ? ", " : "") << "{\"threads\": " << s.n_threads << ", \"tokens\": " << s.n_tokens << ", \"us_per_matmul\": " << s.us_per_matmul
               << ", \"gb_per_s\": " << s.gb_per_s << ", \"read_gb_per_s\": " << s.read_gb_per_s << "}";
        }
        os << "]}\n";
        std::cout << os.str();
        return 0;
    }
    std::printf("%s [%lld x %lld], %zu matrices, %.1f MiB of weights per pass%s; kernels %s (TACHYON_KERNELS caps the level)\n", type_name.c_str(),
                static_cast<long long>(*rows), static_cast<long long>(*cols), n_matrices, static_cast<double>(total_bytes) / (1 << 20),
                packed ? " (packed)" : "", isa.c_str());
    std::printf("| %7s | %6s | %12s | %10s | %12s |\n", "threads", "tokens", "us/matmul", "GB/s", "% of read bw");
    std::printf("| %7s | %6s | %12s | %10s | %12s |\n", "-------", "------", "------------", "----------", "------------");
    for (const auto& s : samples) {
        char share[32] = "-";
        if (s.read_gb_per_s > 0) std::snprintf(share, sizeof share, "%.0f %%", 100 * s.gb_per_s / s.read_gb_per_s);
        std::printf("| %7d | %6d | %12.2f | %10.1f | %12s |\n", s.n_threads, s.n_tokens, s.us_per_matmul, s.gb_per_s, share);
    }
    return 0;
}

}  // namespace

cli::command_spec make_bench_matmul_command() {
    cli::command_spec c;
    c.name = "bench matmul";
    c.summary = "weight streaming speed of the matmul kernels for one weight type, GB/s (no model file needed)";
    c.description = "Multiplies random weights of --type (valid block scales) by 1..N tokens, cycling through enough\n"
                    "[rows x cols] matrices to fill --mib, as decode cycles through its layers. Prints the time per\n"
                    "matmul, the weights read per second (best pass) and their share of this machine's read\n"
                    "bandwidth at the same size on as many threads (`bench memory`).";
    c.options = {
        {"type", 0, cli::option_kind::value, "TYPE", "q8_0", "weight type: " + type_names()},
        {"rows", 0, cli::option_kind::value, "N", "2816", "rows of each matrix (outputs)"},
        {"cols", 0, cli::option_kind::value, "N", "1024", "columns of each matrix (inputs; a multiple of the block size)"},
        {"mib", 0, cli::option_kind::value, "N", "256", "weights per pass, MiB (more than the caches to measure memory)"},
        {"threads", 't', cli::option_kind::value, "LIST", "", "thread counts, e.g. 1,2 (default: 1, 2, 4, ... up to the cores)"},
        {"tokens", 0, cli::option_kind::value, "LIST", "1,2,4,8", "tokens per matmul, e.g. 1,8"},
        {"seconds", 0, cli::option_kind::value, "S", "0.5", "time per measurement (at least 3 passes)"},
        {"no-bandwidth", 0, cli::option_kind::flag, "", "", "skip measuring the read bandwidth"},
        {"in-place", 0, cli::option_kind::flag, "", "", "multiply the weights as stored, not packed as a model packs them (q2_K to q6_K, iq4_xs, q4_0, iq4_nl, q5_0, q8_0 where packed; small float models)"},
        {"json", 0, cli::option_kind::flag, "", "", "print one JSON object"},
    };
    c.run = bench_matmul;
    return c;
}

}  // namespace tachyon
