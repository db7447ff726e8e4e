// The layouts of the k-quants and iq4_xs packed at load (pack_panels,
// kernels_k_packed.cpp), and how a 16-row register of their values is read
// from them; shared by the packed matmul kernels and the AMX tiles that
// dequantize the same panels (kernels_packed_amx.cpp).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "inference/gguf/quant.h"
#include "inference/kernels/kernels_internal.h"

#define TACHYON_PACKED_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c")))
#define TACHYON_PACKED_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace tachyon::detail {

// One block of 256 columns of a group of 16 rows. Chunk c of a q4_K row is
// its quant bytes 32c..32c+31: the low nibbles are sub-block 2c, the high
// ones 2c + 1, byte 4k + i of the chunk element 4k + i of both.
struct alignas(64) q4_k_packed16 {
    uint32_t qs[4][8][16];   // [c][k][row]: bytes 4k..4k+3 of the row's chunk c
    uint8_t scales[8][16];   // [s][row]: 6-bit scale of sub-block s
    uint8_t mins[4][16][2];  // [p][row]: the mins of sub-blocks 2p and 2p + 1
    uint16_t d[16], dmin[16];
};
static_assert(sizeof(q4_k_packed16) == 2368, "about 2.8 % above 16 q4_K blocks (2304 bytes)");

// q5_K as q4_K, with the fifth bits beside the nibbles: bit sb of byte m of
// a row's dword qh[k] is the fifth bit of element 32 sb + 4k + m (qh bytes
// 4k..4k+3 of the row as they are).
struct alignas(64) q5_k_packed16 {
    uint32_t qs[4][8][16];
    uint32_t qh[8][16];      // [k][row]
    uint8_t scales[8][16];
    uint8_t mins[4][16][2];
    uint16_t d[16], dmin[16];
};
static_assert(sizeof(q5_k_packed16) == 2880, "about 2.3 % above 16 q5_K blocks (2816 bytes)");

// iq4_xs on q4_K's layout: the indices regrouped as q4_K's nibbles (chunk c
// holds sub-blocks 2c and 2c + 1), read through the table as level + 128
// (unsigned for dpbusd); the 128 comes off through the token's sub-block
// sums times the scales, which `mins` holds in q4_K's order of mins.
struct alignas(64) iq4_xs_packed16 {
    uint32_t qs[4][8][16];
    int8_t scales[8][16];    // [s][row]: ls - 32
    int8_t mins[4][16][2];   // [p][row]: scales 2p and 2p + 1 again
    uint16_t d[16];
};
static_assert(sizeof(iq4_xs_packed16) == 2368, "about 8.8 % above 16 iq4_xs blocks (2176 bytes)");

// One block of 256 columns of a group of 16 rows of q6_K, the 6-bit values
// kept unsigned (0..63; the offset of 32 comes off through the token's
// bsums). Sub-block s (16 elements) of a row is the three dwords q[s][p],
// p = 0..2: byte m of q[s][p] holds element 16s + 4p + m in bits 0..5 and
// bits 2p..2p + 1 of element 16s + 12 + m in bits 6..7. Registers 0..2 of
// a sub-block (16 rows x 4 elements) are then one load and an and each;
// register 3 gathers the three planes' top bits (three shifts, three ands
// and two ors at AVX2, three shifts, two ternlogs and an and at AVX-512),
// where low and high nibbles with the top bits in a plane of their own
// spent a shift, two ands and an or on every register.
struct alignas(64) q6_k_packed16 {
    uint32_t q[16][3][16];  // [s][p][row]
    int8_t scales[16][16];  // [s][row]
    uint16_t d[16];
};
static_assert(sizeof(q6_k_packed16) == 3392, "about 1 % above 16 q6_K blocks (3360 bytes)");

// q2_K, 16 rows of one block (kernels_k23_packed.cpp). Sub-block s of a
// row (16 elements) is one dword: bits 2k..2k + 1 of its byte m hold
// element 16 s + 4 k + m, so register k of the sub-block (16 rows x 4
// elements) is a shift and an and of one load. The scale bytes (scale in
// the low nibble, min in the high) as they are, a row's pair of sub-blocks
// side by side: widened to int16, a shift gives the mins as pairs for the
// token's bsums, an and the scales. The rows' own 84 bytes each.
struct alignas(64) q2_k_packed16 {
    uint32_t q[16][16];        // [s][row]
    uint8_t scales[8][16][2];  // [p][row]: sub-blocks 2p and 2p + 1
    uint16_t d[16], dmin[16];
};
static_assert(sizeof(q2_k_packed16) == 1344, "16 q2_K blocks");

// q3_K: the low 2 bits as q2_K's values; bit 4e + k of byte m of a row's
// dword h[p] is the high bit of element 16 (2p + e) + 4k + m. Values are
// kept unsigned, low | high << 2 (0..7): the offset of 4 comes off through
// the token's bsums times the scales (6-bit, minus 32).
struct alignas(64) q3_k_packed16 {
    uint32_t q[16][16];       // [s][row]
    uint32_t h[8][16];        // [p][row]
    int8_t scales[8][16][2];  // [p][row]: sub-blocks 2p and 2p + 1
    uint16_t d[16];
};
static_assert(sizeof(q3_k_packed16) == 1856, "about 5.5 % above 16 q3_K blocks (1760 bytes)");

// ---- registers of 16 rows x 4 values, as unsigned bytes ----------------------

// The 16 levels of iq4_xs + 128, in every 128-bit lane.
TACHYON_PACKED_AVX512 inline __m512i iq4_levels_plus_128_512() {
    alignas(16) static constexpr uint8_t lut[16] = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241};
    static_assert(lut[0] == iq4_nl_values[0] + 128 && lut[15] == iq4_nl_values[15] + 128);
    return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(lut)));
}

// Register k of sub-block sb: 16 rows x elements 32 sb + 4k .. + 3 as
// unsigned bytes (q4_K 0..15, q5_K 0..31, iq4_xs level + 128).
TACHYON_PACKED_AVX512 inline __m512i values512(const q4_k_packed16& blk, int sb, int k) {
    const __m512i v = _mm512_load_si512(blk.qs[sb / 2][k]);
    return _mm512_and_si512(sb % 2 == 0 ? v : _mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f));
}

TACHYON_PACKED_AVX512 inline __m512i values512(const q5_k_packed16& blk, int sb, int k) {
    const __m512i v = _mm512_load_si512(blk.qs[sb / 2][k]);
    const __m512i l = sb % 2 == 0 ? v : _mm512_srli_epi16(v, 4);
    const __m512i h = _mm512_load_si512(blk.qh[k]);
    const __m512i hs = sb < 4 ? _mm512_slli_epi16(h, 4 - sb) : sb > 4 ? _mm512_srli_epi16(h, sb - 4) : h;  // bit sb to bit 4
    // (l & 0x0f) | (hs & 0x10)
    return _mm512_ternarylogic_epi32(l, _mm512_and_si512(hs, _mm512_set1_epi8(0x10)), _mm512_set1_epi8(0x0f), 0xec);
}

TACHYON_PACKED_AVX512 inline __m512i values512(const iq4_xs_packed16& blk, int sb, int k) {
    const __m512i v = _mm512_load_si512(blk.qs[sb / 2][k]);
    const __m512i idx = _mm512_and_si512(sb % 2 == 0 ? v : _mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0f));
    return _mm512_shuffle_epi8(iq4_levels_plus_128_512(), idx);
}

// Register k of sub-block sb: 16 rows x elements 16 sb + 4k .. + 3, 0..63.
TACHYON_PACKED_AVX512 inline __m512i q6_values512(const q6_k_packed16& blk, int sb, int k) {
    const __m512i low6 = _mm512_set1_epi8(0x3f);
    if (k < 3) return _mm512_and_si512(_mm512_load_si512(blk.q[sb][k]), low6);
    const __m512i r0 = _mm512_load_si512(blk.q[sb][0]), r1 = _mm512_load_si512(blk.q[sb][1]), r2 = _mm512_load_si512(blk.q[sb][2]);
    // Bits 6..7 of r0, r1 and r2 to bits 0..1, 2..3 and 4..5 (0xca: a ? b : c).
    const __m512i lo4 = _mm512_ternarylogic_epi32(_mm512_set1_epi8(0x03), _mm512_srli_epi16(r0, 6), _mm512_srli_epi16(r1, 4), 0xca);
    const __m512i all = _mm512_ternarylogic_epi32(_mm512_set1_epi8(0x0f), lo4, _mm512_srli_epi16(r2, 2), 0xca);
    return _mm512_and_si512(all, low6);
}

// ---- shared by the packed kernels --------------------------------------------

inline int32_t load_i32(const void* p) {
    int32_t v;
    return std::memcpy(&v, p, 4), v;
}

// s + q's 16 x 4 unsigned bytes . the 4 signed bytes at p, in every lane,
// broadcast by vpdpbusd's own load ({1to16}): GCC keeps _mm512_set1_epi32 of
// a load a separate vpbroadcastd, which cost the 8-token q4_K pass 5-6 %
// (README, "What makes it fast"). ASan builds keep the intrinsics, which it checks.
#if defined(__SANITIZE_ADDRESS__)
#define TACHYON_DPBUSD_ASM 0
#elif defined(__has_feature)
#define TACHYON_DPBUSD_ASM !__has_feature(address_sanitizer)
#else
#define TACHYON_DPBUSD_ASM 1
#endif
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline __m512i dpbusd_broadcast(__m512i s, __m512i q, const void* p) {
#if TACHYON_DPBUSD_ASM
    asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(s) : "v"(q), "m"(*static_cast<const int32_t*>(p)));
    return s;
#else
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_dpbusd_epi32(s, q, _mm512_set1_epi32(v));
#endif
}

// Every group of 16 rows block by block: pack_row(p, i, block) writes row
// i of packed block p from the row's block; rows past n_rows stay zero
// (zero weights, their sums never stored).
template <class P, class B, class PackRow>
inline void pack_groups(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out, const PackRow& pack_row) {
    const int64_t nb = n_cols / qk_k, n_groups = (n_rows + 15) / 16;
    const auto* blocks = static_cast<const B*>(w);
    auto* packed = reinterpret_cast<P*>(out);
    for (int64_t g = 0; g < n_groups; ++g) {
        for (int64_t b = 0; b < nb; ++b) {
            P& p = packed[g * nb + b];
            std::memset(&p, 0, sizeof p);
            for (int i = 0; i < 16 && g * 16 + i < n_rows; ++i) pack_row(p, i, blocks[(g * 16 + i) * nb + b]);
        }
    }
}

// Groups of rows [r0, r1) (r0 a multiple of 16) of panels of Packed blocks
// of 256 columns, against token panels whose activations stay in L2 while
// a group passes them all: group(w, nb, r, rows, t0, t1).
template <class Packed, class Group>
void by_groups(const gemm_args& a, int64_t r0, int64_t r1, int nt, const Group& group) {
    const int64_t nb = a.n_cols / qk_k;
    const auto* packed = reinterpret_cast<const Packed*>(a.panels);
    const int64_t panel = std::max<int64_t>(nt, prompt_panel_bytes / static_cast<int64_t>(a.x_row_bytes) / nt * nt);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += panel) {
        const int64_t t1 = std::min(a.n_tokens, t0 + panel);
        for (int64_t r = r0; r < r1; r += 16) group(packed + r / 16 * nb, nb, r, static_cast<int>(std::min<int64_t>(16, r1 - r)), t0, t1);
    }
}

// pass(std::integral_constant<int, N>{}) for N = n, 1 <= n <= Max: the
// tail of a batch, in the kernel instantiated for it; nothing for n = 0.
template <int Max, class Pass>
inline void pass_of(int64_t n, const Pass& pass) {
    if constexpr (Max >= 1) {
        if (n == Max) return pass(std::integral_constant<int, Max>{});
        pass_of<Max - 1>(n, pass);
    }
}

// The AVX-512 passes over rows [r0, r1): per group of 16 rows, NT tokens a
// pass and then the tail; pass(nt, w, nb, r, t, keep) multiplies tokens
// t.. t + nt - 1 (nt an integral_constant), storing the rows in `keep`.
template <class P, int NT, class Pass>
void groups512(const gemm_args& a, int64_t r0, int64_t r1, const Pass& pass) {
    by_groups<P>(a, r0, r1, NT, [&](const P* w, int64_t nb, int64_t r, int n, int64_t t0, int64_t t1) {
        const auto keep = static_cast<__mmask16>((1u << n) - 1);
        int64_t t = t0;
        for (; t + NT <= t1; t += NT) pass(std::integral_constant<int, NT>{}, w, nb, r, t, keep);
        pass_of<NT - 1>(t1 - t, [&](auto nt) { pass(nt, w, nb, r, t, keep); });
    });
}

// The AVX2 passes: a group as two halves of 8 rows. With BothHalves, a
// batch of 1 or 2 tokens takes both halves a pass (nh = 2); otherwise each
// half takes NT tokens a pass and then the tail (nh = 1).
// pass(nt, nh, w, nb, h0, r, t, keep0, keep1): halves h0.. h0 + nh - 1.
template <class P, int NT, bool BothHalves, class Pass>
void groups256(const gemm_args& a, int64_t r0, int64_t r1, const Pass& pass) {
    using one = std::integral_constant<int, 1>;
    using two = std::integral_constant<int, 2>;
    by_groups<P>(a, r0, r1, NT, [&](const P* w, int64_t nb, int64_t r, int n, int64_t t0, int64_t t1) TACHYON_PACKED_AVX2 {
        const auto keep = [n](int h) TACHYON_PACKED_AVX2 {
            return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8 * h), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        };
        if constexpr (BothHalves) {
            if (t1 - t0 <= 2 && n > 8) {
                if (t1 - t0 == 2) return pass(two{}, two{}, w, nb, 0, r, t0, keep(0), keep(1));
                return pass(one{}, two{}, w, nb, 0, r, t0, keep(0), keep(1));
            }
        }
        for (int h = 0; h < 2 && 8 * h < n; ++h) {
            int64_t t = t0;
            for (; t + NT <= t1; t += NT) pass(std::integral_constant<int, NT>{}, one{}, w, nb, h, r, t, keep(h), keep(h));
            pass_of<NT - 1>(t1 - t, [&](auto nt) TACHYON_PACKED_AVX2 { pass(nt, one{}, w, nb, h, r, t, keep(h), keep(h)); });
        }
    });
}

}  // namespace tachyon::detail
