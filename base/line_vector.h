// Vectors whose data starts on a cache line. A tile row or a 64-byte
// vector read from a buffer that malloc aligned to 16 bytes spans two
// lines: measured on a Xeon (Sapphire Rapids, 1 core), the AMX-BF16 prompt
// tiles of an 8960 x 1536 q4_K matmul times 256 tokens took 10.6 ms from
// such buffers and 7.1 ms from these (`tachyon bench matmul --type q4_k
// --rows 8960 --cols 1536 --tokens 256 -t 1`). The kernels' buffers, a
// forward pass's activations and the KV cache are held in them.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace tachyon {

template <class T>
struct line_allocator {
    using value_type = T;
    static constexpr std::align_val_t line{64};
    line_allocator() = default;
    template <class U>
    line_allocator(const line_allocator<U>&) {}
    T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), line)); }
    void deallocate(T* p, size_t) { ::operator delete(p, line); }
    friend bool operator==(const line_allocator&, const line_allocator&) { return true; }
};

template <class T>
using line_vector = std::vector<T, line_allocator<T>>;

}  // namespace tachyon
