// AVX2 kernels of the k-quants (q2_K, q3_K, q4_K, q5_K, q6_K) and of
// iq4_xs, all against q8_K activations. Every function carries its own
// target attribute so the file builds for plain x86-64; kernels.cpp only
// calls in here after checking the CPU (default_isa). The AVX-VNNI, AVX-512
// and AMX levels run these too.
//
// One tile driver (k_tile) serves every type: RM weight rows x RN tokens,
// each weight block unpacked once per tile and each activation block loaded
// once per row; a type says how one weight block meets the RN activation
// blocks in integers. Quants become unsigned bytes for maddubs; where the
// format's values are signed (q6_K's q - 32, q3_K's q - 4) the offset comes
// off once per sub-block through the activations' bsums, and the mins of
// q2_K / q4_K / q5_K the same way.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/rows/kernels_k_rows.h"
#include "inference/gguf/quant.h"

#define TACHYON_AVX2 __attribute__((target("avx2,fma,f16c")))
// a type's block step, always inlined into the driver's loop so that its sums stay in registers
#define TACHYON_AVX2_STEP __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define TACHYON_TILE_TARGET TACHYON_AVX2
#define TACHYON_TILE_VNNI 0
#include "inference/kernels/rows/kernels_q8_tile.h"

namespace tachyon::detail {
namespace {

TACHYON_AVX2 inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// Sixteen int16 sub-block factors of a 256-element block, as 16 bytes at p
// (unsigned), both 128-bit lanes holding the 8 of one half: half h's factors
// 8h..8h+7.
TACHYON_AVX2 inline __m256i half_factors(const uint8_t* p, int h) {
    return _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * h))));
}


// The 8 sub-block scales of an iq4_xs block minus 32, as int16 in both
// 128-bit lanes: scale b's low nibble is bits 4b..4b+3 of scales_l (as a
// 32-bit word), its high 2 bits are bits 2b..2b+1 of scales_h.
TACHYON_AVX2 inline __m256i iq4_xs_factors(const block_iq4_xs& b) {
    uint32_t l;
    std::memcpy(&l, b.scales_l, 4);
    // nibble k of scales_h = the high bits of scales 2k and 2k + 1; spread
    // the nibbles to bytes, then split each into its two 2-bit fields
    const uint32_t h = b.scales_h;
    const uint32_t hn = (h & 0xf) | ((h & 0xf0) << 4) | ((h & 0xf00) << 8) | ((h & 0xf000) << 12);
    const __m128i low = _mm_unpacklo_epi8(_mm_cvtsi32_si128(static_cast<int>(l & 0x0f0f0f0f)),
                                          _mm_cvtsi32_si128(static_cast<int>((l >> 4) & 0x0f0f0f0f)));
    const __m128i high = _mm_unpacklo_epi8(_mm_cvtsi32_si128(static_cast<int>(hn & 0x03030303)),
                                           _mm_cvtsi32_si128(static_cast<int>((hn >> 2) & 0x03030303)));
    const __m128i scales = _mm_or_si128(low, _mm_slli_epi16(high, 4));  // bytes 0..7, 6 bits each
    const __m128i centered = _mm_sub_epi16(_mm_cvtepu8_epi16(scales), _mm_set1_epi16(32));
    return _mm256_broadcastsi128_si256(centered);
}


// The loop every k-quant tile shares. K names the weight block (K::block)
// and adds one weight block's products with the RN tokens' blocks b:
//   K::sums<RN>(wb, x, b, xsum, sumi, summ)
// leaves in sumi[j] the integer dot of the block with token j (its offsets
// undone) and, for a type with mins (K::has_mins), in summ[j] the mins'
// integer sum against the activations, which the driver scales by d and dmin.
// xsum holds the tokens' sums over each 32-element sub-block (from the
// 16-element bsums) for the types whose mins are per 32 (K::sums_of_32).
template <class K>
struct k_tile {
    static constexpr int rn = 4;

    template <int RM, int RN>
    TACHYON_AVX2 static void run(const gemm_args& a, int64_t r, int64_t t) {
        using block = typename K::block;
        const block* w[RM];
        const block_q8_k* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const block*>(a.w + (r + i) * a.w_row_bytes);
        for (int j = 0; j < RN; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[RM][RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
        const int64_t nb = a.n_cols / qk_k;
        const bool stream = t == 0 && a.n_tokens <= max_stream_tokens;  // decode: fetch the rows ahead
        const int64_t ahead = prefetch_distance(a, kq_prefetch_bytes);
        for (int64_t b = 0; b < nb; ++b) {
            __m128i xsum[RN];
            if constexpr (K::sums_of_32) {
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums));
                    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums + 8));
                    xsum[j] = _mm_hadd_epi16(lo, hi);
                }
            }
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                const block& wb = w[i][b];
                if (stream) prefetch_block_l2(&wb, ahead);
                __m256i sumi[RN], summ[RN];
                K::template sums<RN>(wb, x, b, xsum, sumi, summ);
                const float d = half_to_float(wb.d);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j)
                    acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[j]), _mm256_set1_ps(d * x[j][b].d), acc[i][j]);
                if constexpr (K::has_mins) {
                    const float dmin = half_to_float(wb.dmin);
#pragma GCC unroll 16
                    for (int j = 0; j < RN; ++j)
                        acc[i][j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(summ[j]), _mm256_set1_ps(dmin * x[j][b].d), acc[i][j]);
                }
            }
        }
        for (int i = 0; i < RM; ++i)
            for (int j = 0; j < RN; ++j) a.y[(t + j) * a.ldy + r + i] = hsum(acc[i][j]);
    }
};

template <int RN>
using tokens = const block_q8_k* const (&)[RN];
template <int RN>
using lanes = __m256i (&)[RN];

// q4_K and q5_K: eight sub-blocks of 32 with a 6-bit scale and min each; the
// 4-bit values (q5_K: and a fifth bit from qh) are unsigned as they are.
template <bool five_bits>
struct q45_k_sums {
    using block = std::conditional_t<five_bits, block_q5_k, block_q4_k>;
    static constexpr bool has_mins = true;
    static constexpr bool sums_of_32 = true;

    template <int RN>
    TACHYON_AVX2_STEP static void sums(const block& wb, tokens<RN> x, int64_t b, const __m128i (&xsum)[RN], lanes<RN> sumi,
                                  lanes<RN> summ) {
        const __m128i sm = _mm256_castsi256_si128(q4_k_scales_mins(wb.scales, wb.scales));
        const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
        const __m256i factors = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        __m256i qh = _mm256_setzero_si256();
        if constexpr (five_bits) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh));
#pragma GCC unroll 16
        for (int j = 0; j < RN; ++j) sumi[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            __m256i lo, hi;
            q45_k_quants<five_bits>(wb.qs, qh, c, lo, hi);
            const __m256i s_lo = lane_factor(factors, 2 * c);
            const __m256i s_hi = lane_factor(factors, 2 * c + 1);
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) {
                const int8_t* xq = x[j][b].qs + 64 * c;
                // values up to 31: maddubs pairs stay within 2*31*128
                const __m256i p_lo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
                const __m256i p_hi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32)));
                sumi[j] = _mm256_add_epi32(sumi[j], _mm256_add_epi32(_mm256_madd_epi16(p_lo, s_lo), _mm256_madd_epi16(p_hi, s_hi)));
            }
        }
#pragma GCC unroll 16
        for (int j = 0; j < RN; ++j) summ[j] = _mm256_zextsi128_si256(_mm_madd_epi16(mins, xsum[j]));
    }
};

// q6_K: sixteen sub-blocks of 16 with a signed 8-bit scale; the quants are
// stored as q + 32 (0..63, unsigned, as maddubs wants), and 32 * sum_s
// scale_s * sum(x in s) comes off once.
struct q6_k_sums {
    using block = block_q6_k;
    static constexpr bool has_mins = false;
    static constexpr bool sums_of_32 = false;

    template <int RN>
    TACHYON_AVX2_STEP static void sums(const block& wb, tokens<RN> x, int64_t b, const __m128i (&)[RN], lanes<RN> sumi, lanes<RN>) {
        const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
#pragma GCC unroll 16
        for (int j = 0; j < RN; ++j) {
            const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].bsums));
            sumi[j] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(scales, bs), 5));
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            // the half's 8 scales (signed) as int16 in both lanes
            const __m256i factors = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(wb.scales + 8 * h))));
            __m256i q[4];
            q6_k_quants(wb, h, q);
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                // Sub-blocks of 16: one scale per 128-bit lane.
                const __m256i sv = pair_factor(factors, g);  // scales 8h + 2g and 8h + 2g + 1
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs + 128 * h + 32 * g));
                    sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(_mm256_maddubs_epi16(q[g], xv), sv));
                }
            }
        }
    }
};

// q3_K: sixteen sub-blocks of 16 with a 6-bit scale less 32; the values are
// u - 4 with u = q2 + 4 * hbit (0..7, unsigned for maddubs): every sum
// starts at -4 * sum_s scale_s * sum(x in s).
struct q3_k_sums {
    using block = block_q3_k;
    static constexpr bool has_mins = false;
    static constexpr bool sums_of_32 = false;

    template <int RN>
    TACHYON_AVX2_STEP static void sums(const block& wb, tokens<RN> x, int64_t b, const __m128i (&)[RN], lanes<RN> sumi, lanes<RN>) {
        const __m256i low2 = _mm256_set1_epi8(0x03);
        const __m128i sc = q3_k_scales_vector(wb.scales);
        const __m256i scales = _mm256_sub_epi16(_mm256_cvtepu8_epi16(sc), _mm256_set1_epi16(32));
#pragma GCC unroll 16
        for (int j = 0; j < RN; ++j) {
            const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].bsums));
            sumi[j] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(scales, bs), 2));
        }
        const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.hmask));
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * h));
            // the half's 8 scales (less 32) in both lanes
            const __m256i factors = _mm256_broadcastsi128_si256(h == 0 ? _mm256_castsi256_si128(scales) : _mm256_extracti128_si256(scales, 1));
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * g), low2);
                const __m256i u = _mm256_or_si256(q2, bit_as_4(hm, 4 * h + g));
                const __m256i sv = pair_factor(factors, g);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs + 128 * h + 32 * g));
                    sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), sv));
                }
            }
        }
    }
};

// q2_K: sixteen sub-blocks of 16, scale in the low nibble and min in the
// high one of a byte each; 2-bit values, unsigned.
struct q2_k_sums {
    using block = block_q2_k;
    static constexpr bool has_mins = true;
    static constexpr bool sums_of_32 = false;

    template <int RN>
    TACHYON_AVX2_STEP static void sums(const block& wb, tokens<RN> x, int64_t b, const __m128i (&)[RN], lanes<RN> sumi, lanes<RN> summ) {
        const __m256i low2 = _mm256_set1_epi8(0x03);
        const __m128i low4 = _mm_set1_epi8(0x0f);
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
        alignas(16) uint8_t sc[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(sc), _mm_and_si128(packed, low4));
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
#pragma GCC unroll 16
        for (int j = 0; j < RN; ++j) {
            sumi[j] = _mm256_setzero_si256();
            summ[j] = _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].bsums)));
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * h));
            const __m256i factors = half_factors(sc, h);
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * g), low2);
                const __m256i sv = pair_factor(factors, g);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs + 128 * h + 32 * g));
                    sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), sv));
                }
            }
        }
    }
};

// iq4_xs: eight sub-blocks of 32 with a 6-bit scale less 32; the 4-bit
// codes index iq4_nl's signed levels.
struct iq4_xs_sums {
    using block = block_iq4_xs;
    static constexpr bool has_mins = false;
    static constexpr bool sums_of_32 = false;

    template <int RN>
    TACHYON_AVX2_STEP static void sums(const block& wb, tokens<RN> x, int64_t b, const __m128i (&)[RN], lanes<RN> sumi, lanes<RN>) {
        const __m256i low4 = _mm256_set1_epi8(0x0f);
        const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)));
        const __m256i factors = iq4_xs_factors(wb);
#pragma GCC unroll 16
        for (int j = 0; j < RN; ++j) sumi[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            // Sub-blocks 2k and 2k + 1 in the two lanes of one load:
            // low nibbles are elements 0..15, high nibbles 16..31.
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * k));
            const __m256i lo = _mm256_and_si256(raw, low4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
            const __m256i v[2] = {_mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x20)),
                                  _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x31))};
            const __m256i av[2] = {_mm256_sign_epi8(v[0], v[0]), _mm256_sign_epi8(v[1], v[1])};
            const __m256i sv[2] = {lane_factor(factors, 2 * k), lane_factor(factors, 2 * k + 1)};
#pragma GCC unroll 2
            for (int s = 0; s < 2; ++s) {
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    // signed levels: |v| against x with v's sign, pairs below 2*127*127
                    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs + 64 * k + 32 * s));
                    const __m256i pr = _mm256_maddubs_epi16(av[s], _mm256_sign_epi8(xv, v[s]));
                    sumi[j] = _mm256_add_epi32(sumi[j], _mm256_madd_epi16(pr, sv[s]));
                }
            }
        }
    }
};

// ---- q4_K batches: 8 rows in the vector lanes -----------------------------------
//
// kernels_prompt.cpp's layout for q4_K: a group of 8 rows is laid out again,
// once per group and panel of tokens, into a buffer (2.4 KiB a block: 10
// KiB for rows of 1024, in L1; 39 KiB for rows of 4096, in L2), its quants
// unpacked to bytes as [dword][row],
// its 6-bit scales and mins as int16 per row. One token's 4 activation
// bytes, broadcast, then multiply into the 8 rows' sums at once: a
// sub-block of 32 costs each token 8 maddubs and their int16 sums (16
// products of at most 15 * 127 per lane, within int16), one madd by the
// rows' scales and one add; the mins take 4 madds a block. k_tile pays per
// (row, token) the madds, the float scale products and FMAs, and a
// horizontal sum, and unpacks each block once per 4 tokens. Measured on
// the Xeon (Sapphire Rapids class) forced to AVX2, `TACHYON_KERNELS=avx2
// tachyon bench matmul --type q4_k --tokens 3,4,16,64,256 -t 1 --mib 64
// --no-bandwidth`, us against k_tile: 4 tokens 264 / 302, 16 609 / 1136,
// 64 1884 / 4719, 256 7290 / 19508; prompts of 512 on the 220M
// Q4_K_M model 165 -> 316 tokens/s. The AVX-VNNI level runs it too.

// v[i] row i of 8 dwords -> v[m] dword m of the 8 rows.
TACHYON_AVX2 inline void transpose8x8(__m256i (&v)[8]) {
    const __m256 m0 = _mm256_castsi256_ps(v[0]), m1 = _mm256_castsi256_ps(v[1]), m2 = _mm256_castsi256_ps(v[2]),
                 m3 = _mm256_castsi256_ps(v[3]), m4 = _mm256_castsi256_ps(v[4]), m5 = _mm256_castsi256_ps(v[5]),
                 m6 = _mm256_castsi256_ps(v[6]), m7 = _mm256_castsi256_ps(v[7]);
    const __m256 t0 = _mm256_unpacklo_ps(m0, m1), t1 = _mm256_unpackhi_ps(m0, m1);
    const __m256 t2 = _mm256_unpacklo_ps(m2, m3), t3 = _mm256_unpackhi_ps(m2, m3);
    const __m256 t4 = _mm256_unpacklo_ps(m4, m5), t5 = _mm256_unpackhi_ps(m4, m5);
    const __m256 t6 = _mm256_unpacklo_ps(m6, m7), t7 = _mm256_unpackhi_ps(m6, m7);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    v[0] = _mm256_castps_si256(_mm256_permute2f128_ps(u0, u4, 0x20));
    v[1] = _mm256_castps_si256(_mm256_permute2f128_ps(u1, u5, 0x20));
    v[2] = _mm256_castps_si256(_mm256_permute2f128_ps(u2, u6, 0x20));
    v[3] = _mm256_castps_si256(_mm256_permute2f128_ps(u3, u7, 0x20));
    v[4] = _mm256_castps_si256(_mm256_permute2f128_ps(u0, u4, 0x31));
    v[5] = _mm256_castps_si256(_mm256_permute2f128_ps(u1, u5, 0x31));
    v[6] = _mm256_castps_si256(_mm256_permute2f128_ps(u2, u6, 0x31));
    v[7] = _mm256_castps_si256(_mm256_permute2f128_ps(u3, u7, 0x31));
}

inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Tokens t.. t + NT - 1 against the 8 rows laid out at w; lanes outside
// `keep` are not stored. KS maddubs a token's int16 sum: 8 for q4_K (16
// products of at most 15 * 127), 4 for q5_K's values up to 31.
template <int NT, int KS = 8>
TACHYON_AVX2 void q4_k_tokens8(const gemm_args& a, const q4_k_rows* w, int64_t nb, int64_t r, int64_t t, __m256i keep) {
    const block_q8_k* x[NT];
    for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
    __m256 acc[NT];
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const q4_k_rows& blk = w[b];
        __m256i sumi[NT];
#pragma GCC unroll 8
        for (int sb = 0; sb < 8; ++sb) {
            __m256i s16[NT];
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.quants[8 * sb + k]));
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const __m256i p = _mm256_maddubs_epi16(q, _mm256_set1_epi32(static_cast<int>(load_u32(x[j][b].qs + 32 * sb + 4 * k))));
                    s16[j] = k % KS == 0 ? p : _mm256_add_epi16(s16[j], p);
                    // keeps the sums a chain (a tree holds every product live and spills)
                    __asm__("" : "+x"(s16[j]));
                }
                if ((k + 1) % KS != 0) continue;
                const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.scales[sb]));
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const __m256i v = _mm256_madd_epi16(s16[j], sc);
                    sumi[j] = sb == 0 && k + 1 == KS ? v : _mm256_add_epi32(sumi[j], v);
                }
            }
        }
        const __m256 dw = _mm256_load_ps(blk.d), mw = _mm256_load_ps(blk.dmin);
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) {
            // the token's sums of 32 (pairs of its bsums), two per dword
            alignas(16) uint32_t xs[4];
            const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums));
            const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums + 8));
            _mm_store_si128(reinterpret_cast<__m128i*>(xs), _mm_hadd_epi16(lo, hi));
            __m256i summ = _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.mins[0])), _mm256_set1_epi32(static_cast<int>(xs[0])));
#pragma GCC unroll 4
            for (int p = 1; p < 4; ++p)
                summ = _mm256_add_epi32(summ, _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.mins[p])),
                                                                _mm256_set1_epi32(static_cast<int>(xs[p]))));
            const __m256 dx = _mm256_set1_ps(x[j][b].d);
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[j]), _mm256_mul_ps(dw, dx), acc[j]);
            acc[j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_mul_ps(mw, dx), acc[j]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
}

constexpr int q4_k_nt = 4;  // tokens per tile: 4 int16, 4 int32 and 4 float sums of the 16 registers

template <class Q, int NT = q4_k_nt - 1>
TACHYON_AVX2 void k_rows8_tail(const gemm_args& a, const typename Q::rows* w, int64_t nb, int64_t r, int64_t t, __m256i keep, int64_t n) {
    if constexpr (NT >= 1) {
        if (n == NT) return Q::template tokens<NT>(a, w, nb, r, t, keep);
        k_rows8_tail<Q, NT - 1>(a, w, nb, r, t, keep, n);
    }
}

// From 4 tokens: at 3 k_tile was ahead (interleaved runs of the command
// above q4_k_rows, us: 3 tokens 274-317 against 239-264, 4 303-345 /
// 326-330, 5 354-362 / 435-438). q5_K on the same layout, its int16 sums
// of 4 maddubs each (Sapphire Rapids at TACHYON_KERNELS=avx2, one thread,
// 8960 x 1536 from the panels, us against the packed kernels: 16 tokens
// 3033 / 3540, 64 8919 / 12604, 256 36376 / 61830; the threshold is
// kernels.cpp's avx2_q5_k_min_tokens_tiles).
template <bool FiveBits>
struct q45_k_layout {
    using rows = q4_k_rows;
    static constexpr int64_t min_tokens = 4;
    TACHYON_AVX2 static void lay_out(const gemm_args& a, int64_t r, int n, int64_t nb, rows* out) {
        if constexpr (FiveBits) lay_out_q5_k_rows8(a, r, n, nb, out);
        else lay_out_q4_k_rows8(a, r, n, nb, out);
    }
    template <int NT>
    TACHYON_AVX2 static void tokens(const gemm_args& a, const rows* w, int64_t nb, int64_t r, int64_t t, __m256i keep) {
        q4_k_tokens8<NT, FiveBits ? 4 : 8>(a, w, nb, r, t, keep);
    }
};
using q4_k_layout = q45_k_layout<false>;
using q5_k_layout = q45_k_layout<true>;

// ---- q6_K batches: the same 8 rows in the vector lanes ------------------------
//
// As q4_K above, the 6-bit values (q + 32, 0..63) unpacked to bytes as
// [dword][row], each sub-block of 16's signed scale as int16 per row. Two
// maddubs of a token (4 products of at most 63 * 127 per int16 lane) still
// fit in int16, so a sub-block of 16 costs each token 4 maddubs, 2 int16
// adds and 2 madds by the rows' scales; the 32 * sum(scale * x) the stored
// offset adds comes off once per block from the token's bsums (8 madds).

// From 12 tokens: below, k_tile's one unpacking per 4 tokens costs less
// than the layout (the Xeon forced to AVX2, `TACHYON_KERNELS=avx2 tachyon
// bench matmul --type q6_k --tokens 4,8,16,64,256 -t 1 --mib 64
// --no-bandwidth`, us against k_tile: 4 tokens 552 / 337, 8 715 / 621, 16
// 970 / 1218, 64 2510 / 5005, 256 9068 / 19535; prompts of 512 on the 220M
// Q6_K model 174 -> 325 tokens/s, on the Qwen2.5-1.5B-shaped Q4_K_M 48.9 ->
// 53.3).
struct q6_k_layout {
    using rows = q6_k_rows;
    static constexpr int64_t min_tokens = 12;

    TACHYON_AVX2 static void lay_out(const gemm_args& a, int64_t r, int n, int64_t nb, rows* out) { lay_out_q6_k_rows8(a, r, n, nb, out); }

    template <int NT>
    TACHYON_AVX2 static void tokens(const gemm_args& a, const rows* w, int64_t nb, int64_t r, int64_t t, __m256i keep) {
        const block_q8_k* x[NT];
        for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[NT];
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const q6_k_rows& blk = w[b];
            __m256i sumi[NT];
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) sumi[j] = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int sb = 0; sb < 16; ++sb) {
                __m256i q[4];
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) q[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.quants[4 * sb + k]));
                const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.scales[sb]));
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const uint8_t* xq = reinterpret_cast<const uint8_t*>(x[j][b].qs) + 16 * sb;
                    const auto term = [&](int k) TACHYON_AVX2 {
                        return _mm256_maddubs_epi16(q[k], _mm256_set1_epi32(static_cast<int>(load_u32(xq + 4 * k))));
                    };
                    const __m256i s0 = _mm256_add_epi16(term(0), term(1)), s1 = _mm256_add_epi16(term(2), term(3));
                    sumi[j] = _mm256_add_epi32(sumi[j], _mm256_add_epi32(_mm256_madd_epi16(s0, sc), _mm256_madd_epi16(s1, sc)));
                }
            }
            const __m256 dw = _mm256_load_ps(blk.d);
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) {
                __m256i off = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int p = 0; p < 8; ++p)
                    off = _mm256_add_epi32(off, _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.pairs[p])),
                                                                  _mm256_set1_epi32(static_cast<int>(load_u32(x[j][b].bsums + 2 * p)))));
                const __m256i v = _mm256_sub_epi32(sumi[j], _mm256_slli_epi32(off, 5));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(dw, _mm256_set1_ps(x[j][b].d)), acc[j]);
            }
        }
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
    }
};

// Q: the layout of a type's 8-row groups (q4_k_layout, q6_k_layout).
template <class Q>
TACHYON_AVX2 void gemm_k_rows8(const gemm_args& a, int64_t r0, int64_t r1) {
    using rows = typename Q::rows;
    const int64_t nb = a.n_cols / qk_k;
    thread_local std::vector<rows> buffer;
    if (buffer.size() < static_cast<size_t>(nb)) buffer.resize(static_cast<size_t>(nb));
    const int64_t panel = std::max<int64_t>(q4_k_nt, prompt_panel_bytes / static_cast<int64_t>(a.x_row_bytes) / q4_k_nt * q4_k_nt);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += panel) {
        const int64_t t1 = std::min(a.n_tokens, t0 + panel);
        for (int64_t r = r0; r < r1; r += 8) {
            const int n = static_cast<int>(std::min<int64_t>(8, r1 - r));
            Q::lay_out(a, r, n, nb, buffer.data());
            const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            int64_t t = t0;
            for (; t + q4_k_nt <= t1; t += q4_k_nt) Q::template tokens<q4_k_nt>(a, buffer.data(), nb, r, t, keep);
            k_rows8_tail<Q>(a, buffer.data(), nb, r, t, keep, t1 - t);
        }
    }
}

// Batches of Q::min_tokens and more take the type's 8-row layout, fewer k_tile.
template <class K, class Q>
TACHYON_AVX2 void gemm_k_by_tokens(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens >= Q::min_tokens) return gemm_k_rows8<Q>(a, r0, r1);
    gemm<K>(a, r0, r1);
}

}  // namespace

namespace {

// Rows r.. r + n - 1 (n <= 8) of q4_K or q5_K as q4_k_rows; rows past n
// repeat row r (their sums are never stored). Asks for the next group's
// rows, into L2.
template <bool five_bits>
TACHYON_AVX2 void lay_out_q45_k_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q4_k_rows* out) {
    using block = std::conditional_t<five_bits, block_q5_k, block_q4_k>;
    const block* row[8];
    for (int i = 0; i < 8; ++i) row[i] = reinterpret_cast<const block*>(a.w + (r + (i < n ? i : 0)) * a.w_row_bytes);
    const int64_t next = 8 * static_cast<int64_t>(a.w_row_bytes);
    for (int64_t b = 0; b < nb; ++b) {
        q4_k_rows& o = out[b];
        for (int i = 0; i < 8; ++i) prefetch_block_l2(&row[i][b], next);
        // 32 bytes c of the quants: the low nibbles are sub-block 2c, the high 2c + 1
        for (int c = 0; c < 4; ++c) {
            __m256i lo[8], hi[8];
            for (int i = 0; i < 8; ++i) {
                __m256i qh = _mm256_setzero_si256();
                if constexpr (five_bits) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[i][b].qh));
                q45_k_quants<five_bits>(row[i][b].qs, qh, c, lo[i], hi[i]);
            }
            transpose8x8(lo);
            transpose8x8(hi);
            for (int k = 0; k < 8; ++k) {
                _mm256_store_si256(reinterpret_cast<__m256i*>(o.quants[8 * (2 * c) + k]), lo[k]);
                _mm256_store_si256(reinterpret_cast<__m256i*>(o.quants[8 * (2 * c + 1) + k]), hi[k]);
            }
        }
        for (int i = 0; i < 8; ++i) {
            uint8_t sm[16];
            q4_k_unpack_scales(row[i][b].scales, sm);
            for (int sb = 0; sb < 8; ++sb) o.scales[sb][i] = sm[sb] * 0x10001u;
            for (int p = 0; p < 4; ++p) o.mins[p][i] = sm[8 + 2 * p] | (static_cast<uint32_t>(sm[9 + 2 * p]) << 16);
            o.d[i] = half_to_float(row[i][b].d);
            o.dmin[i] = half_to_float(row[i][b].dmin);
        }
    }
}

}  // namespace

TACHYON_AVX2 void lay_out_q4_k_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q4_k_rows* out) {
    if (a.panels != nullptr) return lay_out_q4_k_rows8_packed(a, r, nb, out);
    lay_out_q45_k_rows8<false>(a, r, n, nb, out);
}
TACHYON_AVX2 void lay_out_q5_k_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q4_k_rows* out) {
    if (a.panels != nullptr) return lay_out_q5_k_rows8_packed(a, r, nb, out);
    lay_out_q45_k_rows8<true>(a, r, n, nb, out);
}

// iq4_xs as q4_k_rows: the levels + 128 (1..241) as the quants, the
// signed 6-bit scales less 32 as the scales, 128 * scale as the mins and d
// as both d and dmin, so that d * scale * (u - 128) is the q4_K sum.
TACHYON_AVX2 void lay_out_iq4_xs_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q4_k_rows* out) {
    const block_iq4_xs* row[8];
    for (int i = 0; i < 8; ++i) row[i] = reinterpret_cast<const block_iq4_xs*>(a.w + (r + (i < n ? i : 0)) * a.w_row_bytes);
    const int64_t next = 8 * static_cast<int64_t>(a.w_row_bytes);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i levels = _mm256_xor_si256(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values))),
                                            _mm256_set1_epi8(static_cast<char>(0x80)));
    for (int64_t b = 0; b < nb; ++b) {
        q4_k_rows& o = out[b];
        for (int i = 0; i < 8; ++i) prefetch_block_l2(&row[i][b], next);
        // 32 bytes k of the nibbles hold sub-blocks 2k (bytes 0..15) and 2k + 1:
        // low nibbles the elements 0..15 of each, high nibbles 16..31
        for (int k = 0; k < 4; ++k) {
            __m256i v[2][8];
            for (int i = 0; i < 8; ++i) {
                const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[i][b].qs + 32 * k));
                const __m256i lo = _mm256_and_si256(raw, low4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
                v[0][i] = _mm256_shuffle_epi8(levels, _mm256_permute2x128_si256(lo, hi, 0x20));
                v[1][i] = _mm256_shuffle_epi8(levels, _mm256_permute2x128_si256(lo, hi, 0x31));
            }
            for (int h = 0; h < 2; ++h) {
                transpose8x8(v[h]);
                for (int m = 0; m < 8; ++m) _mm256_store_si256(reinterpret_cast<__m256i*>(o.quants[8 * (2 * k + h) + m]), v[h][m]);
            }
        }
        for (int i = 0; i < 8; ++i) {
            const block_iq4_xs& w = row[i][b];
            int scale[8];
            for (int sb = 0; sb < 8; ++sb) scale[sb] = iq4_xs_scale(w, sb) - 32;
            const auto half = [](int v) { return static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(v))); };
            for (int sb = 0; sb < 8; ++sb) o.scales[sb][i] = half(scale[sb]) * 0x10001u;
            for (int p = 0; p < 4; ++p) o.mins[p][i] = half(128 * scale[2 * p]) | (half(128 * scale[2 * p + 1]) << 16);
            o.d[i] = o.dmin[i] = half_to_float(w.d);
        }
    }
}

// Rows r.. r + n - 1 (n <= 8) as q6_k_rows; rows past n repeat row r.
TACHYON_AVX2 void lay_out_q6_k_rows8(const gemm_args& a, int64_t r, int n, int64_t nb, q6_k_rows* out) {
    if (a.panels != nullptr) return lay_out_q6_k_rows8_packed(a, r, nb, out);
    const block_q6_k* row[8];
    for (int i = 0; i < 8; ++i) row[i] = reinterpret_cast<const block_q6_k*>(a.w + (r + (i < n ? i : 0)) * a.w_row_bytes);
    const int64_t next = 8 * static_cast<int64_t>(a.w_row_bytes);
    const __m256i low4 = _mm256_set1_epi8(0x0f), three = _mm256_set1_epi8(3);
    const auto load = [](const uint8_t* p) TACHYON_AVX2 { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
    const auto high2 = [&](__m256i qh, int shift) TACHYON_AVX2 {
        return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), three), 4);
    };
    for (int64_t b = 0; b < nb; ++b) {
        q6_k_rows& o = out[b];
        for (int i = 0; i < 8; ++i) prefetch_block_l2(&row[i][b], next);
        // elements 128h + 32k + l: low 4 bits in nibble k / 2 of ql[64h + 32 (k % 2) + l],
        // high 2 in bits 2k, 2k + 1 of qh[32h + l]
        for (int h = 0; h < 2; ++h) {
            for (int k = 0; k < 4; ++k) {
                __m256i v[8];
                for (int i = 0; i < 8; ++i) {
                    const block_q6_k& w = row[i][b];
                    const __m256i ql = load(w.ql + 64 * h + 32 * (k % 2));
                    const __m256i nib = _mm256_and_si256(k < 2 ? ql : _mm256_srli_epi16(ql, 4), low4);
                    v[i] = _mm256_or_si256(nib, high2(load(w.qh + 32 * h), 2 * k));
                }
                transpose8x8(v);
                for (int m = 0; m < 8; ++m) _mm256_store_si256(reinterpret_cast<__m256i*>(o.quants[8 * (4 * h + k) + m]), v[m]);
            }
        }
        for (int i = 0; i < 8; ++i) {
            const auto half = [](int8_t v) { return static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(v))); };
            const int8_t* sc = row[i][b].scales;
            for (int sb = 0; sb < 16; ++sb) o.scales[sb][i] = half(sc[sb]) * 0x10001u;
            for (int p = 0; p < 8; ++p) o.pairs[p][i] = half(sc[2 * p]) | (half(sc[2 * p + 1]) << 16);
            o.d[i] = half_to_float(row[i][b].d);
        }
    }
}

const type_kernels* avx2_kquant_kernels(tensor_type weight, quantize_fn quantize_q8_k) {
    using q4_k_tile = k_tile<q45_k_sums<false>>;
    using q5_k_tile = k_tile<q45_k_sums<true>>;
    using q6_k_tile = k_tile<q6_k_sums>;
    using q3_k_tile = k_tile<q3_k_sums>;
    using q2_k_tile = k_tile<q2_k_sums>;
    using iq4_xs_tile = k_tile<iq4_xs_sums>;
    static const type_kernels q4_k{gemm_k_by_tokens<q4_k_tile, q4_k_layout>, dot<q4_k_tile>, quantize_q8_k};
    static const type_kernels q5_k{gemm_k_by_tokens<q5_k_tile, q5_k_layout>, dot<q5_k_tile>, quantize_q8_k};
    static const type_kernels q6_k{gemm_k_by_tokens<q6_k_tile, q6_k_layout>, dot<q6_k_tile>, quantize_q8_k};
    static const type_kernels q3_k{gemm<q3_k_tile>, dot<q3_k_tile>, quantize_q8_k};
    static const type_kernels q2_k{gemm<q2_k_tile>, dot<q2_k_tile>, quantize_q8_k};
    static const type_kernels iq4_xs{gemm<iq4_xs_tile>, dot<iq4_xs_tile>, quantize_q8_k};
    switch (weight) {
        case tensor_type::q4_k: return &q4_k;
        case tensor_type::q5_k: return &q5_k;
        case tensor_type::q6_k: return &q6_k;
        case tensor_type::q3_k: return &q3_k;
        case tensor_type::q2_k: return &q2_k;
        case tensor_type::iq4_xs: return &iq4_xs;
        default: return nullptr;
    }
}

}  // namespace tachyon::detail
