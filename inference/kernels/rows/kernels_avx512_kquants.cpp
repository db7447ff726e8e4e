// AVX-512 kernels of the k-quants (q2_K, q3_K, q4_K, q5_K, q6_K) against
// q8_K activations, where AVX-512 VNNI's dpwssd scales int16 pairs and adds
// them in one step. Every function carries its own target attribute so the
// file builds for plain x86-64; kernels.cpp only calls in here after
// checking the CPU (default_isa). The AMX level runs these too.

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/rows/kernels_k_rows.h"
#include "inference/gguf/quant.h"

#define TACHYON_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c")))
#define TACHYON_TILE_TARGET TACHYON_AVX512
#define TACHYON_TILE_VNNI 2
#define TACHYON_TILE_MASKS 1
#include "inference/kernels/rows/kernels_q8_tile.h"

namespace tachyon::detail {
namespace {

// ---- k-quant prompts: two tokens per 512-bit register -----------------------
//
// The AVX2 k-quant tile (kernels_avx2_kquants.cpp) spends, per 32 quants
// and token, a maddubs, a madd by the sub-block's scale and an add. Here a
// zmm holds the same 32 quants twice, against two tokens' activations (one
// per 256-bit half), and dpwssd scales and adds in one step: per 32 quants
// and two tokens a maddubs and a dpwssd, where AVX2 takes six operations.
// The tokens' activations are laid out in pairs once per block, into a
// buffer in L1 that the tile's four rows read back with single loads:
// 32-byte group k of the block as bytes 64k.. (token 2p) and 64k + 32..
// (token 2p + 1). A type says how one weight block meets the pairs:
//   K::sums<NP>(wb, xp, x, b, sumi, summ)
// leaves in sumi[p] its integer dot with the pair's tokens (token 2p in the
// lower half, offsets undone) and, for a type with mins (K::has_mins), in
// summ[p] the mins' sums against the activations.
template <int NP>
using k_pairs = const int8_t (&)[NP][2 * qk_k];
template <int NP>
using k_pair_tokens = const block_q8_k* const (&)[2 * NP];

// Two 256-bit halves as one zmm, a the lower.
TACHYON_AVX512 inline __m512i halves_of(__m256i a, __m256i b) { return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1); }

template <class K>
struct k_tile512 {
    using block = typename K::block;
    static constexpr int rn = 8;

    template <int RM, int RN>
    TACHYON_AVX512 static void run(const gemm_args& a, int64_t r, int64_t t) {
        constexpr int np = (RN + 1) / 2;  // token pairs; an odd last token pairs with itself
        const block* w[RM];
        const block_q8_k* x[2 * np];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const block*>(a.w + (r + i) * a.w_row_bytes);
        for (int j = 0; j < 2 * np; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + std::min(j, RN - 1)) * a.x_row_bytes);
        __m512 acc[RM][np];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int p = 0; p < np; ++p) acc[i][p] = _mm512_setzero_ps();
        const int64_t nb = a.n_cols / qk_k;
        const bool stream = t == 0 && a.n_tokens <= max_stream_tokens;  // batched decode: fetch the rows ahead
        const int64_t ahead = prefetch_distance(a, kq_prefetch_bytes);
        alignas(64) int8_t xp[np][2 * qk_k];
        for (int64_t b = 0; b < nb; ++b) {
            __m512 dx[np];
#pragma GCC unroll 4
            for (int p = 0; p < np; ++p) {
                const block_q8_k& x0 = x[2 * p][b];
                const block_q8_k& x1 = x[2 * p + 1][b];
                for (int k = 0; k < qk_k / 32; ++k) {
                    _mm256_store_si256(reinterpret_cast<__m256i*>(xp[p] + 64 * k), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0.qs + 32 * k)));
                    _mm256_store_si256(reinterpret_cast<__m256i*>(xp[p] + 64 * k + 32), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1.qs + 32 * k)));
                }
                dx[p] = _mm512_insertf32x8(_mm512_set1_ps(x0.d), _mm256_set1_ps(x1.d), 1);
            }
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                const block& wb = w[i][b];
                if (stream) prefetch_block_l2(&wb, ahead);
                __m512i sumi[np];
                __m512 summ[np];
                K::template sums<np>(wb, xp, x, b, sumi, summ);
                const __m512 d = _mm512_set1_ps(_cvtsh_ss(wb.d));
#pragma GCC unroll 4
                for (int p = 0; p < np; ++p) acc[i][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[p]), _mm512_mul_ps(d, dx[p]), acc[i][p]);
                if constexpr (K::has_mins) {
                    const __m512 dmin = _mm512_set1_ps(_cvtsh_ss(wb.dmin));
#pragma GCC unroll 4
                    for (int p = 0; p < np; ++p) acc[i][p] = _mm512_fnmadd_ps(summ[p], _mm512_mul_ps(dmin, dx[p]), acc[i][p]);
                }
            }
        }
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 4
            for (int p = 0; p < np; ++p) {
                a.y[(t + 2 * p) * a.ldy + r + i] = hsum(_mm512_castps512_ps256(acc[i][p]));
                if (2 * p + 1 < RN) a.y[(t + 2 * p + 1) * a.ldy + r + i] = hsum(_mm512_extractf32x8_ps(acc[i][p], 1));
            }
    }
};

// q4_K and q5_K: eight sub-blocks of 32 with a 6-bit scale and min each.
template <bool five_bits>
struct q45_k_sums512 {
    using block = std::conditional_t<five_bits, block_q5_k, block_q4_k>;
    static constexpr bool has_mins = true;

    template <int NP>
    TACHYON_AVX512 static void sums(const block& wb, k_pairs<NP> xp, k_pair_tokens<NP> x, int64_t b, __m512i (&sumi)[NP], __m512 (&summ)[NP]) {
        alignas(16) uint8_t sm[16];
        q4_k_unpack_scales(wb.scales, sm);
        const __m256i mins = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8))));
        __m256i qh = _mm256_setzero_si256();
        if constexpr (five_bits) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh));
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) sumi[p] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            __m256i lo, hi;
            q45_k_quants<five_bits>(wb.qs, qh, c, lo, hi);
            const __m512i lo2 = _mm512_broadcast_i64x4(lo), hi2 = _mm512_broadcast_i64x4(hi);
            const __m512i s_lo = _mm512_set1_epi16(sm[2 * c]), s_hi = _mm512_set1_epi16(sm[2 * c + 1]);
#pragma GCC unroll 4
            for (int p = 0; p < NP; ++p) {
                // values up to 31: maddubs pairs stay within 2*31*128
                sumi[p] = _mm512_dpwssd_epi32(sumi[p], _mm512_maddubs_epi16(lo2, _mm512_load_si512(xp[p] + 128 * c)), s_lo);
                sumi[p] = _mm512_dpwssd_epi32(sumi[p], _mm512_maddubs_epi16(hi2, _mm512_load_si512(xp[p] + 128 * c + 64)), s_hi);
            }
        }
        const auto sums32 = [](const block_q8_k& xb) TACHYON_AVX512 {
            return _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums)), _mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums + 8)));
        };
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) {
            // 4 int32 per token (lanes 0-3 and 4-7), moved to lanes 0-3 and 8-11
            const __m256i m = _mm256_madd_epi16(mins, _mm256_set_m128i(sums32(x[2 * p + 1][b]), sums32(x[2 * p][b])));
            summ[p] = _mm512_maskz_permutexvar_ps(0x0f0f, _mm512_set_epi32(0, 0, 0, 0, 7, 6, 5, 4, 0, 0, 0, 0, 3, 2, 1, 0),
                                                  _mm512_cvtepi32_ps(_mm512_zextsi256_si512(m)));
        }
    }
};

// q6_K: sixteen sub-blocks of 16 with a signed 8-bit scale; quants stored
// as q + 32 (unsigned), and 32 * sum_s scale_s * sum(x in s) comes off first.
struct q6_k_sums512 {
    using block = block_q6_k;
    static constexpr bool has_mins = false;

    template <int NP>
    TACHYON_AVX512 static void sums(const block& wb, k_pairs<NP> xp, k_pair_tokens<NP> x, int64_t b, __m512i (&sumi)[NP], __m512 (&)[NP]) {
        const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) {
            const auto offset = [&](const block_q8_k& xb) TACHYON_AVX512 {
                return _mm256_slli_epi32(_mm256_madd_epi16(scales, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums))), 5);
            };
            sumi[p] = _mm512_sub_epi32(_mm512_setzero_si512(), halves_of(offset(x[2 * p][b]), offset(x[2 * p + 1][b])));
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i factors = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(wb.scales + 8 * h))));
            __m256i q[4];
            q6_k_quants(wb, h, q);
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                // sub-blocks of 16: one scale per 128-bit lane, both tokens alike
                const __m512i sv = _mm512_broadcast_i64x4(pair_factor(factors, g));
                const __m512i qv = _mm512_broadcast_i64x4(q[g]);
#pragma GCC unroll 4
                for (int p = 0; p < NP; ++p)
                    sumi[p] = _mm512_dpwssd_epi32(sumi[p], _mm512_maddubs_epi16(qv, _mm512_load_si512(xp[p] + 64 * (4 * h + g))), sv);
            }
        }
    }
};

// q3_K: sixteen sub-blocks of 16 with a 6-bit scale less 32; values u - 4
// with u = q2 + 4 * hbit (0..7, unsigned), 4 * sum_s scale_s * sum(x in s) off first.
struct q3_k_sums512 {
    using block = block_q3_k;
    static constexpr bool has_mins = false;

    template <int NP>
    TACHYON_AVX512 static void sums(const block& wb, k_pairs<NP> xp, k_pair_tokens<NP> x, int64_t b, __m512i (&sumi)[NP], __m512 (&)[NP]) {
        const __m256i low2 = _mm256_set1_epi8(0x03);
        const __m256i scales = _mm256_sub_epi16(_mm256_cvtepu8_epi16(q3_k_scales_vector(wb.scales)), _mm256_set1_epi16(32));
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) {
            const auto offset = [&](const block_q8_k& xb) TACHYON_AVX512 {
                return _mm256_slli_epi32(_mm256_madd_epi16(scales, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums))), 2);
            };
            sumi[p] = _mm512_sub_epi32(_mm512_setzero_si512(), halves_of(offset(x[2 * p][b]), offset(x[2 * p + 1][b])));
        }
        const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.hmask));
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * h));
            const __m256i factors = _mm256_broadcastsi128_si256(h == 0 ? _mm256_castsi256_si128(scales) : _mm256_extracti128_si256(scales, 1));
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 2 * g), low2), bit_as_4(hm, 4 * h + g));
                const __m512i sv = _mm512_broadcast_i64x4(pair_factor(factors, g));
                const __m512i uv = _mm512_broadcast_i64x4(u);
#pragma GCC unroll 4
                for (int p = 0; p < NP; ++p)
                    sumi[p] = _mm512_dpwssd_epi32(sumi[p], _mm512_maddubs_epi16(uv, _mm512_load_si512(xp[p] + 64 * (4 * h + g))), sv);
            }
        }
    }
};

// q2_K: sixteen sub-blocks of 16, scale in the low nibble and min in the
// high one of a byte each; 2-bit values, unsigned.
struct q2_k_sums512 {
    using block = block_q2_k;
    static constexpr bool has_mins = true;

    template <int NP>
    TACHYON_AVX512 static void sums(const block& wb, k_pairs<NP> xp, k_pair_tokens<NP> x, int64_t b, __m512i (&sumi)[NP], __m512 (&summ)[NP]) {
        const __m256i low2 = _mm256_set1_epi8(0x03);
        const __m128i low4 = _mm_set1_epi8(0x0f);
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
        const __m256i sc = _mm256_cvtepu8_epi16(_mm_and_si128(packed, low4));
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) {
            sumi[p] = _mm512_setzero_si512();
            const auto m = [&](const block_q8_k& xb) TACHYON_AVX512 {
                return _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums)));
            };
            summ[p] = _mm512_cvtepi32_ps(halves_of(m(x[2 * p][b]), m(x[2 * p + 1][b])));
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * h));
            const __m256i factors = _mm256_broadcastsi128_si256(h == 0 ? _mm256_castsi256_si128(sc) : _mm256_extracti128_si256(sc, 1));
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                const __m512i qv = _mm512_broadcast_i64x4(_mm256_and_si256(_mm256_srli_epi16(raw, 2 * g), low2));
                const __m512i sv = _mm512_broadcast_i64x4(pair_factor(factors, g));
#pragma GCC unroll 4
                for (int p = 0; p < NP; ++p)
                    sumi[p] = _mm512_dpwssd_epi32(sumi[p], _mm512_maddubs_epi16(qv, _mm512_load_si512(xp[p] + 64 * (4 * h + g))), sv);
            }
        }
    }
};

// ---- k-quant decode: two rows per 512-bit register -------------------------
//
// One token against q4_K / q5_K / q6_K rows: rows i and i + 1 share a zmm
// (one per 256-bit half) against the token's activations in both halves,
// so a maddubs and a dpwssd serve 32 quants of two rows, where the AVX2
// tile takes a maddubs, a madd and an add per row. A type says how a pair
// of weight blocks meets the token: K::rows(w0, w1, xb, sumi, summ), sums
// of row 0 in the lower half.
template <class K>
struct k_rows512 {
    using block = typename K::block;
    static constexpr int rn = 1;

    template <int RM, int RN>
    TACHYON_AVX512 static void run(const gemm_args& a, int64_t r, int64_t t) {
        static_assert(RN == 1);
        constexpr int np = (RM + 1) / 2;  // row pairs; an odd last row pairs with itself
        const block* w[2 * np];
        for (int i = 0; i < 2 * np; ++i) w[i] = reinterpret_cast<const block*>(a.w + (r + std::min(i, RM - 1)) * a.w_row_bytes);
        const auto* x = reinterpret_cast<const block_q8_k*>(a.x + t * a.x_row_bytes);
        __m512 acc[np];
#pragma GCC unroll 4
        for (int p = 0; p < np; ++p) acc[p] = _mm512_setzero_ps();
        const int64_t nb = a.n_cols / qk_k;
        const int64_t ahead = prefetch_distance(a, kq_prefetch_bytes);
        for (int64_t b = 0; b < nb; ++b) {
            const __m512 dx = _mm512_set1_ps(x[b].d);
#pragma GCC unroll 4
            for (int p = 0; p < np; ++p) {
                const block& w0 = w[2 * p][b];
                const block& w1 = w[2 * p + 1][b];
                prefetch_block_l2(&w0, ahead);
                if (2 * p + 1 < RM) prefetch_block_l2(&w1, ahead);
                __m512i sumi;
                __m512 summ;
                K::rows(w0, w1, x[b], sumi, summ);
                if constexpr (K::has_mins) {
                    __m512 d, dmin;
                    K::scales(w0, w1, d, dmin);
                    acc[p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(d, dx), acc[p]);
                    acc[p] = _mm512_fnmadd_ps(summ, _mm512_mul_ps(dmin, dx), acc[p]);
                } else {
                    const __m512 d = _mm512_insertf32x8(_mm512_set1_ps(_cvtsh_ss(w0.d)), _mm256_set1_ps(_cvtsh_ss(w1.d)), 1);
                    acc[p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(d, dx), acc[p]);
                }
            }
        }
#pragma GCC unroll 4
        for (int p = 0; p < np; ++p) {
            a.y[t * a.ldy + r + 2 * p] = hsum(_mm512_castps512_ps256(acc[p]));
            if (2 * p + 1 < RM) a.y[t * a.ldy + r + 2 * p + 1] = hsum(_mm512_extractf32x8_ps(acc[p], 1));
        }
    }
};

// Factor k (0..7) of the eight int16 factors in every 128-bit lane, in
// every int16 lane (lane_factor on 512 bits).
TACHYON_AVX512 inline __m512i lane_factor512(__m512i factors, int k) {
    const char lo = static_cast<char>(2 * k), hi = static_cast<char>(2 * k + 1);
    return _mm512_shuffle_epi8(factors, _mm512_broadcast_i32x4(_mm_setr_epi8(lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi)));
}

// Bytes 0..7 of two rows' factor bytes as int16, row 0's in both 128-bit
// lanes of the lower half, row 1's in the upper.
TACHYON_AVX512 inline __m512i row_pair_factors(__m128i row0, __m128i row1) {
    return halves_of(_mm256_broadcastsi128_si256(row0), _mm256_broadcastsi128_si256(row1));
}

template <bool five_bits>
struct q45_k_rows512 {
    using block = std::conditional_t<five_bits, block_q5_k, block_q4_k>;
    static constexpr bool has_mins = true;

    TACHYON_AVX512 static void rows(const block& w0, const block& w1, const block_q8_k& xb, __m512i& sumi, __m512& summ) {
        const __m512i low4 = _mm512_set1_epi8(0x0f);
        // [row 0 scales | row 0 mins | row 1 scales | row 1 mins] as int16
        const __m512i sm = _mm512_cvtepu8_epi16(q4_k_scales_mins(w0.scales, w1.scales));
        const __m512i factors = _mm512_shuffle_i64x2(sm, sm, _MM_SHUFFLE(2, 2, 0, 0));
        __m512i qh;
        if constexpr (five_bits) qh = halves_of(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0.qh)), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1.qh)));
        sumi = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            const __m512i raw = halves_of(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0.qs + 32 * c)),
                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1.qs + 32 * c)));
            __m512i lo = _mm512_and_si512(raw, low4);
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
            if constexpr (five_bits) {
                const __m512i one = _mm512_set1_epi8(1);
                lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 2 * c), one), 4));
                hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 2 * c + 1), one), 4));
            }
            const __m512i x_lo = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs + 64 * c)));
            const __m512i x_hi = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs + 64 * c + 32)));
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(lo, x_lo), lane_factor512(factors, 2 * c));
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(hi, x_hi), lane_factor512(factors, 2 * c + 1));
        }
        // the mins against the sub-block sums of 32: 4 int32 per row, at lanes 4-7 and 12-15
        const __m128i xsum = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums)),
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums + 8)));
        summ = _mm512_cvtepi32_ps(_mm512_maskz_madd_epi16(0xf0f0, sm, _mm512_broadcast_i32x4(xsum)));
    }

    // d and dmin of two rows: d0 in the lower 8 lanes, d1 in the upper
    TACHYON_AVX512 static void scales(const block& w0, const block& w1, __m512& d, __m512& dmin) {
        static_assert(offsetof(block, dmin) == offsetof(block, d) + 2);
        uint32_t h0, h1;
        std::memcpy(&h0, &w0.d, 4);
        std::memcpy(&h1, &w1.d, 4);
        // [d0, dmin0, d1, dmin1]
        const __m512 f = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(h0 | (uint64_t{h1} << 32)))));
        d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2), f);
        dmin = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3), f);
    }
};

struct q6_k_rows512 {
    using block = block_q6_k;
    static constexpr bool has_mins = false;
    TACHYON_AVX512 static void rows(const block& w0, const block& w1, const block_q8_k& xb, __m512i& sumi, __m512&) {
        const __m512i low4 = _mm512_set1_epi8(0x0f);
        const __m512i low2 = _mm512_set1_epi8(0x03);
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums));
        const auto offset = [&](const block& wb) TACHYON_AVX512 {
            return _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales))), bs), 5);
        };
        sumi = _mm512_sub_epi32(_mm512_setzero_si512(), halves_of(offset(w0), offset(w1)));
        const auto both = [&](const uint8_t* p0, const uint8_t* p1) TACHYON_AVX512 {
            return halves_of(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0)), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1)));
        };
        const auto widen = [](const int8_t* p) TACHYON_AVX512 { return _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); };
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m512i ql0 = both(w0.ql + 64 * h, w1.ql + 64 * h);
            const __m512i ql1 = both(w0.ql + 64 * h + 32, w1.ql + 64 * h + 32);
            const __m512i qh = both(w0.qh + 32 * h, w1.qh + 32 * h);
            const __m512i factors = row_pair_factors(widen(w0.scales + 8 * h), widen(w1.scales + 8 * h));
            __m512i q[4];
            q[0] = _mm512_or_si512(_mm512_and_si512(ql0, low4), _mm512_slli_epi16(_mm512_and_si512(qh, low2), 4));
            q[1] = _mm512_or_si512(_mm512_and_si512(ql1, low4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 2), low2), 4));
            q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql0, 4), low4),
                                   _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 4), low2), 4));
            q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql1, 4), low4),
                                   _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, 6), low2), 4));
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                // sub-blocks 2g (lower 128-bit lane of each half) and 2g + 1 (upper)
                const char lo = static_cast<char>(4 * g), hi = static_cast<char>(4 * g + 2);
                const __m512i pick = _mm512_broadcast_i64x4(_mm256_setr_epi8(lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1,
                                                                             hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1));
                const __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs + 128 * h + 32 * g)));
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[g], xv), _mm512_shuffle_epi8(factors, pick));
            }
        }
    }
};

// iq4_xs: sub-blocks of 32 with a signed 6-bit scale (less 32), the nibbles
// looked up as levels + 128 (1..241: maddubs pairs would saturate, so
// dpbusd sums them into int32) and 128 * scale * (sub-block sum of x) taken
// off first. The 16 bytes of a sub-block hold its elements 0..15 (low
// nibbles) and 16..31 (high), so one 32-byte chunk of two rows is a 128-bit
// lane per (row, sub-block), and one scale multiplies each lane. Measured
// on Zen 4 (one thread, `tachyon bench matmul --type iq4_xs --tokens 1
// --mib 2`, weights in L2, two rounds) against the AVX2 tile it replaced:
// 20.5 against 13.8 GB/s; from DRAM (`--mib 256`) 16.7-17.0 against
// 12.3-12.5.
struct iq4_xs_rows512 {
    using block = block_iq4_xs;
    static constexpr bool has_mins = false;

    // The block's 8 scales less 32 as int32.
    TACHYON_AVX512 static __m256i scales8(const block& w) {
        uint32_t l;
        std::memcpy(&l, w.scales_l, 4);
        const __m128i low = _mm_unpacklo_epi8(_mm_cvtsi32_si128(static_cast<int>(l & 0x0f0f0f0f)),
                                              _mm_cvtsi32_si128(static_cast<int>((l >> 4) & 0x0f0f0f0f)));
        const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w.scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                              _mm256_set1_epi32(3));
        return _mm256_sub_epi32(_mm256_or_si256(_mm256_cvtepu8_epi32(low), _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
    }

    TACHYON_AVX512 static void rows(const block& w0, const block& w1, const block_q8_k& xb, __m512i& sumi, __m512&) {
        const __m512i low4 = _mm512_set1_epi8(0x0f);
        const __m512i levels =
            _mm512_broadcast_i32x4(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)), _mm_set1_epi8(static_cast<char>(0x80))));
        const __m512i sc = halves_of(scales8(w0), scales8(w1));  // [row 0 scales | row 1 scales]
        const __m256i xsum = _mm256_cvtepi16_epi32(_mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums)),
                                                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums + 8))));
        sumi = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(_mm512_mullo_epi32(sc, halves_of(xsum, xsum)), 7));
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            const __m512i raw = halves_of(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0.qs + 32 * c)),
                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1.qs + 32 * c)));
            const __m512i lo = _mm512_shuffle_epi8(levels, _mm512_and_si512(raw, low4));
            const __m512i hi = _mm512_shuffle_epi8(levels, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
            // x of sub-blocks 2c and 2c + 1: elements 0..15 of each against lo, 16..31 against hi
            const __m512i xv = _mm512_loadu_si512(xb.qs + 64 * c);
            const __m512i x_lo = _mm512_shuffle_i64x2(xv, xv, _MM_SHUFFLE(2, 0, 2, 0));
            const __m512i x_hi = _mm512_shuffle_i64x2(xv, xv, _MM_SHUFFLE(3, 1, 3, 1));
            const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, x_lo), hi, x_hi);
            const int s0 = 2 * c, s1 = 2 * c + 1;
            const __m512i f = _mm512_permutexvar_epi32(_mm512_setr_epi32(s0, s0, s0, s0, s1, s1, s1, s1, 8 + s0, 8 + s0, 8 + s0, 8 + s0, 8 + s1, 8 + s1, 8 + s1, 8 + s1), sc);
            sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(dot, f));
        }
    }
};

// ---- q4_K / q6_K batches: 16 rows in the vector lanes ------------------------
//
// The rows-in-lanes layouts of the AVX2 tiles (kernels_k_rows.h), two
// groups of 8 merged into one of 16: a zmm holds one dword of 16 rows,
// and one token's 4 activation bytes, broadcast, multiply into all 16
// sums. q4_K: a sub-block of 32 costs each token 8 dpbusd (quants 0..15
// against signed bytes, int32 sums) and one mullo by the rows' scales;
// q6_K: a sub-block of 16, 4 dpbusd and one mullo; the mins (q4_K) and the
// +32 offset (q6_K) come off once per block through the bsums (dpwssd).
// k_tile512 unpacks each block once per 8 tokens and pays per (row, token
// pair) a maddubs and a dpwssd per 32 quants; here a block is laid out
// once per panel of tokens. Measured on Zen 5 (one thread, `tachyon bench
// matmul --type T --tokens 4,8,12,16,64,256 --rows 8960 --cols 1536 -t 1
// --mib 64 --no-bandwidth`, us against k_tile512): q4_K 4 tokens 1149 /
// 633, 8 1362 / 1086, 12 1684 / 1722, 16 2275 / 2783, 64 4132 / 18791, 256
// 16761 / 42646 (the AVX2 8-row tiles 36323); q6_K 12 2440 / 2135, 16 3092
// / 3001, 64 5080 / 30981, 256 18174 / 112897. Below its min_tokens, where
// the layout costs more than it saves, a type keeps k_tile512.
struct alignas(64) q4_k_rows16 {
    uint32_t quants[64][16];  // [8s + k][row], as q4_k_rows
    int32_t scales[8][16];    // [s][row]
    uint32_t mins[4][16];     // [p][row]: the mins of sub-blocks 2p (low int16) and 2p + 1 (high)
    float d[16], dmin[16];
};

struct alignas(64) q6_k_rows16 {
    uint32_t quants[64][16];  // [dword][row], as q6_k_rows
    int32_t scales[16][16];   // [s][row], signed
    uint32_t pairs[8][16];    // [p][row]: the scales of sub-blocks 2p (low int16) and 2p + 1 (high)
    float d[16];
};

// Eight dwords of each half into one row of 16.
inline void merge8(const uint32_t (&lo)[8], const uint32_t (&hi)[8], uint32_t (&out)[16]) {
    std::memcpy(out, lo, sizeof lo);
    std::memcpy(out + 8, hi, sizeof hi);
}
inline void merge8_scales(const uint32_t (&lo)[8], const uint32_t (&hi)[8], int32_t (&out)[16]) {
    // both int16 halves hold the scale: the low one, sign-extended
    for (int i = 0; i < 8; ++i) {
        out[i] = static_cast<int16_t>(lo[i] & 0xffff);
        out[8 + i] = static_cast<int16_t>(hi[i] & 0xffff);
    }
}

// q4_K, q5_K and iq4_xs: sub-blocks of 32 with a scale and a min each. The
// tiles are one set for the three (each an instance of a large unrolled
// function, out of line so that the types share them).
struct q4_k_tokens16 {
    using rows8 = q4_k_rows;
    using rows = q4_k_rows16;
    static void merge(const rows8& lo, const rows8& hi, rows& o) {
        for (int m = 0; m < 64; ++m) merge8(lo.quants[m], hi.quants[m], o.quants[m]);
        for (int s = 0; s < 8; ++s) merge8_scales(lo.scales[s], hi.scales[s], o.scales[s]);
        for (int p = 0; p < 4; ++p) merge8(lo.mins[p], hi.mins[p], o.mins[p]);
        std::memcpy(o.d, lo.d, sizeof lo.d), std::memcpy(o.d + 8, hi.d, sizeof hi.d);
        std::memcpy(o.dmin, lo.dmin, sizeof lo.dmin), std::memcpy(o.dmin + 8, hi.dmin, sizeof hi.dmin);
    }

    template <int NT>
    __attribute__((noinline)) TACHYON_AVX512 static void tokens(const gemm_args& a, const rows* w, int64_t nb, int64_t r, int64_t t, __mmask16 keep) {
        const block_q8_k* x[NT];
        for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
        __m512 acc[NT];
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) acc[j] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const rows& blk = w[b];
            __m512i sumi[NT];
#pragma GCC unroll 8
            for (int sb = 0; sb < 8; ++sb) {
                __m512i s32[NT];
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) s32[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int k = 0; k < 8; ++k) {
                    const __m512i q = _mm512_load_si512(blk.quants[8 * sb + k]);
#pragma GCC unroll 16
                    for (int j = 0; j < NT; ++j) {
                        int32_t xv;
                        std::memcpy(&xv, x[j][b].qs + 32 * sb + 4 * k, 4);
                        s32[j] = _mm512_dpbusd_epi32(s32[j], q, _mm512_set1_epi32(xv));
                    }
                }
                const __m512i sc = _mm512_load_si512(blk.scales[sb]);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const __m512i v = _mm512_mullo_epi32(s32[j], sc);
                    sumi[j] = sb == 0 ? v : _mm512_add_epi32(sumi[j], v);
                }
            }
            const __m512 dw = _mm512_load_ps(blk.d), mw = _mm512_load_ps(blk.dmin);
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) {
                // the token's sums of 32 (pairs of its bsums), two per dword
                alignas(16) int32_t xs[4];
                const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums));
                const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums + 8));
                _mm_store_si128(reinterpret_cast<__m128i*>(xs), _mm_hadd_epi16(lo, hi));
                __m512i summ = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int p = 0; p < 4; ++p) summ = _mm512_dpwssd_epi32(summ, _mm512_load_si512(blk.mins[p]), _mm512_set1_epi32(xs[p]));
                const __m512 dx = _mm512_set1_ps(x[j][b].d);
                acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[j]), _mm512_mul_ps(dw, dx), acc[j]);
                acc[j] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(summ), _mm512_mul_ps(mw, dx), acc[j]);
            }
        }
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
    }
};

using q4_k_lay_out8 = void (*)(const gemm_args&, int64_t, int, int64_t, q4_k_rows*);
template <q4_k_lay_out8 LayOut8, int64_t MinTokens>
struct q4_k_like_layout16 : q4_k_tokens16 {
    static constexpr int64_t min_tokens = MinTokens;
    static void lay_out8(const gemm_args& a, int64_t r, int n, int64_t nb, rows8* out) { LayOut8(a, r, n, nb, out); }
};

struct q6_k_layout16 {
    using rows8 = q6_k_rows;
    using rows = q6_k_rows16;
    static constexpr int64_t min_tokens = 16;
    static void lay_out8(const gemm_args& a, int64_t r, int n, int64_t nb, rows8* out) { lay_out_q6_k_rows8(a, r, n, nb, out); }
    static void merge(const rows8& lo, const rows8& hi, rows& o) {
        for (int m = 0; m < 64; ++m) merge8(lo.quants[m], hi.quants[m], o.quants[m]);
        for (int s = 0; s < 16; ++s) merge8_scales(lo.scales[s], hi.scales[s], o.scales[s]);
        for (int p = 0; p < 8; ++p) merge8(lo.pairs[p], hi.pairs[p], o.pairs[p]);
        std::memcpy(o.d, lo.d, sizeof lo.d), std::memcpy(o.d + 8, hi.d, sizeof hi.d);
    }

    template <int NT>
    TACHYON_AVX512 static void tokens(const gemm_args& a, const rows* w, int64_t nb, int64_t r, int64_t t, __mmask16 keep) {
        const block_q8_k* x[NT];
        for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
        __m512 acc[NT];
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) acc[j] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const rows& blk = w[b];
            __m512i sumi[NT];
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) {
                // 32 * sum_s scale_s * (sum of x in s): the stored +32, off first
                __m512i off = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int p = 0; p < 8; ++p) {
                    int32_t pair;
                    std::memcpy(&pair, x[j][b].bsums + 2 * p, 4);
                    off = _mm512_dpwssd_epi32(off, _mm512_load_si512(blk.pairs[p]), _mm512_set1_epi32(pair));
                }
                sumi[j] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(off, 5));
            }
#pragma GCC unroll 4
            for (int sb = 0; sb < 16; ++sb) {
                __m512i s32[NT];
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) s32[j] = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) {
                    const __m512i q = _mm512_load_si512(blk.quants[4 * sb + k]);
#pragma GCC unroll 16
                    for (int j = 0; j < NT; ++j) {
                        int32_t xv;
                        std::memcpy(&xv, x[j][b].qs + 16 * sb + 4 * k, 4);
                        s32[j] = _mm512_dpbusd_epi32(s32[j], q, _mm512_set1_epi32(xv));
                    }
                }
                const __m512i sc = _mm512_load_si512(blk.scales[sb]);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) sumi[j] = _mm512_add_epi32(sumi[j], _mm512_mullo_epi32(s32[j], sc));
            }
            const __m512 dw = _mm512_load_ps(blk.d);
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j)
                acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[j]), _mm512_mul_ps(dw, _mm512_set1_ps(x[j][b].d)), acc[j]);
        }
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
    }
};

constexpr int rows16_nt = 8;  // tokens per tile: 8 dpbusd chains in flight, 8 int32 and 8 float sums

template <class Q, int NT = rows16_nt - 1>
TACHYON_AVX512 void rows16_tail(const gemm_args& a, const typename Q::rows* w, int64_t nb, int64_t r, int64_t t, __mmask16 keep, int64_t n) {
    if constexpr (NT >= 1) {
        if (n == NT) return Q::template tokens<NT>(a, w, nb, r, t, keep);
        rows16_tail<Q, NT - 1>(a, w, nb, r, t, keep, n);
    }
}

template <class Q>
void gemm_k_rows16(const gemm_args& a, int64_t r0, int64_t r1) {
    const int64_t nb = a.n_cols / qk_k;
    thread_local std::vector<typename Q::rows8> half8[2];
    thread_local std::vector<typename Q::rows> buffer;
    for (auto& h : half8)
        if (h.size() < static_cast<size_t>(nb)) h.resize(static_cast<size_t>(nb));
    if (buffer.size() < static_cast<size_t>(nb)) buffer.resize(static_cast<size_t>(nb));
    const int64_t panel = std::max<int64_t>(rows16_nt, prompt_panel_bytes / static_cast<int64_t>(a.x_row_bytes) / rows16_nt * rows16_nt);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += panel) {
        const int64_t t1 = std::min(a.n_tokens, t0 + panel);
        for (int64_t r = r0; r < r1; r += 16) {
            const int n = static_cast<int>(std::min<int64_t>(16, r1 - r));
            // a second half past the range repeats a valid row: its sums are never stored
            Q::lay_out8(a, r, std::min(n, 8), nb, half8[0].data());
            Q::lay_out8(a, n > 8 ? r + 8 : r, n > 8 ? n - 8 : 1, nb, half8[1].data());
            for (int64_t b = 0; b < nb; ++b) Q::merge(half8[0][b], half8[1][b], buffer[b]);
            const auto keep = static_cast<__mmask16>((1u << n) - 1);
            int64_t t = t0;
            for (; t + rows16_nt <= t1; t += rows16_nt) Q::template tokens<rows16_nt>(a, buffer.data(), nb, r, t, keep);
            rows16_tail<Q>(a, buffer.data(), nb, r, t, keep, t1 - t);
        }
    }
}

// Prompts (4 tokens and more) take k_tile512; decode keeps the AVX2 tile,
// whose rows stream from memory at the same rate.
template <class K, tensor_type T>
void gemm_k512(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens < 4) return avx2_kernels(T)->gemm(a, r0, r1);
    gemm<k_tile512<K>>(a, r0, r1);
}

// One token against q4_K / q5_K / q6_K takes k_rows512 (measured on Zen 5,
// `tachyon bench matmul --tokens 1 -t 1`, against the AVX2 tile: 2 MiB of
// weights in cache q4_K 1.3x, q5_K 1.5x, q6_K 1.5x; 256 MiB from DRAM q5_K
// 1.5x, q6_K 1.1x, q4_K the same, about 21 GB/s either way). Batches of
// Q::min_tokens and more take Q's 16-row layout (void: none for the type).
template <class K, class R, class Q, tensor_type T>
void gemm_k512_rows(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens == 1) return gemm<k_rows512<R>>(a, r0, r1);
    if constexpr (!std::is_void_v<Q>) {
        if (a.n_tokens >= Q::min_tokens) return gemm_k_rows16<Q>(a, r0, r1);
    }
    gemm_k512<K, T>(a, r0, r1);
}

// iq4_xs: one token takes k_rows512; 2 to Q::min_tokens - 1 the AVX2 tiles:
// its 16-row layout is q4_K's (lay_out_iq4_xs_rows8). Measured on Zen 4
// (EPYC, one thread, `tachyon bench matmul --type iq4_xs --tokens
// 4,5,6,8,16,64 --rows 8960 --cols 1536 -t 1 --mib 64 --no-bandwidth`, us,
// two rounds, against TACHYON_KERNELS=avx2): 4 tokens 1626-1653 / 1480-1598,
// 5 1729-2121 / 2048-2620, 6 1804-2215 / 2234-2863, 8 1965-1974 /
// 2686-3005, 16 2639-2900 / 5159-5324, 64 6835-7281 / 25050-25960.
template <class R, class Q, tensor_type T>
void gemm_iq4_xs512(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens == 1) return gemm<k_rows512<R>>(a, r0, r1);
    if (a.n_tokens >= Q::min_tokens) return gemm_k_rows16<Q>(a, r0, r1);
    avx2_kernels(T)->gemm(a, r0, r1);
}

}  // namespace

const type_kernels* avx512_kquant_kernels(tensor_type weight) {
    // Decode of q2_K / q3_K and of 2-3 tokens, and the activations, as under AVX2.
    const auto k512 = [](tensor_type t, auto gemm_fn) {
        return type_kernels{gemm_fn, avx2_kernels(t)->dot, avx2_kernels(t)->quantize};
    };
    static const type_kernels q4_k = k512(tensor_type::q4_k, gemm_k512_rows<q45_k_sums512<false>, q45_k_rows512<false>, q4_k_like_layout16<lay_out_q4_k_rows8, 12>, tensor_type::q4_k>);
    static const type_kernels q5_k = k512(tensor_type::q5_k, gemm_k512_rows<q45_k_sums512<true>, q45_k_rows512<true>, q4_k_like_layout16<lay_out_q5_k_rows8, 12>, tensor_type::q5_k>);
    static const type_kernels q6_k = k512(tensor_type::q6_k, gemm_k512_rows<q6_k_sums512, q6_k_rows512, q6_k_layout16, tensor_type::q6_k>);
    static const type_kernels q3_k = k512(tensor_type::q3_k, gemm_k512<q3_k_sums512, tensor_type::q3_k>);
    static const type_kernels q2_k = k512(tensor_type::q2_k, gemm_k512<q2_k_sums512, tensor_type::q2_k>);
    static const type_kernels iq4_xs =
        k512(tensor_type::iq4_xs, gemm_iq4_xs512<iq4_xs_rows512, q4_k_like_layout16<lay_out_iq4_xs_rows8, 5>, tensor_type::iq4_xs>);
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
