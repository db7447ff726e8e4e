// `tachyon bench attention`: how fast this machine's attention kernels run
// the query rows of one KV head (the heads of a GQA group, or a prompt's
// tokens) over a cached context, without a model file: paged K and V of
// random values in the cache's layout (blocks of 16 positions, K transposed,
// fp16 or f32), in microseconds per call and multiply-adds per second.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <vector>

#include "inference/gguf/fp16.h"
#include "inference/kernels/attention.h"
#include "inference/kernels/kernels.h"
#include "runtime/cli/cli.h"

namespace tachyon {
namespace {

struct attention_sample {
    int n_rows = 0;
    double us_per_call = 0;  // best pass
    double gfma_per_s = 0;   // multiply-adds of q·k and p·v, best pass
};

int bench_attention(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon bench attention: " << m << "\n";
        return 1;
    };
    auto head_dim = args.get_int("head-dim");
    if (!head_dim) return fail(head_dim.err().message);
    if (*head_dim < 8 || *head_dim > 256 || *head_dim % 8 != 0) return fail("--head-dim must be a multiple of 8 in 8..256");
    auto positions = args.get_int("positions");
    if (!positions) return fail(positions.err().message);
    if (*positions < 1 || *positions > (1 << 20)) return fail("--positions must be in 1..1048576");
    auto counts = cli::int_list(*args.get("rows"), "--rows", max_attention_rows, "1,4,8");
    if (!counts) return fail(counts.err().message);
    const std::string kv = *args.get("kv");
    if (kv != "f16" && kv != "f32") return fail("--kv must be f16 or f32; got '" + kv + "'");
    auto seconds = args.get_double("seconds");
    if (!seconds) return fail(seconds.err().message);
    if (!(*seconds > 0 && *seconds <= 60)) return fail("--seconds must be in (0, 60]");

    // One KV head's cache: blocks of 16 positions, K transposed ([head_dim][16]), V rows of head_dim.
    constexpr int bs = 16;
    const int hd = static_cast<int>(*head_dim), n_pos = static_cast<int>(*positions);
    const int n_blocks = (n_pos + bs - 1) / bs;
    const size_t block_values = static_cast<size_t>(hd) * bs;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> k32(block_values * n_blocks), v32(block_values * n_blocks);
    for (auto& x : k32) x = normal(rng);
    for (auto& x : v32) x = normal(rng);
    std::vector<uint16_t> k16(k32.size()), v16(v32.size());
    for (size_t i = 0; i < k32.size(); ++i) k16[i] = fp32_to_fp16(k32[i]), v16[i] = fp32_to_fp16(v32[i]);
    std::vector<const float*> kb(n_blocks), vb(n_blocks);
    std::vector<const uint16_t*> kb16(n_blocks), vb16(n_blocks);
    for (int b = 0; b < n_blocks; ++b) {
        const size_t at = block_values * static_cast<size_t>(b);
        kb[b] = k32.data() + at, vb[b] = v32.data() + at, kb16[b] = k16.data() + at, vb16[b] = v16.data() + at;
    }
    attention_args shared{nullptr, kb.data(), vb.data(), bs, hd, n_pos, 1.0f / std::sqrt(static_cast<float>(hd)), nullptr, nullptr};
    if (kv == "f16") {
        shared.k = shared.v = nullptr;
        shared.k16 = kb16.data();
        shared.v16 = vb16.data();
    }
    std::vector<float> q(static_cast<size_t>(max_attention_rows) * hd), out(q.size());
    for (auto& x : q) x = normal(rng);
    std::vector<float> scores(static_cast<size_t>(max_attention_rows) * (n_pos + bs));
    const kernel_isa isa = default_isa();

    std::vector<attention_sample> samples;
    for (int n_rows : *counts) {
        std::vector<attention_row> rows;
        for (int r = 0; r < n_rows; ++r)
            rows.push_back({q.data() + static_cast<size_t>(r) * hd, n_pos, scores.data() + static_cast<size_t>(r) * (n_pos + bs),
                            out.data() + static_cast<size_t>(r) * hd});
        using clock = std::chrono::steady_clock;
        // calls per pass: about a millisecond of work at 50 thousand million multiply-adds a second
        const double fma_per_call = 2.0 * n_rows * n_pos * hd;
        const int calls = static_cast<int>(std::clamp(5e7 / fma_per_call, 1.0, 1e6));
        const auto pass = [&] {
            for (int i = 0; i < calls; ++i) attend_rows(shared, rows.data(), n_rows, hd, isa);
        };
        pass();  // warm-up: the cache's blocks in L2 where they fit
        double best = 1e30;
        int n_passes = 0;
        const auto start = clock::now();
        while (n_passes < 3 || std::chrono::duration<double>(clock::now() - start).count() < *seconds) {
            const auto t0 = clock::now();
            pass();
            best = std::min(best, std::chrono::duration<double>(clock::now() - t0).count() / calls);
            ++n_passes;
        }
        samples.push_back({n_rows, best * 1e6, fma_per_call / best / 1e9});
    }

    const std::string isa_name(to_string(isa));
    if (args.flag("json")) {
        std::ostringstream os;
        os << "{\"head_dim\": " << hd << ", \"positions\": " << n_pos << ", \"kv\": \"" << kv << "\", \"kernels\": \"" << isa_name
           << "\", \"samples\": [";
        for (size_t i = 0; i < samples.size(); ++i) {
            const auto& s = samples[i];
            os << (i ? ", " : "") << "{\"rows\": " << s.n_rows << ", \"us_per_call\": " << s.us_per_call << ", \"gfma_per_s\": " << s.gfma_per_s
               << "}";
        }
        os << "]}\n";
        std::cout << os.str();
        return 0;
    }
    std::printf("attention, head size %d, %d positions, %s K/V, one thread; kernels %s (TACHYON_KERNELS caps the level)\n", hd, n_pos,
                kv.c_str(), isa_name.c_str());
    std::printf("| %4s | %10s | %8s |\n", "rows", "us/call", "GFMA/s");
    std::printf("| %4s | %10s | %8s |\n", "----", "----------", "--------");
    for (const auto& s : samples) std::printf("| %4d | %10.2f | %8.1f |\n", s.n_rows, s.us_per_call, s.gfma_per_s);
    return 0;
}

}  // namespace

cli::command_spec make_bench_attention_command() {
    cli::command_spec c;
    c.name = "bench attention";
    c.summary = "speed of the attention kernels for the query rows of one KV head over a cached context (no model file needed)";
    c.description = "Runs the attention of --rows query rows (the heads of a GQA group, or a prompt's tokens) over\n"
                    "--positions cached positions of one KV head, random K and V in the cache's layout (blocks of 16\n"
                    "positions, fp16 by default), on one thread. Prints the time per call (best pass) and the\n"
                    "multiply-adds of q.k and p.v per second.";
    c.options = {
        {"head-dim", 0, cli::option_kind::value, "N", "128", "head size (a multiple of 8, at most 256)"},
        {"positions", 0, cli::option_kind::value, "N", "2048", "cached positions every row attends to"},
        {"rows", 0, cli::option_kind::value, "LIST", "1,4,8", "query rows per call, e.g. 1,7 (at most 8)"},
        {"kv", 0, cli::option_kind::value, "TYPE", "f16", "the cache's type: f16 or f32"},
        {"seconds", 0, cli::option_kind::value, "S", "0.5", "time per measurement (at least 3 passes)"},
        {"json", 0, cli::option_kind::flag, "", "", "print one JSON object"},
    };
    c.run = bench_attention;
    return c;
}

}  // namespace tachyon
