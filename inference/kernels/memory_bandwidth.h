// The machine's memory read bandwidth, measured the way decode reads
// weights: each thread streams its own contiguous part of one buffer with
// the widest loads the kernel set has. `tachyon bench memory` prints it per
// buffer size and thread count; `bench decode` sets a model's weight
// traffic against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "inference/kernels/kernels.h"

namespace tachyon {

// Cache sizes of the first CPU from the OS (bytes; 0 when it does not say).
struct cache_sizes {
    size_t l1d = 0, l2 = 0, l3 = 0;
};
cache_sizes detect_cache_sizes();

struct bandwidth_sample {
    size_t bytes = 0;        // buffer size
    int n_threads = 0;
    double gb_per_s = 0;     // best pass, 1e9 bytes per second
};

// Reads a buffer of `bytes` (rounded up to 4 KiB) over ctx's threads until
// at least `min_seconds` have passed and at least 3 passes were made; the
// best pass counts. The buffer is filled (paged in) before timing.
bandwidth_sample measure_read_bandwidth(kernel_context& ctx, size_t bytes, double min_seconds = 0.3);

// The sizes `bench memory` measures: from the L2 size to 4x the L3 (or up to
// 1 GiB when the OS names no L3), doubling, plus the L2, L3 and 4x L3 marks
// themselves. Capped at `max_bytes`.
std::vector<size_t> bandwidth_sizes(const cache_sizes& c, size_t max_bytes);

}  // namespace tachyon
