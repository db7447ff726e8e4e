#include "inference/kernels/memory_bandwidth.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "base/assert.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tachyon {
namespace {

// "48K", "2048K", "32M" as /sys writes cache sizes.
size_t parse_size(const std::string& s) {
    if (s.empty()) return 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    size_t mult = 1;
    if (end && (*end == 'K' || *end == 'k')) mult = 1024;
    if (end && (*end == 'M' || *end == 'm')) mult = size_t{1} << 20;
    if (end && (*end == 'G' || *end == 'g')) mult = size_t{1} << 30;
    return static_cast<size_t>(v) * mult;
}

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
}

// Sum of the buffer's 64-bit words, so the loads cannot be optimised away.
// Reads [p, p + n) as `streams` stretches at once: the bytes split into
// that many parts (whole 256-byte steps), each step taking the next bytes of
// every part; what the parts leave over at the end is read alone. One
// stretch at a time leaves a core's requests to one hardware stream, which
// on some cores reads a quarter slower than four (Zen 5, one thread, 512
// MiB: 25-29 against 33-37 GB/s).
uint64_t read_scalar(const std::byte* p, size_t n, int streams) {
    const size_t part = n / static_cast<size_t>(streams) / 256 * 256;
    uint64_t acc[4] = {};
    for (size_t i = 0; i < part; i += 256)
        for (int s = 0; s < streams; ++s) {
            const auto* w = reinterpret_cast<const uint64_t*>(p + static_cast<size_t>(s) * part + i);
            for (int k = 0; k < 32; k += 4) {
                acc[0] ^= w[k];
                acc[1] ^= w[k + 1];
                acc[2] ^= w[k + 2];
                acc[3] ^= w[k + 3];
            }
        }
    for (size_t i = part * static_cast<size_t>(streams); i + 8 <= n; i += 8) acc[0] ^= *reinterpret_cast<const uint64_t*>(p + i);
    return acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) inline __m256i at(const std::byte* q) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(q)); }

__attribute__((target("avx2"))) uint64_t read_avx2(const std::byte* p, size_t n, int streams) {
    const size_t part = n / static_cast<size_t>(streams) / 256 * 256;
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i < part; i += 256)
        for (int s = 0; s < streams; ++s) {
            const std::byte* q = p + static_cast<size_t>(s) * part + i;
            a = _mm256_xor_si256(a, _mm256_xor_si256(at(q), at(q + 128)));
            b = _mm256_xor_si256(b, _mm256_xor_si256(at(q + 32), at(q + 160)));
            c = _mm256_xor_si256(c, _mm256_xor_si256(at(q + 64), at(q + 192)));
            d = _mm256_xor_si256(d, _mm256_xor_si256(at(q + 96), at(q + 224)));
        }
    for (size_t i = part * static_cast<size_t>(streams); i + 32 <= n; i += 32) a = _mm256_xor_si256(a, at(p + i));
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    return static_cast<uint64_t>(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 1) ^ _mm256_extract_epi64(x, 2) ^
                                 _mm256_extract_epi64(x, 3));
}

__attribute__((target("avx512f"))) uint64_t read_avx512(const std::byte* p, size_t n, int streams) {
    const size_t part = n / static_cast<size_t>(streams) / 256 * 256;
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (size_t i = 0; i < part; i += 256)
        for (int s = 0; s < streams; ++s) {
            const std::byte* q = p + static_cast<size_t>(s) * part + i;
            a = _mm512_xor_si512(a, _mm512_load_si512(q));
            b = _mm512_xor_si512(b, _mm512_load_si512(q + 64));
            c = _mm512_xor_si512(c, _mm512_load_si512(q + 128));
            d = _mm512_xor_si512(d, _mm512_load_si512(q + 192));
        }
    for (size_t i = part * static_cast<size_t>(streams); i + 64 <= n; i += 64) a = _mm512_xor_si512(a, _mm512_load_si512(p + i));
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d)));
    return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3] ^ lanes[4] ^ lanes[5] ^ lanes[6] ^ lanes[7];
}
#endif

uint64_t read_part(kernel_isa isa, const std::byte* p, size_t n, int streams) {
#if defined(__x86_64__)
    if (isa >= kernel_isa::avx512) return read_avx512(p, n, streams);
    if (isa >= kernel_isa::avx2) return read_avx2(p, n, streams);
#endif
    return read_scalar(p, n, streams);
}

}  // namespace

cache_sizes detect_cache_sizes() {
    cache_sizes c;
    for (int i = 0; i < 8; ++i) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        const std::string level = read_line(dir + "level");
        if (level.empty()) break;
        const std::string type = read_line(dir + "type");
        const size_t size = parse_size(read_line(dir + "size"));
        if (level == "1" && type == "Data") c.l1d = size;
        if (level == "2") c.l2 = size;
        if (level == "3") c.l3 = size;
    }
#if defined(_SC_LEVEL2_CACHE_SIZE)
    if (c.l2 == 0) c.l2 = static_cast<size_t>(std::max(0L, sysconf(_SC_LEVEL2_CACHE_SIZE)));
    if (c.l3 == 0) c.l3 = static_cast<size_t>(std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE)));
#endif
    return c;
}

std::vector<size_t> bandwidth_sizes(const cache_sizes& c, size_t max_bytes) {
    const size_t lo = c.l2 > 0 ? c.l2 : size_t{1} << 20;
    const size_t hi = c.l3 > 0 ? 4 * c.l3 : size_t{1} << 30;
    std::vector<size_t> out;
    for (size_t s = lo; s <= hi; s *= 2) out.push_back(s);
    for (size_t mark : {c.l2, c.l3, 4 * c.l3})
        if (mark > 0) out.push_back(mark);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    out.erase(std::remove_if(out.begin(), out.end(), [&](size_t s) { return s > max_bytes; }), out.end());
    return out;
}

bandwidth_sample measure_read_bandwidth(kernel_context& ctx, size_t bytes, double min_seconds) {
    constexpr size_t page = 4096;
    bytes = std::max<size_t>(page, (bytes + page - 1) / page * page);
    // Stored as a model's packed weights are (huge pages where the buffer
    // spans one), so that the kernels' share of it compares like with like.
    const weight_panels storage = allocate_weight_panels(bytes + 256);
    std::byte* const buf = storage.storage.get() + (256 - reinterpret_cast<uintptr_t>(storage.storage.get()) % 256) % 256;
    std::memset(buf, 1, bytes);
    const std::span<const std::byte> all(buf, bytes);
    return measure_read_bandwidth(ctx, std::span(&all, 1), min_seconds);
}

bandwidth_sample measure_read_bandwidth(kernel_context& ctx, std::span<const std::span<const std::byte>> regions, double min_seconds) {
    // Each region from its first whole 256 bytes to its last, so that the
    // loads stay aligned and the streams split evenly.
    std::vector<std::span<const std::byte>> parts;
    size_t total = 0;
    for (std::span<const std::byte> r : regions) {
        const auto begin = (reinterpret_cast<uintptr_t>(r.data()) + 255) / 256 * 256;
        const auto end = (reinterpret_cast<uintptr_t>(r.data()) + r.size()) / 256 * 256;
        if (end <= begin) continue;
        parts.emplace_back(reinterpret_cast<const std::byte*>(begin), end - begin);
        total += end - begin;
    }
    bandwidth_sample r;
    r.bytes = total;
    r.n_threads = ctx.n_threads();
    if (total == 0) return r;
    std::atomic<uint64_t> sink{0};
    const kernel_isa isa = ctx.isa();
    // Each thread reads a contiguous share of every region in turn (whole
    // 256-byte steps), as a matmul's row split does.
    auto pass = [&](int streams) {
        for (std::span<const std::byte> part : parts) {
            const auto n_steps = static_cast<int64_t>(part.size() / 256);
            const int64_t grain = std::max<int64_t>(1, n_steps / std::max(1, ctx.n_threads()));
            ctx.parallel_for(n_steps, grain, [&](int64_t b, int64_t e) {
                sink.fetch_xor(read_part(isa, part.data() + static_cast<size_t>(b) * 256, static_cast<size_t>(e - b) * 256, streams),
                               std::memory_order_relaxed);
            });
        }
    };
    // One stretch a thread and read_streams at once, each for half the time: the faster counts.
    for (int streams : {1, read_streams}) {
        pass(streams);  // warm: caches, TLB, the team's threads
        double best = 1e30, spent = 0;
        int passes = 0;
        while (passes < 3 || spent < min_seconds / 2) {
            const auto t0 = std::chrono::steady_clock::now();
            pass(streams);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            best = std::min(best, s);
            spent += s;
            ++passes;
            if (passes > 100000) break;
        }
        const double gb_per_s = static_cast<double>(total) / best / 1e9;
        if (gb_per_s > r.gb_per_s) {
            r.gb_per_s = gb_per_s;
            r.streams = streams;
        }
    }
    if (sink.load() == 0x5a5a5a5a5a5a5a5aULL) r.gb_per_s += 0;  // keeps the reads
    return r;
}

}  // namespace tachyon
