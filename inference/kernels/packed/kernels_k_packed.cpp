// q4_K and q6_K weights packed at load (pack_panels) for the AVX2 and
// AVX-512 levels: every group of 16 rows block by block, rows in the vector
// lanes, the bits as they were (q4_K) or regrouped (q6_K). A token's 4
// activation bytes, broadcast, then multiply into 16 rows' sums at once, so
// neither decode nor a prompt pays a horizontal sum, a per-row scale
// unpacking or a layout per call.
//
// The row kernels (k_rows512, k_tile) spend per 64 weights of a row a scale
// shuffle, a maddubs and a dpwssd, and per block and row a 6-bit scale
// unpacking and a horizontal sum. Packed at load, a group's 64 bytes of
// quants for 16 rows cost an and (and a shift for the high nibbles) and,
// per token, one dpbusd (AVX-512) or a maddubs and an int16 add (AVX2); the
// scales come as bytes, one widening per sub-block for all 16 rows.
//
// Every function carries its own target attribute, so the file builds for
// plain x86-64; kernels.cpp calls in here only at the levels the CPU has.

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "inference/gguf/quant.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/packed/kernels_k_packed.h"
#include "inference/kernels/rows/kernels_k_rows.h"

#define TACHYON_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TACHYON_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c")))

namespace tachyon::detail {

namespace {

template <class P>
size_t packed_bytes(int64_t n_rows, int64_t n_cols) {
    return static_cast<size_t>((n_rows + 15) / 16 * (n_cols / qk_k)) * sizeof(P);
}

// q4_K and q5_K: the nibbles (and fifth bits) as they are, scales and mins as bytes.
template <class P, class B>
void pack_q45_k_row(P& p, int i, const B& blk) {
    for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 8; ++k) std::memcpy(&p.qs[c][k][i], blk.qs + 32 * c + 4 * k, 4);
    if constexpr (std::is_same_v<B, block_q5_k>)
        for (int k = 0; k < 8; ++k) std::memcpy(&p.qh[k][i], blk.qh + 4 * k, 4);
    uint8_t sm[16];
    q4_k_unpack_scales(blk.scales, sm);
    for (int s = 0; s < 8; ++s) p.scales[s][i] = sm[s];
    for (int q = 0; q < 4; ++q) {
        p.mins[q][i][0] = sm[8 + 2 * q];
        p.mins[q][i][1] = sm[9 + 2 * q];
    }
    p.d[i] = blk.d;
    p.dmin[i] = blk.dmin;
}

void pack_iq4_xs_row(iq4_xs_packed16& p, int i, const block_iq4_xs& blk) {
    uint8_t e[qk_k];  // the row's indices in element order
    for (int s = 0; s < 8; ++s)
        for (int l = 0; l < 16; ++l) {
            e[32 * s + l] = blk.qs[16 * s + l] & 0x0f;
            e[32 * s + 16 + l] = blk.qs[16 * s + l] >> 4;
        }
    for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 8; ++k) {
            auto* q = reinterpret_cast<uint8_t*>(&p.qs[c][k][i]);
            for (int m = 0; m < 4; ++m) q[m] = static_cast<uint8_t>(e[64 * c + 4 * k + m] | e[64 * c + 32 + 4 * k + m] << 4);
        }
    for (int s = 0; s < 8; ++s) p.scales[s][i] = static_cast<int8_t>(iq4_xs_scale(blk, s) - 32);
    for (int q = 0; q < 4; ++q) {
        p.mins[q][i][0] = p.scales[2 * q][i];
        p.mins[q][i][1] = p.scales[2 * q + 1][i];
    }
    p.d[i] = blk.d;
}

void pack_q6_k_row(q6_k_packed16& p, int i, const block_q6_k& blk) {
    uint8_t q[qk_k];  // the row's values in element order
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = blk.ql + 64 * half;
        const uint8_t* qh = blk.qh + 32 * half;
        uint8_t* v = q + 128 * half;
        for (int l = 0; l < 32; ++l) {
            v[l] = static_cast<uint8_t>((ql[l] & 0x0f) | ((qh[l] & 3) << 4));
            v[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4));
            v[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            v[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
    }
    for (int s = 0; s < 16; ++s) {
        const uint8_t* e = q + 16 * s;
        for (int plane = 0; plane < 3; ++plane) {
            auto* out = reinterpret_cast<uint8_t*>(&p.q[s][plane][i]);
            for (int m = 0; m < 4; ++m) out[m] = static_cast<uint8_t>(e[4 * plane + m] | ((e[12 + m] >> (2 * plane)) & 3) << 6);
        }
    }
    for (int sb = 0; sb < 16; ++sb) p.scales[sb][i] = blk.scales[sb];
    p.d[i] = blk.d;
}

}  // namespace

size_t q4_k_packed_bytes(int64_t n_rows, int64_t n_cols) { return packed_bytes<q4_k_packed16>(n_rows, n_cols); }
size_t q5_k_packed_bytes(int64_t n_rows, int64_t n_cols) { return packed_bytes<q5_k_packed16>(n_rows, n_cols); }
size_t q6_k_packed_bytes(int64_t n_rows, int64_t n_cols) { return packed_bytes<q6_k_packed16>(n_rows, n_cols); }
size_t iq4_xs_packed_bytes(int64_t n_rows, int64_t n_cols) { return packed_bytes<iq4_xs_packed16>(n_rows, n_cols); }

void pack_q4_k(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out) {
    pack_groups<q4_k_packed16, block_q4_k>(w, n_rows, n_cols, out, pack_q45_k_row<q4_k_packed16, block_q4_k>);
}
void pack_q5_k(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out) {
    pack_groups<q5_k_packed16, block_q5_k>(w, n_rows, n_cols, out, pack_q45_k_row<q5_k_packed16, block_q5_k>);
}
void pack_q6_k(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out) {
    pack_groups<q6_k_packed16, block_q6_k>(w, n_rows, n_cols, out, pack_q6_k_row);
}
void pack_iq4_xs(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out) {
    pack_groups<iq4_xs_packed16, block_iq4_xs>(w, n_rows, n_cols, out, pack_iq4_xs_row);
}

namespace {

// Software prefetch, into L2, 8 blocks ahead of the block being read: 5
// lines per sub-block, 40 per block (q4_K's 37 and the start of the next;
// q5_K 6 and 48 for its 45).
// Groups lie one after another: past a group's last block this fetches the
// next group's. A pass slower per block than the hardware prefetchers look
// ahead stalls without it; one at the memory's rate (AVX-512, 1-2 tokens,
// Zen 4) only slows with it. One thread, without -> with: Zen 4, 8960 x
// 1536 from 192 MiB, AVX-512 1 token 244 -> 354 us, 8 tokens 1200 -> 650;
// AVX2 459 -> 296, 1533 -> 1059. Sapphire Rapids, 2816 x 1024 from 1 GiB,
// q4_K 10.8 -> 13.6 GB/s (14 of plain reads); Zen 5 from 512 MiB, q4_K
// 20.6 -> 27.8, iq4_xs 18.4 -> 28.6, q5_K 11-20 -> 25-28 (38 of plain
// reads). So every pass prefetches but Zen 4's one- and two-token ones.
template <class P>
constexpr int64_t prefetch_bytes = 8 * sizeof(P);
template <class P>
constexpr int prefetch_lines = (sizeof(P) / 64 + 7) / 8;
constexpr int prefetch_min_tokens512 = 3;
constexpr int64_t q6_prefetch_bytes = 6 * sizeof(q6_k_packed16);  // about as far ahead as q4_K's

template <class P>
TACHYON_AVX2 inline void prefetch_sub_block(const char* ahead, int sb) {
    for (int l = 0; l < prefetch_lines<P>; ++l) _mm_prefetch(ahead + (prefetch_lines<P> * sb + l) * 64, _MM_HINT_T1);
}

// The token's sums over each sub-block of 32 (pairs of its bsums), two int16 per dword.
TACHYON_AVX2 inline void sub_block_sums(const block_q8_k& x, int32_t (&xs)[4]) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.bsums));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.bsums + 8));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(xs), _mm_hadd_epi16(lo, hi));
}

// ---- AVX-512: 16 rows in the lanes of one register ---------------------------

// iq4_xs keeps signed scales and its "mins" are those scales; q4_K / q5_K unsigned ones.
template <class P>
constexpr bool signed_scales = std::is_same_v<P, iq4_xs_packed16>;

// Tokens t.. t + NT - 1 against group w (nb blocks) of rows r..; lanes
// outside `keep` are not stored. Per sub-block and token 8 dpbusd into an
// int32 sum, times the rows' scales into a float sum by an FMA (an int32
// multiply takes two dpbusd slots: Zen 4, 256 tokens, 23.0 -> 21.3 ms);
// per block and token 4 dpwssd of the mins against the sub-block sums and
// two FMAs. q5_K or's its fifth bits in; iq4_xs looks its levels + 128 up,
// its mins term 128 x the scales x the sub-block sums, 128 d for dmin.
template <int NT, class P>
__attribute__((noinline)) TACHYON_AVX512 void tokens512(const gemm_args& a, const P* w, int64_t nb, int64_t r, int64_t t, __mmask16 keep) {
    const block_q8_k* x[NT];
    for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
    const bool prefetch = NT >= prefetch_min_tokens512 || !cpu_is_amd_zen4();
    __m512 acc[NT];
#pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const P& blk = w[b];
        const char* ahead = reinterpret_cast<const char*>(&blk) + prefetch_bytes<P>;
        __m512 sumf[NT];
#pragma GCC unroll 8
        for (int sb = 0; sb < 8; ++sb) {
            if (prefetch) prefetch_sub_block<P>(ahead, sb);
            __m512i s32[NT];
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j) s32[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                const __m512i q = values512(blk, sb, k);
#pragma GCC unroll 8
                for (int j = 0; j < NT; ++j) s32[j] = dpbusd_broadcast(s32[j], q, x[j][b].qs + 32 * sb + 4 * k);
            }
            const __m128i sc8 = _mm_load_si128(reinterpret_cast<const __m128i*>(blk.scales[sb]));
            const __m512 sc = _mm512_cvtepi32_ps(signed_scales<P> ? _mm512_cvtepi8_epi32(sc8) : _mm512_cvtepu8_epi32(sc8));
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j)
                sumf[j] = sb == 0 ? _mm512_mul_ps(_mm512_cvtepi32_ps(s32[j]), sc) : _mm512_fmadd_ps(_mm512_cvtepi32_ps(s32[j]), sc, sumf[j]);
        }
        __m512i mins[4];
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
            const __m256i m8 = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.mins[p]));
            mins[p] = signed_scales<P> ? _mm512_cvtepi8_epi16(m8) : _mm512_cvtepu8_epi16(m8);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.d)));
        __m512 mw;
        if constexpr (signed_scales<P>) mw = _mm512_mul_ps(dw, _mm512_set1_ps(128.0f));
        else mw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.dmin)));
#pragma GCC unroll 8
        for (int j = 0; j < NT; ++j) {
            int32_t xs[4];
            sub_block_sums(x[j][b], xs);
            __m512i summ = _mm512_madd_epi16(mins[0], _mm512_set1_epi32(xs[0]));
#pragma GCC unroll 4
            for (int p = 1; p < 4; ++p) summ = _mm512_dpwssd_epi32(summ, mins[p], _mm512_set1_epi32(xs[p]));
            const __m512 dx = _mm512_set1_ps(x[j][b].d);
            acc[j] = _mm512_fmadd_ps(sumf[j], _mm512_mul_ps(dw, dx), acc[j]);
            acc[j] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(summ), _mm512_mul_ps(mw, dx), acc[j]);
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
}

constexpr int nt512 = 8;  // tokens per pass: 8 int32, 8 float sums and the sub-block's 8 dpbusd chains

// ---- AVX2: 8 rows in the lanes, a group as two halves --------------------------

// Half h (rows 8h..8h+7) of register k of sub-block sb, as values512.
template <bool HIGH>  // sb is odd (the high nibbles), known when compiled; q5_K works it out
TACHYON_AVX2 inline __m256i values256(const q4_k_packed16& blk, int sb, int k, int h) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.qs[sb / 2][k][8 * h]));
    return _mm256_and_si256(HIGH ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
}
TACHYON_AVX2 inline __m256i values256(const q4_k_packed16& blk, int sb, int k, int h) {
    return sb % 2 == 0 ? values256<false>(blk, sb, k, h) : values256<true>(blk, sb, k, h);
}
template <bool HIGH = false>
TACHYON_AVX2 inline __m256i values256(const q5_k_packed16& blk, int sb, int k, int h) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.qs[sb / 2][k][8 * h]));
    const __m256i l = sb % 2 == 0 ? v : _mm256_srli_epi16(v, 4);
    const __m256i hb = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.qh[k][8 * h]));
    const __m256i hs = sb < 4 ? _mm256_slli_epi16(hb, 4 - sb) : sb > 4 ? _mm256_srli_epi16(hb, sb - 4) : hb;  // bit sb to bit 4
    return _mm256_or_si256(_mm256_and_si256(l, _mm256_set1_epi8(0x0f)), _mm256_and_si256(hs, _mm256_set1_epi8(0x10)));
}

// Sub-block sb of block b for halves h0.. h0 + NH - 1 and NT tokens into
// sumi; HIGH: sb is odd (q4_K's high nibbles).
template <int NT, int NH, bool HIGH, class P>
__attribute__((always_inline)) TACHYON_AVX2 inline void sub_block256(const P& blk, int sb, const block_q8_k* const* x, int64_t b, int h0,
                                                                    __m256i (&sumi)[NH][NT]) {
    constexpr int k_per_sum = std::is_same_v<P, q5_k_packed16> ? 4 : 8;
    __m256i s16[NH][NT];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        __m256i xb[NT];
#pragma GCC unroll 4
        for (int j = 0; j < NT; ++j) xb[j] = _mm256_set1_epi32(load_i32(x[j][b].qs + 32 * sb + 4 * k));
#pragma GCC unroll 2
        for (int hh = 0; hh < NH; ++hh) {
            const __m256i q = values256<HIGH>(blk, sb, k, h0 + hh);
#pragma GCC unroll 4
            for (int j = 0; j < NT; ++j) {
                const __m256i p = _mm256_maddubs_epi16(q, xb[j]);
                s16[hh][j] = k % k_per_sum == 0 ? p : _mm256_add_epi16(s16[hh][j], p);
                // keeps the sums a chain (a tree holds every product live and spills)
                __asm__("" : "+x"(s16[hh][j]));
            }
        }
        if ((k + 1) % k_per_sum != 0) continue;
#pragma GCC unroll 2
        for (int hh = 0; hh < NH; ++hh) {
            const __m256i sc8 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&blk.scales[sb][8 * (h0 + hh)])));
            const __m256i sc = _mm256_or_si256(sc8, _mm256_slli_epi32(sc8, 16));
#pragma GCC unroll 4
            for (int j = 0; j < NT; ++j) {
                const __m256i v = _mm256_madd_epi16(s16[hh][j], sc);
                sumi[hh][j] = sb == 0 && k + 1 == k_per_sum ? v : _mm256_add_epi32(sumi[hh][j], v);
            }
        }
    }
}

// Halves h0.. h0 + NH - 1 (rows 8h..8h+7 each) of group w. Per sub-block
// and token 8 maddubs summed in int16 (16 products of at most 15 * 127 per
// lane) and one madd by the rows' scales; q5_K's values reach 31: 4 maddubs
// a sum, 2 madds. Decode and 2-token passes take both halves at once (NH =
// 2): a block's scales, mins and activations are read once for 16 rows
// (Sapphire Rapids, TACHYON_KERNELS=avx2, 2816 x 1024 in L2, us, both
// halves / one: q4_K 1 token 54.2 / 72.9, 2 tokens 71.7 / 87.9; q5_K 88.3
// / 98.7; q6_K 88.4 / 103.9, 117.0 / 134.2).
template <int NT, int NH, class P>
__attribute__((noinline)) TACHYON_AVX2 void tokens256(const gemm_args& a, const P* w, int64_t nb, int h0, int64_t r, int64_t t, __m256i keep0,
                                                       __m256i keep1) {
    const block_q8_k* x[NT];
    for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
    __m256 acc[NH][NT];
#pragma GCC unroll 4
    for (int i = 0; i < NH * NT; ++i) acc[i / NT][i % NT] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const P& blk = w[b];
        const char* ahead = reinterpret_cast<const char*>(&blk) + prefetch_bytes<P>;
        __m256i sumi[NH][NT];
        // In pairs, low nibbles then high, each shift known when compiled (a
        // loop over 8 tested the parity per register: q4_K in L2, 1 / 8 tokens,
        // 37 / 194 -> 31 / 180 us). The full unroll spilled (from memory, q4_K
        // 28 GB/s against 34-39); tokens512 keeps 8.
#pragma GCC unroll 1
        for (int sb = 0; sb < 8; sb += 2) {
            prefetch_sub_block<P>(ahead, sb);
            sub_block256<NT, NH, false>(blk, sb, x, b, h0, sumi);
            prefetch_sub_block<P>(ahead, sb + 1);
            sub_block256<NT, NH, true>(blk, sb + 1, x, b, h0, sumi);
        }
#pragma GCC unroll 4
        for (int j = 0; j < NT; ++j) {
            int32_t xs[4];
            sub_block_sums(x[j][b], xs);
            const __m256 dx = _mm256_set1_ps(x[j][b].d);
#pragma GCC unroll 2
            for (int hh = 0; hh < NH; ++hh) {
                const int h = h0 + hh;
                __m256i summ = _mm256_setzero_si256();
#pragma GCC unroll 4
                for (int p = 0; p < 4; ++p) {
                    const __m256i m = _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.mins[p][8 * h][0])));
                    summ = _mm256_add_epi32(summ, _mm256_madd_epi16(m, _mm256_set1_epi32(xs[p])));
                }
                const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.d[8 * h])));
                const __m256 mw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.dmin[8 * h])));
                acc[hh][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[hh][j]), _mm256_mul_ps(dw, dx), acc[hh][j]);
                acc[hh][j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_mul_ps(mw, dx), acc[hh][j]);
            }
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) {
        _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r + 8 * h0, keep0, acc[0][j]);
        if constexpr (NH == 2) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r + 8 * (h0 + 1), keep1, acc[1][j]);
    }
}

// iq4_xs at AVX2: maddubs of its levels + 128 against int8 activations
// would saturate the int16 pairs, so the levels stay signed, their
// magnitudes against the token's bytes signed by them (pairs within
// +-2 * 127 * 127), each maddubs widened at once by a madd with the rows'
// scale; no mins term.
template <int NT, int NH>
__attribute__((noinline)) TACHYON_AVX2 void tokens256(const gemm_args& a, const iq4_xs_packed16* w, int64_t nb, int h, int64_t r, int64_t t,
                                                       __m256i keep, __m256i) {
    static_assert(NH == 1, "iq4_xs takes one half a pass");
    const block_q8_k* x[NT];
    for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)));
    __m256 acc[NT];
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const iq4_xs_packed16& blk = w[b];
        const char* ahead = reinterpret_cast<const char*>(&blk) + prefetch_bytes<iq4_xs_packed16>;
        __m256i sumi[NT];
        // By 2, as in tokens256.
#pragma GCC unroll 2
        for (int sb = 0; sb < 8; ++sb) {
            prefetch_sub_block<iq4_xs_packed16>(ahead, sb);
            // each row's scale in both int16 halves of its lane
            const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&blk.scales[sb][8 * h]));
            const __m256i sc = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8));
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.qs[sb / 2][k][8 * h]));
                const __m256i idx = _mm256_and_si256(sb % 2 == 0 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
                const __m256i lv = _mm256_shuffle_epi8(levels, idx);
                const __m256i mag = _mm256_abs_epi8(lv);
#pragma GCC unroll 4
                for (int j = 0; j < NT; ++j) {
                    const __m256i xb = _mm256_set1_epi32(load_i32(x[j][b].qs + 32 * sb + 4 * k));
                    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(mag, _mm256_sign_epi8(xb, lv)), sc);
                    sumi[j] = sb == 0 && k == 0 ? p : _mm256_add_epi32(sumi[j], p);
                }
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.d[8 * h])));
#pragma GCC unroll 4
        for (int j = 0; j < NT; ++j) acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[j]), _mm256_mul_ps(dw, _mm256_set1_ps(x[j][b].d)), acc[j]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r + 8 * h, keep, acc[j]);
}

constexpr int nt256 = 4;  // tokens per pass: 4 int16, 4 int32 and 4 float sums of the 16 registers

// ---- q6_K -------------------------------------------------------------------

// Lines prefetched per sub-block: 4 of the block's 53.
constexpr int q6_prefetch_lines = 4;
constexpr int q6_block_lines = sizeof(q6_k_packed16) / 64;

TACHYON_AVX2 inline void q6_prefetch(const char* ahead, int sb) {
    for (int l = 0; l < q6_prefetch_lines; ++l)
        if (q6_prefetch_lines * sb + l < q6_block_lines) _mm_prefetch(ahead + (q6_prefetch_lines * sb + l) * 64, _MM_HINT_T1);
}

// As tokens512 for q6_K: per sub-block and token 4 dpbusd into an int32
// sum and an FMA by the rows' scales into a float sum (with an int32
// multiply there, 256 tokens took 29.9 ms against 25.0 from the weights in
// place; with the FMA 24.9); per block and token 8 dpwssd of the scale
// pairs against the bsums for the offset of 32.
template <int NT>
__attribute__((noinline)) TACHYON_AVX512 void q6_tokens512(const gemm_args& a, const q6_k_packed16* w, int64_t nb, int64_t r, int64_t t,
                                                            __mmask16 keep) {
    // One or two tokens split the sub-blocks' float sums over two chains:
    // one chain of 16 dependent FMAs a block was its critical path.
    constexpr int KS = NT <= 2 ? 2 : 1;
    const block_q8_k* x[NT];
    for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
    __m512 acc[NT];
#pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const q6_k_packed16& blk = w[b];
        const char* ahead = reinterpret_cast<const char*>(&blk) + q6_prefetch_bytes;
        __m512 sumf[KS][NT];
        // By 4, not 16, as in q6_tokens256 below: from memory 23-25 GB/s -> 34-37.
#pragma GCC unroll 4
        for (int sb = 0; sb < 16; ++sb) {
            q6_prefetch(ahead, sb);
            __m512i s32[NT];
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j) s32[j] = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m512i q = q6_values512(blk, sb, k);
#pragma GCC unroll 8
                for (int j = 0; j < NT; ++j) s32[j] = dpbusd_broadcast(s32[j], q, x[j][b].qs + 16 * sb + 4 * k);
            }
            const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(blk.scales[sb]))));
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j)
                sumf[sb % KS][j] = sb < KS ? _mm512_mul_ps(_mm512_cvtepi32_ps(s32[j]), sc)
                                           : _mm512_fmadd_ps(_mm512_cvtepi32_ps(s32[j]), sc, sumf[sb % KS][j]);
        }
        if constexpr (KS == 2) {
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j) sumf[0][j] = _mm512_add_ps(sumf[0][j], sumf[1][j]);
        }
        __m512i offs[NT];
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) {
            const __m128i s0 = _mm_load_si128(reinterpret_cast<const __m128i*>(blk.scales[2 * p]));
            const __m128i s1 = _mm_load_si128(reinterpret_cast<const __m128i*>(blk.scales[2 * p + 1]));
            const __m512i pair = _mm512_cvtepi8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(s0, s1), _mm_unpacklo_epi8(s0, s1)));
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j) {
                const __m512i bs = _mm512_set1_epi32(load_i32(x[j][b].bsums + 2 * p));
                offs[j] = p == 0 ? _mm512_madd_epi16(pair, bs) : _mm512_dpwssd_epi32(offs[j], pair, bs);
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.d)));
#pragma GCC unroll 8
        for (int j = 0; j < NT; ++j) {
            const __m512 tot = _mm512_sub_ps(sumf[0][j], _mm512_cvtepi32_ps(_mm512_slli_epi32(offs[j], 5)));
            acc[j] = _mm512_fmadd_ps(tot, _mm512_mul_ps(dw, _mm512_set1_ps(x[j][b].d)), acc[j]);
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
}

// Half h (rows 8h..8h+7) of register k of sub-block sb.
TACHYON_AVX2 inline __m256i q6_values256(const q6_k_packed16& blk, int sb, int k, int h) {
    const __m256i low6 = _mm256_set1_epi8(0x3f);
    if (k < 3) return _mm256_and_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.q[sb][k][8 * h])), low6);
    const __m256i r0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.q[sb][0][8 * h]));
    const __m256i r1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.q[sb][1][8 * h]));
    const __m256i r2 = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.q[sb][2][8 * h]));
    // Bits 6..7 of r0, r1 and r2 to bits 0..1, 2..3 and 4..5.
    const __m256i b01 = _mm256_and_si256(_mm256_srli_epi16(r0, 6), _mm256_set1_epi8(0x03));
    const __m256i b23 = _mm256_and_si256(_mm256_srli_epi16(r1, 4), _mm256_set1_epi8(0x0c));
    const __m256i b45 = _mm256_and_si256(_mm256_srli_epi16(r2, 2), _mm256_set1_epi8(0x30));
    return _mm256_or_si256(_mm256_or_si256(b01, b23), b45);
}

// The 8 rows' int8 values of scales[s0] and scales[s1] of half h, as int16 pairs per dword.
TACHYON_AVX2 inline __m256i q6_scale_pairs256(const q6_k_packed16& blk, int s0, int s1, int h) {
    const __m128i a0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&blk.scales[s0][8 * h]));
    const __m128i a1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&blk.scales[s1][8 * h]));
    return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a0, a1));
}

// As tokens256 for q6_K: per sub-block and token two maddubs summed in
// int16 (4 products of at most 63 * 128 per lane) twice, each widened by a
// madd with the rows' scale in both halves of a lane; NH halves a pass.
template <int NT, int NH>
__attribute__((noinline)) TACHYON_AVX2 void q6_tokens256(const gemm_args& a, const q6_k_packed16* w, int64_t nb, int h0, int64_t r, int64_t t,
                                                          __m256i keep0, __m256i keep1) {
    const block_q8_k* x[NT];
    for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + (t + j) * a.x_row_bytes);
    __m256 acc[NH][NT];
#pragma GCC unroll 4
    for (int i = 0; i < NH * NT; ++i) acc[i / NT][i % NT] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const q6_k_packed16& blk = w[b];
        const char* ahead = reinterpret_cast<const char*>(&blk) + q6_prefetch_bytes;
        __m256i sumi[NH][NT];
#pragma GCC unroll 4
        for (int i = 0; i < NH * NT; ++i) sumi[i / NT][i % NT] = _mm256_setzero_si256();
        // Unrolled by 4, not 16: the whole block unrolled spilled a quarter of
        // its registers, and from memory (256 MiB of 2816 x 1024, one token, one
        // thread, Zen 5) the pass read 19 GB/s against 38-42 (in L2 35 -> 48).
#pragma GCC unroll 4
        for (int sb = 0; sb < 16; ++sb) {
            q6_prefetch(ahead, sb);
#pragma GCC unroll 2
            for (int e = 0; e < 2; ++e) {
                __m256i x0[NT], x1[NT];
#pragma GCC unroll 4
                for (int j = 0; j < NT; ++j) {
                    const int8_t* xq = x[j][b].qs + 16 * sb + 8 * e;
                    x0[j] = _mm256_set1_epi32(load_i32(xq));
                    x1[j] = _mm256_set1_epi32(load_i32(xq + 4));
                }
#pragma GCC unroll 2
                for (int hh = 0; hh < NH; ++hh) {
                    const int h = h0 + hh;
                    const __m256i sc = q6_scale_pairs256(blk, sb, sb, h);
                    const __m256i q0 = q6_values256(blk, sb, 2 * e, h), q1 = q6_values256(blk, sb, 2 * e + 1, h);
#pragma GCC unroll 4
                    for (int j = 0; j < NT; ++j) {
                        const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(q0, x0[j]), _mm256_maddubs_epi16(q1, x1[j]));
                        sumi[hh][j] = _mm256_add_epi32(sumi[hh][j], _mm256_madd_epi16(s16, sc));
                    }
                }
            }
        }
#pragma GCC unroll 2
        for (int hh = 0; hh < NH; ++hh) {
            const int h = h0 + hh;
            __m256i offs[NT];
#pragma GCC unroll 8
            for (int p = 0; p < 8; ++p) {
                const __m256i pair = q6_scale_pairs256(blk, 2 * p, 2 * p + 1, h);
#pragma GCC unroll 4
                for (int j = 0; j < NT; ++j) {
                    const __m256i v = _mm256_madd_epi16(pair, _mm256_set1_epi32(load_i32(x[j][b].bsums + 2 * p)));
                    offs[j] = p == 0 ? v : _mm256_add_epi32(offs[j], v);
                }
            }
            const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.d[8 * h])));
#pragma GCC unroll 4
            for (int j = 0; j < NT; ++j) {
                const __m256i tot = _mm256_sub_epi32(sumi[hh][j], _mm256_slli_epi32(offs[j], 5));
                acc[hh][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot), _mm256_mul_ps(dw, _mm256_set1_ps(x[j][b].d)), acc[hh][j]);
            }
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) {
        _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r + 8 * h0, keep0, acc[0][j]);
        if constexpr (NH == 2) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r + 8 * (h0 + 1), keep1, acc[1][j]);
    }
}

}  // namespace

template <class P>
void gemm_packed512(const gemm_args& a, int64_t r0, int64_t r1) {
    groups512<P, nt512>(a, r0, r1, [&](auto nt, const P* w, int64_t nb, int64_t r, int64_t t, __mmask16 keep) {
        tokens512<decltype(nt)::value>(a, w, nb, r, t, keep);
    });
}

template <class P>
void gemm_packed256(const gemm_args& a, int64_t r0, int64_t r1) {
    // iq4_xs takes one half a pass
    groups256<P, nt256, !std::is_same_v<P, iq4_xs_packed16>>(
        a, r0, r1, [&](auto nt, auto nh, const P* w, int64_t nb, int h0, int64_t r, int64_t t, __m256i keep0, __m256i keep1) TACHYON_AVX2 {
            tokens256<decltype(nt)::value, decltype(nh)::value>(a, w, nb, h0, r, t, keep0, keep1);
        });
}

namespace {

// The 8-row layouts of the AVX2 prompt tiles, from the panels (kernels_k_rows.h).
template <class P>
TACHYON_AVX2 void lay_out_q45_k_rows8_packed(const gemm_args& a, int64_t r, int64_t nb, q4_k_rows* out) {
    const auto* w = reinterpret_cast<const P*>(a.panels) + r / 16 * nb;
    const int h = static_cast<int>(r / 8 % 2);
    for (int64_t b = 0; b < nb; ++b) {
        const P& blk = w[b];
        q4_k_rows& o = out[b];
        for (int sb = 0; sb < 8; ++sb) {
            for (int k = 0; k < 8; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(o.quants[8 * sb + k]), values256(blk, sb, k, h));
            const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&blk.scales[sb][8 * h])));
            _mm256_store_si256(reinterpret_cast<__m256i*>(o.scales[sb]), _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
        }
        for (int p = 0; p < 4; ++p)
            _mm256_store_si256(reinterpret_cast<__m256i*>(o.mins[p]),
                               _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.mins[p][8 * h][0]))));
        _mm256_store_ps(o.d, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.d[8 * h]))));
        _mm256_store_ps(o.dmin, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.dmin[8 * h]))));
    }
}

}  // namespace

void lay_out_q4_k_rows8_packed(const gemm_args& a, int64_t r, int64_t nb, q4_k_rows* out) {
    lay_out_q45_k_rows8_packed<q4_k_packed16>(a, r, nb, out);
}

void lay_out_q5_k_rows8_packed(const gemm_args& a, int64_t r, int64_t nb, q4_k_rows* out) {
    lay_out_q45_k_rows8_packed<q5_k_packed16>(a, r, nb, out);
}

TACHYON_AVX2 void lay_out_q6_k_rows8_packed(const gemm_args& a, int64_t r, int64_t nb, q6_k_rows* out) {
    const auto* w = reinterpret_cast<const q6_k_packed16*>(a.panels) + r / 16 * nb;
    const int h = static_cast<int>(r / 8 % 2);
    for (int64_t b = 0; b < nb; ++b) {
        const q6_k_packed16& blk = w[b];
        q6_k_rows& o = out[b];
        // dword m of 32 elements j: elements 32j + 4m.. = register m % 4 of sub-block 2j + m / 4
        for (int j = 0; j < 8; ++j)
            for (int m = 0; m < 8; ++m)
                _mm256_store_si256(reinterpret_cast<__m256i*>(o.quants[8 * j + m]), q6_values256(blk, 2 * j + m / 4, m % 4, h));
        for (int s = 0; s < 16; ++s) _mm256_store_si256(reinterpret_cast<__m256i*>(o.scales[s]), q6_scale_pairs256(blk, s, s, h));
        for (int p = 0; p < 8; ++p) _mm256_store_si256(reinterpret_cast<__m256i*>(o.pairs[p]), q6_scale_pairs256(blk, 2 * p, 2 * p + 1, h));
        _mm256_store_ps(o.d, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.d[8 * h]))));
    }
}

namespace {

void gemm_q6_k_packed512(const gemm_args& a, int64_t r0, int64_t r1) {
    groups512<q6_k_packed16, nt512>(a, r0, r1, [&](auto nt, const q6_k_packed16* w, int64_t nb, int64_t r, int64_t t, __mmask16 keep) {
        q6_tokens512<decltype(nt)::value>(a, w, nb, r, t, keep);
    });
}

void gemm_q6_k_packed256(const gemm_args& a, int64_t r0, int64_t r1) {
    groups256<q6_k_packed16, nt256, true>(a, r0, r1,
                                          [&](auto nt, auto nh, const q6_k_packed16* w, int64_t nb, int h0, int64_t r, int64_t t,
                                              __m256i keep0, __m256i keep1) TACHYON_AVX2 {
                                              q6_tokens256<decltype(nt)::value, decltype(nh)::value>(a, w, nb, h0, r, t, keep0, keep1);
                                          });
}

}  // namespace

namespace {

// Batches of 1 or 2 tokens through Narrow, the rest through Wide.
template <gemm_fn Wide, gemm_fn Narrow>
void few_tokens_narrow(const gemm_args& a, int64_t r0, int64_t r1) {
    (a.n_tokens <= 2 ? Narrow : Wide)(a, r0, r1);
}

// On AMD the AVX-512 level's decode and 2-token passes of q4_K and q6_K take
// the AVX2 kernels: from memory they read more (EPYC Zen 5, 2816 x 1024 from
// 256 MiB, one token, AVX-512 / AVX2 kernel, GB/s: q4_K 1 thread 28-29 /
// 32-39, 2 threads 37-50 / 41-64; q6_K 29-30 / 39-41, 55 / 66-71; the 220M
// Q6_K file at 1 thread 173-188 -> 183-221 t/s), though in L2 the AVX-512
// ones are 1.5x faster. q5_K and iq4_xs read more through AVX-512 (27-30
// against 23-25 GB/s) and keep it.
constexpr gemm_fn q4_k_gemm512 = few_tokens_narrow<gemm_packed512<q4_k_packed16>, gemm_packed256<q4_k_packed16>>;
constexpr gemm_fn q6_k_gemm512 = few_tokens_narrow<gemm_q6_k_packed512, gemm_q6_k_packed256>;

}  // namespace

gemm_fn packed_gemm(tensor_type weight, bool avx512) {
    const bool amd = cpu_is_amd();
    switch (weight) {
        case tensor_type::q4_k: return avx512 ? (amd ? q4_k_gemm512 : gemm_packed512<q4_k_packed16>) : gemm_packed256<q4_k_packed16>;
        case tensor_type::q5_k: return avx512 ? gemm_packed512<q5_k_packed16> : gemm_packed256<q5_k_packed16>;
        case tensor_type::q6_k: return avx512 ? (amd ? q6_k_gemm512 : gemm_q6_k_packed512) : gemm_q6_k_packed256;
        case tensor_type::iq4_xs: return avx512 ? gemm_packed512<iq4_xs_packed16> : gemm_packed256<iq4_xs_packed16>;
        case tensor_type::q2_k:
        case tensor_type::q3_k: return q23_k_packed_gemm(weight, avx512);
        default: return avx512 ? packed16_gemm512(weight) : packed16_gemm256(weight);
    }
}

}  // namespace tachyon::detail
