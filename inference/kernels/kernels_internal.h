// Private to the kernels: the per-type kernel table both instruction sets
// fill in, and the arguments of a row-range matmul.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

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
    const std::byte* panels = nullptr;  // the weights packed by pack_panels, or nullptr
};

// The prompt tiles lay each group of weight rows out once per panel of
// tokens and run the panel's activations past it. Those come from L2 or L3
// at a rate far above what the tiles need; the layout is the cost that
// repeats, so a panel holds every token of an engine step (max_batch_tokens,
// 256) even on 8960 columns. Measured on Zen 4, one thread, `tachyon bench
// matmul --type T --tokens 256 --rows 1536 --cols 8960 -t 1 --mib 64
// --no-bandwidth`, ms, panels of 256 KiB (24 tokens) against these: q6_K
// 51.3 / 26.3 (AVX-512), 54.6 / 35.4 (AVX2), q4_K 39.9 / 30.5 (AVX2); q4_0
// with panels of 1 MiB 22.0 / 21.5.
constexpr int64_t prompt_panel_bytes = int64_t{4} << 20;

struct type_kernels {
    // y[t, r] for r in [r0, r1) and every token.
    void (*gemm)(const gemm_args& a, int64_t r0, int64_t r1) = nullptr;
    float (*dot)(int64_t n, const void* w, const void* x) = nullptr;
    // f32 -> activation format (nullptr when activations stay f32).
    void (*quantize)(const float* x, void* dst, int64_t n) = nullptr;
};
using quantize_fn = void (*)(const float* x, void* dst, int64_t n);

// nullptr for a type without kernels.
const type_kernels* scalar_kernels(tensor_type weight);
const type_kernels* avx2_kernels(tensor_type weight);
// The AVX2 kernels of the k-quants and iq4_xs (kernels_avx2_kquants.cpp), all
// with activations quantized by quantize_q8_k; avx2_kernels hands those types on to it.
const type_kernels* avx2_kquant_kernels(tensor_type weight, quantize_fn quantize_q8_k);
// AVX2 plus AVX-VNNI: its own kernels of the 32-element block types, the AVX2 ones otherwise.
const type_kernels* avx_vnni_kernels(tensor_type weight);
// AVX-512: its own float-weight, q8_0 / q4_0 / q4_1 / q5_0 / q5_1 / iq4_nl
// and k-quant kernels, the AVX-VNNI ones otherwise.
const type_kernels* avx512_kernels(tensor_type weight);
// The k-quants' AVX-512 kernels (kernels_avx512_kquants.cpp); nullptr for another type.
const type_kernels* avx512_kquant_kernels(tensor_type weight);
// AMX: its own matmul of the quantized types (but q2_K, q3_K) and of f16 /
// bf16 for large batches, AVX-512 otherwise.
const type_kernels* amx_kernels(tensor_type weight);
// Batches of the 32-element block types (kernels_prompt.cpp): rows [r0, r1)
// against every token, 16 rows (AVX-512) or 8 (AVX2, AVX-VNNI) at a time in
// the vector lanes, each group laid out again into an L1 buffer once per
// panel of tokens. nullptr for a type the level has none for: AVX-512 q4_0,
// q4_1, q5_0, q5_1, q8_0, iq4_nl; AVX-VNNI and AVX2 the same (AVX2 lays q8_0
// and iq4_nl out as signed values, whose bytes + 128 overflow maddubs).
using gemm_fn = void (*)(const gemm_args& a, int64_t r0, int64_t r1);
gemm_fn prompt_gemm_avx512(tensor_type weight);
gemm_fn prompt_gemm_avx_vnni(tensor_type weight);
gemm_fn prompt_gemm_avx2(tensor_type weight);
// AMX: the AMX-INT8 q8_0 / q4_0 matmul (kernels_amx.cpp), and the quantized
// types' matmul on AMX-BF16 tiles (kernels_amx_quant.cpp), which hands
// batches below its threshold on; nullptr for a type without one.
gemm_fn amx_int8_gemm(tensor_type weight);
gemm_fn amx_quant_gemm(tensor_type weight);
// q4_K, q5_K, q6_K and iq4_xs packed by pack_panels (kernels_k_packed.cpp):
// every group of 16 rows block by block with the rows in the vector lanes,
// q4_K's nibbles as they are (q5_K's with their fifth bits beside them,
// iq4_xs's indices regrouped in q4_K's order) and the scales and mins as
// bytes, q6_K's bits regrouped for a shift each; the last group padded
// with zero rows.
size_t q4_k_packed_bytes(int64_t n_rows, int64_t n_cols);
void pack_q4_k(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out);
size_t q5_k_packed_bytes(int64_t n_rows, int64_t n_cols);
void pack_q5_k(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out);
size_t q6_k_packed_bytes(int64_t n_rows, int64_t n_cols);
void pack_q6_k(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out);
size_t iq4_xs_packed_bytes(int64_t n_rows, int64_t n_cols);
void pack_iq4_xs(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out);
// q2_K and q3_K packed by pack_panels (kernels_k23_packed.cpp): every
// group of 16 rows block by block, the rows in the vector lanes, a
// sub-block's 2-bit values of 16 rows one 64-byte load (q3_K's high bits
// beside them), the scale bytes a row's pair of sub-blocks side by side.
size_t q23_k_packed_bytes(tensor_type weight, int64_t n_rows, int64_t n_cols);
void pack_q23_k(tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols, std::byte* out);
// Their matmul from the panels, as packed_gemm; nullptr for another type.
gemm_fn q23_k_packed_gemm(tensor_type weight, bool avx512);
// q4_0, q4_1, iq4_nl, q5_0, q5_1 and q8_0 packed by pack_panels from the
// AVX2 level to AVX-512 (kernels_packed16.cpp; kernels_prompt.h says the
// layout): every group of 16 rows block by block with the rows in the
// vector lanes (dword m of row i at [m][i]), the nibbles as stored (the
// fifth bits of q5_0 and q5_1 a dword a row beside them), q8_0's bytes as
// value + 128, then the rows' fp16 scales (and mins), the group padded to a cache line and the last group with zero
// rows: the rows' own bytes.
size_t packed16_bytes(tensor_type weight, int64_t n_rows, int64_t n_cols);
void pack_rows16(tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols, std::byte* out);
// The matmul of a packed type from its panels (y[t, r] for r in [r0, r1),
// r0 a multiple of 16, every token, reading a.panels): the AVX-512 kernels
// (16 rows a register) or the AVX2 ones (8); nullptr for another type.
// The packed16 types but q8_0 below AVX-512 (packed16_gemm256) run batches of up
// to 11 tokens this way; larger ones take the AVX2 / AVX-VNNI prompt tiles,
// which lay their rows out from a.panels when it is set.
gemm_fn packed_gemm(tensor_type weight, bool avx512);
gemm_fn packed16_gemm512(tensor_type weight);
gemm_fn packed16_gemm256(tensor_type weight);
// Group `group` (16 rows) of those panels as AMX-BF16 A tiles: chunk c of
// 32 columns at out + c * 512, tile row i its row i's 32 values (padding
// rows zero); every x as bf16 of its value with the block's scale and min
// folded in (kernels_packed_amx.cpp).
void packed_group_bf16(tensor_type weight, const std::byte* panels, int64_t n_cols, int64_t group, uint16_t* out);
// The same matmul as packed_gemm for a batch of packed_int8_min_tokens to
// packed_int8_max_tokens tokens on AMX-INT8 tiles (kernels_packed_amx.cpp;
// below 8 tokens the packed kernels win, kernels.cpp has the figures);
// nullptr for a type without them.
constexpr int packed_int8_min_tokens = 8, packed_int8_max_tokens = 16;
gemm_fn packed_gemm_amx_int8(tensor_type weight);
// Asks Linux for the AMX tile state; true when granted.
bool os_grants_amx();
// True on AMD CPUs, whose AVX-512 decode of q8_0 / q4_0 lost to the 256-bit
// AVX-VNNI tiles (kernels_avx512.cpp says by how much). TACHYON_VENDOR=amd
// or intel overrides it (read once).
bool cpu_is_amd();
// True on AMD CPUs of family 25 (Zen 3 and Zen 4; with AVX-512: Zen 4), whose
// one-token AVX-512 k-quant passes read at the memory's rate without
// software prefetch (kernels_k_packed.cpp). TACHYON_VENDOR=amd counts as
// Zen 4, intel as not.
bool cpu_is_amd_zen4();

// The 8 scales (bytes 0..7) and 8 mins (bytes 8..15) of a q4_K / q5_K block,
// the 12-byte 6-bit packing undone with 32-bit word operations.
inline void q4_k_unpack_scales(const uint8_t* packed, uint8_t out[16]) {
    constexpr uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
    uint32_t u[4];
    std::memcpy(u, packed, 12);
    u[3] = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);  // mins 4..7
    const uint32_t mins_lo = u[1] & low6;                        // mins 0..3
    u[1] = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);          // scales 4..7
    u[2] = mins_lo;
    u[0] &= low6;                                                // scales 0..3
    std::memcpy(out, u, 16);
}

// The same with vector shuffles for two blocks, for SIMD code (AVX2 and
// up): [scales 0..7 | mins 0..7] as bytes, block 0's in the lower 128 bits,
// block 1's in the upper. Bytes 0-3 of the 12 hold scales 0-3 and the top
// bits of scales 4-7, bytes 4-7 the same for the mins, bytes 8-11 the low
// nibbles of scales 4-7 (low) and mins 4-7 (high). Reads 16 bytes at each,
// which stay inside a q4_K or q5_K block. In the decode tiles it took fewer
// instructions than the integer unpacking, which had taken more than the
// dot products (Zen 4, `tachyon bench matmul --type q4_k --tokens 1 --mib
// 2`: AVX-512 20.4 -> 22.6-22.8 GB/s, AVX2 17.8 -> 18.6-18.8).
__attribute__((target("avx2"))) inline __m256i q4_k_scales_mins(const uint8_t* packed0, const uint8_t* packed1) {
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed0))),
                                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed1)), 1);
    const auto lanes = [](__m128i x) __attribute__((target("avx2"))) { return _mm256_broadcastsi128_si256(x); };
    const __m256i low = _mm256_shuffle_epi8(v, lanes(_mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11)));
    const __m256i top = _mm256_shuffle_epi8(v, lanes(_mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7)));
    const __m256i keep = lanes(_mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
    const __m256i high_nibble = lanes(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
    return _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(low, keep), _mm256_and_si256(_mm256_srli_epi16(low, 4), high_nibble)),
                           _mm256_and_si256(_mm256_srli_epi16(top, 2), _mm256_set1_epi8(0x30)));
}

}  // namespace tachyon::detail
