// `tachyon bench memory`: the machine's read bandwidth per buffer size and
// thread count, from the L2 size to several times the L3 — the ceiling that
// decode of a model larger than the caches runs into (every token reads
// every weight once).
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "inference/kernels/kernels.h"
#include "inference/kernels/memory_bandwidth.h"
#include "runtime/cli/cli.h"

namespace tachyon {
namespace {

std::string size_text(size_t b) {
    char buf[32];
    if (b >= (size_t{1} << 30) && b % (size_t{1} << 30) == 0) std::snprintf(buf, sizeof buf, "%zu GiB", b >> 30);
    else if (b >= (size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(b) / (1 << 20));
    else std::snprintf(buf, sizeof buf, "%zu KiB", b >> 10);
    return buf;
}

result<std::vector<int>> thread_counts(const std::string& text) {
    std::vector<int> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < 1 || v > 256)
            return make_error(errc::invalid_argument, "-t: '" + item + "' is not a thread count (expected e.g. 1,2)");
        out.push_back(static_cast<int>(v));
    }
    if (out.empty()) return make_error(errc::invalid_argument, "-t: no thread counts");
    return out;
}

int bench_memory(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon bench memory: " << m << "\n";
        return 1;
    };
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    std::string t_text = args.get_or("threads", "");
    if (t_text.empty()) {
        for (unsigned t = 1; t <= hw; t *= 2) t_text += (t_text.empty() ? "" : ",") + std::to_string(t);
        if (hw & (hw - 1)) t_text += "," + std::to_string(hw);
    }
    auto threads = thread_counts(t_text);
    if (!threads) return fail(threads.err().message);
    auto max_mib = args.get_int("max-mib");
    if (!max_mib) return fail(max_mib.err().message);
    if (*max_mib < 1) return fail("--max-mib must be >= 1");
    auto seconds = args.get_double("seconds");
    if (!seconds) return fail(seconds.err().message);
    if (!(*seconds > 0 && *seconds <= 60)) return fail("--seconds must be in (0, 60]");

    const cache_sizes c = detect_cache_sizes();
    std::vector<size_t> sizes = bandwidth_sizes(c, static_cast<size_t>(*max_mib) << 20);
    if (args.has("size-mib")) {
        auto s = args.get_int("size-mib");
        if (!s) return fail(s.err().message);
        if (*s < 1) return fail("--size-mib must be >= 1");
        sizes = {static_cast<size_t>(*s) << 20};
    }
    const bool json = args.flag("json");
    std::ostringstream js;
    if (json) {
        js << "{\"l2_bytes\": " << c.l2 << ", \"l3_bytes\": " << c.l3 << ", \"kernels\": \"" << to_string(default_isa()) << "\", \"samples\": [";
    } else {
        std::printf("caches: L1d %s, L2 %s, L3 %s; kernels %s\n", size_text(c.l1d).c_str(), size_text(c.l2).c_str(), size_text(c.l3).c_str(),
                    std::string(to_string(default_isa())).c_str());
        std::printf("| %10s | %7s | %10s | %7s |\n", "buffer", "threads", "GB/s", "streams");
        std::printf("| %10s | %7s | %10s | %7s |\n", "----------", "-------", "----------", "-------");
    }
    bool first = true;
    for (int t : *threads) {
        kernel_context ctx(t);
        for (size_t s : sizes) {
            const bandwidth_sample r = measure_read_bandwidth(ctx, s, *seconds);
            if (json) {
                js << (first ? "" : ", ") << "{\"bytes\": " << r.bytes << ", \"threads\": " << r.n_threads << ", \"gb_per_s\": " << r.gb_per_s << ", \"streams\": " << r.streams << "}";
            } else {
                std::printf("| %10s | %7d | %10.1f | %7d |\n", size_text(r.bytes).c_str(), r.n_threads, r.gb_per_s, r.streams);
                std::fflush(stdout);
            }
            first = false;
        }
    }
    if (json) {
        js << "]}\n";
        std::cout << js.str();
    }
    return 0;
}

}  // namespace

cli::command_spec make_bench_memory_command() {
    cli::command_spec c;
    c.name = "bench memory";
    c.summary = "read bandwidth of this machine per buffer size (L2 to 4x L3) and thread count, GB/s";
    c.description = "Each thread streams its own contiguous part of one buffer with the widest loads the kernels use;\n"
                    "the buffer is stored as packed weights are (huge pages where it spans one); the best pass of each\n"
                    "size counts. Decode of a model larger than the caches is bound by the\n"
                    "figure at the model's size (`bench decode` prints its share).";
    c.options = {
        {"threads", 't', cli::option_kind::value, "LIST", "", "thread counts, e.g. 1,2 (default: 1, 2, 4, ... up to the cores)"},
        {"max-mib", 0, cli::option_kind::value, "N", "4096", "largest buffer, MiB"},
        {"size-mib", 0, cli::option_kind::value, "N", "", "measure only this buffer size, MiB"},
        {"seconds", 0, cli::option_kind::value, "S", "0.3", "time per measurement (at least 3 passes)"},
        {"json", 0, cli::option_kind::flag, "", "", "print one JSON object"},
    };
    c.run = bench_memory;
    return c;
}

}  // namespace tachyon
