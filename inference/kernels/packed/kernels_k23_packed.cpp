// q2_K and q3_K weights packed at load (pack_panels) for the AVX2 and
// AVX-512 levels, as q4_K's are (kernels_k_packed.cpp): every group of 16
// rows block by block, the rows in the vector lanes.
//
// In place, their row kernels spend more instructions on a block than the
// memory takes to bring it: the 2-bit values shifted out of their bytes,
// a scale unpacked per sub-block of 16, a horizontal sum per row and
// block. From memory they read 13-14 GB/s where q4_K's panels read 35
// (EPYC Zen 5, one thread, `tachyon bench matmul --type q2_k --tokens 1
// --mib 256`). Packed, a sub-block's 16 rows x 16 values are one 64-byte
// load; register k of it (16 rows x 4 values) is a shift and an and, one
// dpbusd per token (AVX-512; a maddubs and an int16 add at AVX2); the
// sub-block's sum times the rows' scales is one dpwssd for 16 rows, and
// the mins (q2_K) or the offset of 4 (q3_K) come off once per block
// through the token's bsums.
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

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "base/assert.h"
#include "inference/gguf/quant.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/packed/kernels_k_packed.h"

#define TACHYON_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TACHYON_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c")))

namespace tachyon::detail {

namespace {

// ---- packing -------------------------------------------------------------------

// The 2-bit values of a q2_K / q3_K block (qs) in element order.
void low_bits(const uint8_t* qs, uint8_t (&e)[qk_k]) {
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) e[128 * h + 32 * j + l] = static_cast<uint8_t>((qs[32 * h + l] >> (2 * j)) & 3);
}

// Dword s of a row: bits 2k..2k + 1 of byte m hold element 16 s + 4 k + m.
void pack_low_bits(const uint8_t (&e)[qk_k], uint32_t (&q)[16][16], int i) {
    for (int s = 0; s < 16; ++s) {
        auto* out = reinterpret_cast<uint8_t*>(&q[s][i]);
        for (int m = 0; m < 4; ++m) {
            int byte = 0;
            for (int k = 0; k < 4; ++k) byte |= e[16 * s + 4 * k + m] << (2 * k);
            out[m] = static_cast<uint8_t>(byte);
        }
    }
}

void pack_q2_k_row(q2_k_packed16& p, int i, const block_q2_k& blk) {
    uint8_t e[qk_k];
    low_bits(blk.qs, e);
    pack_low_bits(e, p.q, i);
    for (int s = 0; s < 16; ++s) p.scales[s / 2][i][s % 2] = blk.scales[s];
    p.d[i] = blk.d;
    p.dmin[i] = blk.dmin;
}

void pack_q3_k_row(q3_k_packed16& p, int i, const block_q3_k& blk) {
    uint8_t e[qk_k];
    low_bits(blk.qs, e);
    pack_low_bits(e, p.q, i);
    // the high bit of element 128h + 32j + l is bit 4h + j of hmask[l]
    const auto high = [&](int n) { return (blk.hmask[n % 32] >> (4 * (n / 128) + n % 128 / 32)) & 1; };
    for (int pr = 0; pr < 8; ++pr) {
        auto* out = reinterpret_cast<uint8_t*>(&p.h[pr][i]);
        for (int m = 0; m < 4; ++m) {
            int byte = 0;
            for (int e2 = 0; e2 < 2; ++e2)
                for (int k = 0; k < 4; ++k) byte |= high(16 * (2 * pr + e2) + 4 * k + m) << (4 * e2 + k);
            out[m] = static_cast<uint8_t>(byte);
        }
    }
    int8_t sc[16];
    q3_k_scales(blk.scales, sc);
    for (int s = 0; s < 16; ++s) p.scales[s / 2][i][s % 2] = sc[s];
    p.d[i] = blk.d;
}

template <class P>
constexpr bool is_q3 = std::is_same_v<P, q3_k_packed16>;

// Software prefetch into L2 the first whole block 16 KiB ahead or more
// (q4_K's passes: 8 blocks, 19 KiB), a block's lines spread over its 8
// pairs of sub-blocks.
template <class P>
constexpr int64_t prefetch_bytes = (16384 + sizeof(P) - 1) / sizeof(P) * sizeof(P);
template <class P>
constexpr int prefetch_lines = (sizeof(P) / 64 + 7) / 8;
constexpr int prefetch_min_tokens512 = 3;

template <class P>
TACHYON_AVX2 inline void prefetch_pair(const char* ahead, int p) {
    for (int l = 0; l < prefetch_lines<P>; ++l) _mm_prefetch(ahead + (prefetch_lines<P> * p + l) * 64, _MM_HINT_T1);
}

// ---- AVX-512: 16 rows in the lanes of one register ---------------------------

// Register k of sub-block s: 16 rows x elements 16 s + 4k .. + 3 as
// unsigned bytes (q2_K 0..3, q3_K low | high << 2, 0..7).
TACHYON_AVX512 inline __m512i values512(const q2_k_packed16& blk, int s, int k) {
    const __m512i v = _mm512_load_si512(blk.q[s]);
    return _mm512_and_si512(k == 0 ? v : _mm512_srli_epi16(v, 2 * k), _mm512_set1_epi8(0x03));
}

TACHYON_AVX512 inline __m512i values512(const q3_k_packed16& blk, int s, int k) {
    const __m512i v = _mm512_load_si512(blk.q[s]);
    const __m512i lo = k == 0 ? v : _mm512_srli_epi16(v, 2 * k);
    const __m512i h = _mm512_load_si512(blk.h[s / 2]);
    const int bit = 4 * (s % 2) + k;
    const __m512i hs = bit < 2 ? _mm512_slli_epi16(h, 2 - bit) : bit > 2 ? _mm512_srli_epi16(h, bit - 2) : h;  // to bit 2
    // (lo & 0x03) | (hs & 0x04)
    return _mm512_ternarylogic_epi32(lo, _mm512_and_si512(hs, _mm512_set1_epi8(0x04)), _mm512_set1_epi8(0x03), 0xec);
}

// Sub-blocks 2p and 2p + 1's scale bytes of the 16 rows, int16 pairs a dword.
TACHYON_AVX512 inline __m512i scale_pairs512(const q2_k_packed16& blk, int p) {
    return _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.scales[p])));
}
TACHYON_AVX512 inline __m512i scale_pairs512(const q3_k_packed16& blk, int p) {
    return _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.scales[p])));
}

// Sub-block 2p + e's scale in the low int16 of every dword, the high one
// zero: dpwssd of a sub-block's int32 sums (within +-16 * 7 * 127, so their
// low int16 is the value and the high one its sign) then multiplies them.
template <class P>
TACHYON_AVX512 inline __m512i sub_block_scale512(__m512i pairs, int e) {
    if constexpr (is_q3<P>) return e == 0 ? _mm512_and_si512(pairs, _mm512_set1_epi32(0xffff)) : _mm512_srli_epi32(pairs, 16);
    return _mm512_and_si512(e == 0 ? pairs : _mm512_srli_epi32(pairs, 16), _mm512_set1_epi32(0x0f));
}

// What the token's bsums multiply: q2_K's mins (the high nibbles), q3_K's scales.
template <class P>
TACHYON_AVX512 inline __m512i offset_pairs512(const P& blk, int p) {
    const __m512i pairs = scale_pairs512(blk, p);
    if constexpr (is_q3<P>) return pairs;
    return _mm512_srli_epi16(pairs, 4);
}

// Tokens t.. t + NT - 1 against group w (nb blocks) of rows r..; lanes
// outside `keep` are not stored. Per sub-block and token 4 dpbusd into an
// int32 sum and a dpwssd of it by the rows' scales into the block's sum;
// per block and token 8 dpwssd of the offsets against the bsums and one or
// two FMAs.
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
        __m512i sumi[NT];
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) {
            if (prefetch) prefetch_pair<P>(ahead, p);
            const __m512i pairs = scale_pairs512(blk, p);
#pragma GCC unroll 2
            for (int e = 0; e < 2; ++e) {
                const int s = 2 * p + e;
                __m512i s32[NT];
#pragma GCC unroll 8
                for (int j = 0; j < NT; ++j) s32[j] = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) {
                    const __m512i q = values512(blk, s, k);
#pragma GCC unroll 8
                    for (int j = 0; j < NT; ++j) s32[j] = dpbusd_broadcast(s32[j], q, x[j][b].qs + 16 * s + 4 * k);
                }
                const __m512i sc = sub_block_scale512<P>(pairs, e);
#pragma GCC unroll 8
                for (int j = 0; j < NT; ++j) sumi[j] = s == 0 ? _mm512_madd_epi16(s32[j], sc) : _mm512_dpwssd_epi32(sumi[j], s32[j], sc);
            }
        }
        __m512i offs[NT];
#pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) {
            const __m512i m = offset_pairs512(blk, p);
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j) {
                const __m512i bs = _mm512_set1_epi32(load_i32(x[j][b].bsums + 2 * p));
                offs[j] = p == 0 ? _mm512_madd_epi16(m, bs) : _mm512_dpwssd_epi32(offs[j], m, bs);
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.d)));
#pragma GCC unroll 8
        for (int j = 0; j < NT; ++j) {
            const __m512 dx = _mm512_set1_ps(x[j][b].d);
            if constexpr (is_q3<P>) {
                const __m512i tot = _mm512_sub_epi32(sumi[j], _mm512_slli_epi32(offs[j], 2));
                acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot), _mm512_mul_ps(dw, dx), acc[j]);
            } else {
                const __m512 mw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.dmin)));
                acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[j]), _mm512_mul_ps(dw, dx), acc[j]);
                acc[j] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(offs[j]), _mm512_mul_ps(mw, dx), acc[j]);
            }
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
}

constexpr int nt512 = 8;  // tokens per pass: 8 int32 sub-block sums, 8 block sums, 8 float sums

template <class P>
void gemm512(const gemm_args& a, int64_t r0, int64_t r1) {
    groups512<P, nt512>(a, r0, r1, [&](auto nt, const P* w, int64_t nb, int64_t r, int64_t t, __mmask16 keep) {
        tokens512<decltype(nt)::value>(a, w, nb, r, t, keep);
    });
}

// ---- AVX2: 8 rows in the lanes, a group as two halves --------------------------

// Half h (rows 8h..8h+7) of register k of sub-block s, as values512.
TACHYON_AVX2 inline __m256i values256(const q2_k_packed16& blk, int s, int k, int h) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.q[s][8 * h]));
    return _mm256_and_si256(k == 0 ? v : _mm256_srli_epi16(v, 2 * k), _mm256_set1_epi8(0x03));
}

TACHYON_AVX2 inline __m256i values256(const q3_k_packed16& blk, int s, int k, int h) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.q[s][8 * h]));
    const __m256i lo = k == 0 ? v : _mm256_srli_epi16(v, 2 * k);
    const __m256i hb = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.h[s / 2][8 * h]));
    const int bit = 4 * (s % 2) + k;
    const __m256i hs = bit < 2 ? _mm256_slli_epi16(hb, 2 - bit) : bit > 2 ? _mm256_srli_epi16(hb, bit - 2) : hb;
    return _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi8(0x03)), _mm256_and_si256(hs, _mm256_set1_epi8(0x04)));
}

TACHYON_AVX2 inline __m256i scale_pairs256(const q2_k_packed16& blk, int p, int h) {
    return _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.scales[p][8 * h][0])));
}
TACHYON_AVX2 inline __m256i scale_pairs256(const q3_k_packed16& blk, int p, int h) {
    return _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.scales[p][8 * h][0])));
}

// Sub-block 2p + e's scale in both int16 of every dword, for a madd of the
// token's int16 pair sums.
template <class P>
TACHYON_AVX2 inline __m256i sub_block_scale256(__m256i pairs, int e) {
    const __m256i lo = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m256i hi = _mm256_add_epi8(lo, _mm256_set1_epi8(2));
    const __m256i both = _mm256_shuffle_epi8(pairs, e == 0 ? lo : hi);
    if constexpr (is_q3<P>) return both;
    return _mm256_and_si256(both, _mm256_set1_epi16(0x0f));
}

template <class P>
TACHYON_AVX2 inline __m256i offset_pairs256(const P& blk, int p, int h) {
    const __m256i pairs = scale_pairs256(blk, p, h);
    if constexpr (is_q3<P>) return pairs;
    return _mm256_srli_epi16(pairs, 4);
}

// Halves h0.. h0 + NH - 1 (rows 8h..8h+7 each) of group w. Per sub-block
// and token 4 maddubs summed in int16 (8 products of at most 7 * 127 per
// lane) and one madd by the rows' scales; decode and 2-token passes take
// both halves at once (NH = 2), as q4_K's.
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
#pragma GCC unroll 4
        for (int i = 0; i < NH * NT; ++i) sumi[i / NT][i % NT] = _mm256_setzero_si256();
#pragma GCC unroll 1
        for (int p = 0; p < 8; ++p) {
            prefetch_pair<P>(ahead, p);
#pragma GCC unroll 2
            for (int e = 0; e < 2; ++e) {
                const int s = 2 * p + e;
                __m256i s16[NH][NT];
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) {
                    __m256i xb[NT];
#pragma GCC unroll 4
                    for (int j = 0; j < NT; ++j) xb[j] = _mm256_set1_epi32(load_i32(x[j][b].qs + 16 * s + 4 * k));
#pragma GCC unroll 2
                    for (int hh = 0; hh < NH; ++hh) {
                        const __m256i q = values256(blk, s, k, h0 + hh);
#pragma GCC unroll 4
                        for (int j = 0; j < NT; ++j) {
                            const __m256i prod = _mm256_maddubs_epi16(q, xb[j]);
                            s16[hh][j] = k == 0 ? prod : _mm256_add_epi16(s16[hh][j], prod);
                            // keeps the sums a chain (a tree holds every product live and spills)
                            __asm__("" : "+x"(s16[hh][j]));
                        }
                    }
                }
#pragma GCC unroll 2
                for (int hh = 0; hh < NH; ++hh) {
                    const __m256i sc = sub_block_scale256<P>(scale_pairs256(blk, p, h0 + hh), e);
#pragma GCC unroll 4
                    for (int j = 0; j < NT; ++j) sumi[hh][j] = _mm256_add_epi32(sumi[hh][j], _mm256_madd_epi16(s16[hh][j], sc));
                }
            }
        }
#pragma GCC unroll 2
        for (int hh = 0; hh < NH; ++hh) {
            const int h = h0 + hh;
            __m256i offs[NT];
#pragma GCC unroll 8
            for (int p = 0; p < 8; ++p) {
                const __m256i m = offset_pairs256(blk, p, h);
#pragma GCC unroll 4
                for (int j = 0; j < NT; ++j) {
                    const __m256i v = _mm256_madd_epi16(m, _mm256_set1_epi32(load_i32(x[j][b].bsums + 2 * p)));
                    offs[j] = p == 0 ? v : _mm256_add_epi32(offs[j], v);
                }
            }
            const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.d[8 * h])));
#pragma GCC unroll 4
            for (int j = 0; j < NT; ++j) {
                const __m256 dx = _mm256_set1_ps(x[j][b].d);
                if constexpr (is_q3<P>) {
                    const __m256i tot = _mm256_sub_epi32(sumi[hh][j], _mm256_slli_epi32(offs[j], 2));
                    acc[hh][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot), _mm256_mul_ps(dw, dx), acc[hh][j]);
                } else {
                    const __m256 mw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(&blk.dmin[8 * h])));
                    acc[hh][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[hh][j]), _mm256_mul_ps(dw, dx), acc[hh][j]);
                    acc[hh][j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(offs[j]), _mm256_mul_ps(mw, dx), acc[hh][j]);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) {
        _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r + 8 * h0, keep0, acc[0][j]);
        if constexpr (NH == 2) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r + 8 * (h0 + 1), keep1, acc[1][j]);
    }
}

constexpr int nt256 = 4;  // tokens per pass: 4 int16, 4 int32 and 4 float sums of the 16 registers

template <class P>
void gemm256(const gemm_args& a, int64_t r0, int64_t r1) {
    groups256<P, nt256, true>(
        a, r0, r1, [&](auto nt, auto nh, const P* w, int64_t nb, int h0, int64_t r, int64_t t, __m256i keep0, __m256i keep1) TACHYON_AVX2 {
            tokens256<decltype(nt)::value, decltype(nh)::value>(a, w, nb, h0, r, t, keep0, keep1);
        });
}

}  // namespace

size_t q23_k_packed_bytes(tensor_type weight, int64_t n_rows, int64_t n_cols) {
    const size_t group = weight == tensor_type::q2_k ? sizeof(q2_k_packed16) : sizeof(q3_k_packed16);
    return static_cast<size_t>((n_rows + 15) / 16 * (n_cols / qk_k)) * group;
}

void pack_q23_k(tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols, std::byte* out) {
    TACHYON_ASSERT(weight == tensor_type::q2_k || weight == tensor_type::q3_k, "pack_q23_k: not q2_K or q3_K");
    if (weight == tensor_type::q2_k) pack_groups<q2_k_packed16, block_q2_k>(w, n_rows, n_cols, out, pack_q2_k_row);
    else pack_groups<q3_k_packed16, block_q3_k>(w, n_rows, n_cols, out, pack_q3_k_row);
}

gemm_fn q23_k_packed_gemm(tensor_type weight, bool avx512) {
    switch (weight) {
        case tensor_type::q2_k: return avx512 ? gemm512<q2_k_packed16> : gemm256<q2_k_packed16>;
        case tensor_type::q3_k: return avx512 ? gemm512<q3_k_packed16> : gemm256<q3_k_packed16>;
        default: return nullptr;
    }
}

}  // namespace tachyon::detail
