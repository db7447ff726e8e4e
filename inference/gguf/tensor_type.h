// Tensor element types as GGUF numbers them (ggml_type), with their block
// layouts. A quantized row of n elements is n / block_size blocks of
// type_size bytes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tachyon {

enum class tensor_type : uint32_t {
    f32 = 0,
    f16 = 1,
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q8_1 = 9,
    q2_k = 10,
    q3_k = 11,
    q4_k = 12,
    q5_k = 13,
    q6_k = 14,
    q8_k = 15,
    iq4_nl = 20,
    iq4_xs = 23,
    i8 = 24,
    i16 = 25,
    i32 = 26,
    i64 = 27,
    f64 = 28,
    bf16 = 30,
};

struct tensor_type_traits {
    std::string_view name;   // "q8_0"
    uint32_t block_size;     // elements per block (1 for plain types)
    uint32_t type_size;      // bytes per block
    bool supported;          // tachyon has kernels for it
};

// Traits of a GGUF type number, or nullopt for a number GGUF does not define.
std::optional<tensor_type_traits> traits_of(uint32_t type_number);
tensor_type_traits traits_of(tensor_type type);
std::string_view to_string(tensor_type type);

// Bytes of a row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(const tensor_type_traits& t, int64_t n) {
    return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace tachyon
