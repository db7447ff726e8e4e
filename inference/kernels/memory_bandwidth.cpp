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
uint64_t read_scalar(const std::byte* p, size_t n) {
    const auto* w = reinterpret_cast<const uint64_t*>(p);
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i + 4 <= n / 8; i += 4) {
        a ^= w[i];
        b ^= w[i + 1];
        c ^= w[i + 2];
        d ^= w[i + 3];
    }
    return a ^ b ^ c ^ d;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t read_avx2(const std::byte* p, size_t n) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i + 128 <= n; i += 128) {
        a = _mm256_xor_si256(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
        b = _mm256_xor_si256(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
        c = _mm256_xor_si256(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
        d = _mm256_xor_si256(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
    }
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    return static_cast<uint64_t>(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 1) ^ _mm256_extract_epi64(x, 2) ^
                                 _mm256_extract_epi64(x, 3));
}

__attribute__((target("avx512f"))) uint64_t read_avx512(const std::byte* p, size_t n) {
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (size_t i = 0; i + 256 <= n; i += 256) {
        a = _mm512_xor_si512(a, _mm512_load_si512(p + i));
        b = _mm512_xor_si512(b, _mm512_load_si512(p + i + 64));
        c = _mm512_xor_si512(c, _mm512_load_si512(p + i + 128));
        d = _mm512_xor_si512(d, _mm512_load_si512(p + i + 192));
    }
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d)));
    return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3] ^ lanes[4] ^ lanes[5] ^ lanes[6] ^ lanes[7];
}
#endif

uint64_t read_part(kernel_isa isa, const std::byte* p, size_t n) {
#if defined(__x86_64__)
    if (isa >= kernel_isa::avx512) return read_avx512(p, n);
    if (isa >= kernel_isa::avx2) return read_avx2(p, n);
#endif
    return read_scalar(p, n);
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
    const weight_panels storage = allocate_weight_panels(bytes);
    std::byte* const buf = storage.storage.get();
    std::memset(buf, 1, bytes);
    // Each thread reads whole pages of its own part, as the matmul row split does.
    const int64_t n_pages = static_cast<int64_t>(bytes / page);
    const int64_t grain = std::max<int64_t>(1, n_pages / std::max(1, ctx.n_threads()));
    std::atomic<uint64_t> sink{0};
    const kernel_isa isa = ctx.isa();
    auto pass = [&] {
        ctx.parallel_for(n_pages, grain, [&](int64_t b, int64_t e) {
            sink.fetch_xor(read_part(isa, buf + static_cast<size_t>(b) * page, static_cast<size_t>(e - b) * page),
                           std::memory_order_relaxed);
        });
    };
    pass();  // warm: caches, TLB, the team's threads
    double best = 1e30, total = 0;
    int passes = 0;
    while (passes < 3 || total < min_seconds) {
        const auto t0 = std::chrono::steady_clock::now();
        pass();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, s);
        total += s;
        ++passes;
        if (passes > 100000) break;
    }
    bandwidth_sample r;
    r.bytes = bytes;
    r.n_threads = ctx.n_threads();
    r.gb_per_s = static_cast<double>(bytes) / best / 1e9;
    if (sink.load() == 0x5a5a5a5a5a5a5a5aULL) r.gb_per_s += 0;  // keeps the reads
    return r;
}

}  // namespace tachyon
