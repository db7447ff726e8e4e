// Private to the kernels: the per-type kernel table both instruction sets
// fill in, and the arguments of a row-range matmul.
#pragma once

#include <cstddef>
#include <cstdint>

#include "inference/gguf/tensor_type.h"

namespace tachyon::detail {

struct gemm_args {
    const std::byte* w;     // [n_rows, w_row_bytes]
    size_t w_row_bytes;
    const std::byte* x;     // [n_tokens, x_row_bytes], in the activation format
    size_t x_row_bytes;
    int64_t n_cols;
    int64_t n_tokens;
    float* y;               // [n_tokens, ldy]
    int64_t ldy;
    const std::byte* panels = nullptr;  // float weights packed by pack_panels, or nullptr
};

struct type_kernels {
    // y[t, r] for r in [r0, r1) and every token.
    void (*gemm)(const gemm_args& a, int64_t r0, int64_t r1) = nullptr;
    float (*dot)(int64_t n, const void* w, const void* x) = nullptr;
    // f32 -> activation format (nullptr when activations stay f32).
    void (*quantize)(const float* x, void* dst, int64_t n) = nullptr;
};

// nullptr for a type without kernels.
const type_kernels* scalar_kernels(tensor_type weight);
const type_kernels* avx2_kernels(tensor_type weight);
// AVX2 plus AVX-VNNI: its own q8_0 / q4_0 kernels, the AVX2 ones otherwise.
const type_kernels* avx_vnni_kernels(tensor_type weight);
// AVX-512: its own float-weight kernels, the AVX-VNNI ones otherwise.
const type_kernels* avx512_kernels(tensor_type weight);
// AMX: its own q8_0 / q4_0 matmul for large batches, AVX-512 otherwise.
const type_kernels* amx_kernels(tensor_type weight);
// Asks Linux for the AMX tile state; true when granted.
bool os_grants_amx();

}  // namespace tachyon::detail
