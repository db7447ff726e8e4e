// The machine's memory read bandwidth, measured the way decode reads
// weights: each thread streams its own contiguous part of one buffer with
// the widest loads the kernel set has, as one stretch and as
// `read_streams` stretches read at once, whichever is faster. `tachyon bench memory` prints it per
// buffer size and thread count; `bench decode` sets a model's weight
// traffic against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
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
    int streams = 1;         // stretches a thread read at once in that pass
};

constexpr int read_streams = 4;

// Reads a buffer of `bytes` (rounded up to 4 KiB) over ctx's threads until
// at least `min_seconds` have passed and at least 3 passes were made (half
// of it as one stretch a thread, half as read_streams); the best pass
// counts. The buffer is filled (paged in) before timing.
bandwidth_sample measure_read_bandwidth(kernel_context& ctx, size_t bytes, double min_seconds = 0.3);

// The same over memory that is already there, such as a model's weights
// (model::decode_reads): every region in turn, each split over ctx's
// threads, from its first 256-byte boundary to its last. Where the pages
// lie (huge or not, which memory) sets the rate, so decode's share of this
// compares like with like. `bytes` is what a pass reads.
bandwidth_sample measure_read_bandwidth(kernel_context& ctx, std::span<const std::span<const std::byte>> regions, double min_seconds = 0.3);

// The sizes `bench memory` measures: from the L2 size to 4x the L3 (or up to
// 1 GiB when the OS names no L3), doubling, plus the L2, L3 and 4x L3 marks
// themselves. Capped at `max_bytes`.
std::vector<size_t> bandwidth_sizes(const cache_sizes& c, size_t max_bytes);

}  // namespace tachyon
