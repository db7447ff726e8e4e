#include "inference/kernels/memory_bandwidth.h"

#include <doctest/doctest.h>

using namespace tachyon;

TEST_CASE("bandwidth sizes run from the L2 to 4x the L3, doubling, with the cache sizes themselves") {
    cache_sizes c;
    c.l2 = size_t{2} << 20;
    c.l3 = size_t{48} << 20;
    const auto s = bandwidth_sizes(c, size_t{1} << 40);
    const std::vector<size_t> mib = {2, 4, 8, 16, 32, 48, 64, 128, 192};
    REQUIRE(s.size() == mib.size());
    for (size_t i = 0; i < mib.size(); ++i) CHECK(s[i] == mib[i] << 20);
    // capped
    const auto capped = bandwidth_sizes(c, size_t{20} << 20);
    CHECK(capped.back() == size_t{16} << 20);
    // an OS that names no caches still gets a range up to 1 GiB
    const auto none = bandwidth_sizes(cache_sizes{}, size_t{1} << 40);
    CHECK(none.front() == size_t{1} << 20);
    CHECK(none.back() == size_t{1} << 30);
}

TEST_CASE("a read-bandwidth sample covers the whole buffer on every kernel level and thread count") {
    for (kernel_isa isa : {kernel_isa::scalar, kernel_isa::avx2, kernel_isa::avx512}) {
        if (isa == kernel_isa::avx2 && !cpu_has_avx2()) continue;
        if (isa == kernel_isa::avx512 && !cpu_has_avx512()) continue;
        for (int t : {1, 2}) {
            kernel_context ctx(t, isa);
            const bandwidth_sample r = measure_read_bandwidth(ctx, 100000, 0.001);
            CHECK(r.bytes == 102400);  // whole pages
            CHECK(r.n_threads == t);
            CHECK(r.gb_per_s > 0);
            CHECK((r.streams == 1 || r.streams == read_streams));
        }
    }
}
