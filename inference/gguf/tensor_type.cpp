#include "inference/gguf/tensor_type.h"

#include "base/assert.h"

namespace tachyon {
namespace {

struct entry {
    uint32_t number;
    tensor_type_traits traits;
};

// Block layouts from the GGUF specification (ggml-common.h sizes).
constexpr entry table[] = {
    {0, {"f32", 1, 4, true}},
    {1, {"f16", 1, 2, true}},
    {2, {"q4_0", 32, 18, true}},   // f16 d + 16 bytes of nibbles
    {3, {"q4_1", 32, 20, true}},   // f16 d, f16 m + 16 bytes of nibbles
    {6, {"q5_0", 32, 22, true}},   // f16 d, 4 bytes of high bits, 16 bytes of nibbles
    {7, {"q5_1", 32, 24, true}},   // f16 d, f16 m, then as q5_0
    {8, {"q8_0", 32, 34, true}},   // f16 d + 32 int8
    {9, {"q8_1", 32, 36, false}},
    {10, {"q2_k", 256, 84, true}},   // 16 bytes scales, 64 bytes quants, f16 d, f16 dmin
    {11, {"q3_k", 256, 110, true}},  // 32 bytes hmask, 64 bytes quants, 12 bytes scales, f16 d
    {12, {"q4_k", 256, 144, true}},  // f16 d, f16 dmin, 12 bytes scales, 128 bytes nibbles
    {13, {"q5_k", 256, 176, true}},  // f16 d, f16 dmin, 12 bytes scales, 32 bytes qh, 128 bytes nibbles
    {14, {"q6_k", 256, 210, true}},  // 128 ql, 64 qh, 16 int8 scales, f16 d
    {15, {"q8_k", 256, 292, false}},
    {16, {"iq2_xxs", 256, 66, false}},
    {17, {"iq2_xs", 256, 74, false}},
    {18, {"iq3_xxs", 256, 98, false}},
    {19, {"iq1_s", 256, 50, false}},
    {20, {"iq4_nl", 32, 18, true}},  // f16 d + 16 bytes of table indices
    {21, {"iq3_s", 256, 110, false}},
    {22, {"iq2_s", 256, 82, false}},
    {23, {"iq4_xs", 256, 136, true}},  // f16 d, u16 scales_h, 4 bytes scales_l, 128 bytes indices
    {24, {"i8", 1, 1, false}},
    {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},
    {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},
    {29, {"iq1_m", 256, 56, false}},
    {30, {"bf16", 1, 2, true}},
};

}  // namespace

std::optional<tensor_type_traits> traits_of(uint32_t type_number) {
    for (const auto& e : table) {
        if (e.number == type_number) return e.traits;
    }
    return std::nullopt;
}

tensor_type_traits traits_of(tensor_type type) {
    auto t = traits_of(static_cast<uint32_t>(type));
    TACHYON_ASSERT(t.has_value(), "tensor_type without traits");
    return *t;
}

std::string_view to_string(tensor_type type) { return traits_of(type).name; }

}  // namespace tachyon
