// Batches (batched decode and prompts, from 3 tokens per matmul on) of the
// 32-element block types with the rows in the vector lanes: a group of 16
// weight rows (AVX-512) or 8 (AVX2 and AVX-VNNI) is laid out again, once
// per group and panel of tokens, into a buffer that stays in L1 (or L2, for
// the longest rows), block by block as [dwords of quants][rows] plus the
// rows' scales as floats. A register then holds the same 4 bytes of every
// row of the group, and one token's matching 4 activation bytes, broadcast,
// multiply into every row's sum at once: a block costs each token 8 dpbusd
// (AVX2: 8 maddubs and their int16 sums), one conversion, one scale product
// and one FMA for all the rows, with no horizontal sums. The row tiles
// (q8_tile, and the q8_tile512 these replaced) pay a conversion, a scale
// product and an FMA per (row, token, block pair), and rebuild each token's
// activations for every group of 4 rows. The 32-bit broadcasts need no shuffles, and the layout
// pass asks for the next group's rows ahead, so from DRAM too the tiles
// beat the row tiles (the thresholds in kernels_avx512.cpp,
// kernels_avx_vnni.cpp and kernels_avx2.cpp say by how much).
//
// q4_0 and q4_1 keep their nibbles (4 dwords a block, unpacked by the tile
// once for all its tokens: q4_0 laid out as bytes measured 274 / 348 us
// against 200 / 269 at 4 / 8 tokens on the Xeon, 2816 x 1024 weights, and
// no faster at 128, the layout pass writing twice the bytes); q8_0, iq4_nl, q5_0 and q5_1 are laid out as 8
// dwords of unsigned bytes: q8_0 and iq4_nl (whose levels, -127..113, are
// looked up by the layout pass) as value + 128, q5_0 / q5_1 as their 5-bit
// quants. Weights stored q + offset (q4_0: 8, q5_0: 16, q8_0 / iq4_nl: 128)
// give a block's integer dot that starts at -offset * (the sum of its
// activations), computed once per token and block before the tiles run
// (at AVX2, whose maddubs the bytes + 128 overflow, q8_0 and iq4_nl are
// laid out as their signed values: tokens8 and tokens8_split say how);
// q4_1 and q5_1 (q8_1 activations) start at 0 and add their min times the
// activations' block sum, m * s, per block. Every lane (row) sums its
// blocks in order whatever the grouping, so threads splitting the rows
// anywhere give the same numbers.
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
#include <vector>

#include "inference/gguf/quant.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/rows/kernels_prompt.h"

namespace tachyon::detail {
namespace {

// One block of R rows: quants[m][i] holds bytes 4m..4m+3 of row i's quants
// (DW = 4 dwords of nibbles or 8 of bytes), d[i] row i's scale.
template <int R, int DW>
struct alignas(R * 4) block_rows {
    uint32_t quants[DW][R];
    float d[R];
};
// The same with row i's min m[i] (q4_1, q5_1).
template <int R, int DW>
struct alignas(R * 4) block_rows_min : block_rows<R, DW> {
    float m[R];
};

template <class B, int R>
using rows_of = std::conditional_t<prompt_type<B>::min, block_rows_min<R, prompt_type<B>::nibbles ? 4 : 8>,
                                   block_rows<R, prompt_type<B>::nibbles ? 4 : 8>>;

// Asks for the line `ahead` bytes past p, into L2.
TACHYON_PROMPT_AVX2 inline void prefetch_l2(const void* p, int64_t ahead) {
    _mm_prefetch(static_cast<const char*>(p) + ahead, _MM_HINT_T1);
}

// q5_0 and q5_1 keep their fifth bits in qh.
template <class B>
constexpr bool has_fifth_bits = requires(const B& blk) { blk.qh; };

// Where each of R rows' qh of block 0 lies from row[0]'s (lanes past n
// repeat row 0), for the gathers of the q5 layouts.
template <int R>
inline void qh_offsets(const gemm_args& a, int n, size_t qh_offset, int32_t (&out)[R]) {
    for (int i = 0; i < R; ++i) out[i] = static_cast<int32_t>((i < n ? i : 0) * a.w_row_bytes + qh_offset);
}

// ---- AVX-512: 16 rows per register -------------------------------------------

// Half h (elements 16h..16h+15) of block b of rows k, 4 + k, 8 + k, 12 + k
// as stored bytes, row 4L + k in 128-bit lane L (for nibbles: the 16 bytes
// as they are, h = 0).
template <class B>
TACHYON_PROMPT_AVX512 inline __m512i quants16(const B* const (&row)[16], int64_t b, int k, int h) {
    constexpr bool bytes_in_place = std::is_same_v<B, block_q8_0>;
    const auto q = [&](int i) { return reinterpret_cast<const __m128i*>(row[i][b].qs + (bytes_in_place ? 16 * h : 0)); };
    __m512i z = _mm512_castsi128_si512(_mm_loadu_si128(q(k)));
    z = _mm512_inserti32x4(z, _mm_loadu_si128(q(4 + k)), 1);
    z = _mm512_inserti32x4(z, _mm_loadu_si128(q(8 + k)), 2);
    z = _mm512_inserti32x4(z, _mm_loadu_si128(q(12 + k)), 3);
    const __m512i n = _mm512_and_si512(h == 0 ? z : _mm512_srli_epi16(z, 4), _mm512_set1_epi8(0x0f));
    if constexpr (prompt_type<B>::nibbles) {
        return z;
    } else if constexpr (bytes_in_place) {
        return _mm512_xor_si512(z, _mm512_set1_epi8(static_cast<char>(0x80)));
    } else if constexpr (std::is_same_v<B, block_iq4_nl>) {
        // the levels + 128 as unsigned bytes, in every lane
        const __m512i levels = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values))),
                                                _mm512_set1_epi8(static_cast<char>(0x80)));
        return _mm512_shuffle_epi8(levels, n);
    } else {
        return n;  // q5_0 / q5_1: fifth_bits16 adds the fifth bits after the transpose
    }
}

// q5_0 / q5_1: the fifth bits of elements 4m..4m+3 (bits 4m..4m+3 of qh,
// dword i: row i's) as 16 in each of dword i's bytes. One multiply spreads
// the 4 bits to bits 4, 12, 20 and 28 (x * (2^4 + 2^11 + 2^18 + 2^25): the
// four shifted copies of x do not overlap), for 16 rows from one gather of
// their qh words. At 4 tokens the layout pass is most of a q5 matmul (72 %
// on the Xeon, 2816 x 1024 weights in cache), as it is of q4_0's (56 %):
// it is where the weights stream in.
TACHYON_PROMPT_AVX512 inline __m512i fifth_bits16(__m512i qh, int m) {
    const __m512i x = _mm512_and_si512(_mm512_srli_epi32(qh, static_cast<unsigned>(4 * m)), _mm512_set1_epi32(0xf));
    return _mm512_and_si512(_mm512_mullo_epi32(x, _mm512_set1_epi32(0x02040810)), _mm512_set1_epi32(0x10101010));
}

// Rows r.. r + n - 1 (n <= 16) laid out as blocks of 16 rows; lanes past n
// repeat row r (their sums are never stored).
template <class B>
TACHYON_PROMPT_AVX512 void lay_out16(const gemm_args& a, int64_t r, int n, int64_t nb, rows_of<B, 16>* out) {
    constexpr int dw = prompt_type<B>::nibbles ? 4 : 8;
    const B* row[16];
    for (int i = 0; i < 16; ++i) row[i] = reinterpret_cast<const B*>(a.w + (r + (i < n ? i : 0)) * a.w_row_bytes);
    const int64_t next = 16 * static_cast<int64_t>(a.w_row_bytes);
    [[maybe_unused]] __m512i qh_at;  // q5: where each row's qh lies from row[0]'s
    if constexpr (has_fifth_bits<B>) {
        alignas(64) int32_t o[16];
        qh_offsets(a, n, offsetof(B, qh), o);
        qh_at = _mm512_load_si512(o);
    }
    int64_t fetched = 0;  // bytes of each row asked for
    for (int64_t b = 0; b < nb; ++b) {
        // the next group's rows into L2 while this one's tiles run, a line
        // each time a block reaches into a new one
        if (static_cast<int64_t>((b + 1) * sizeof(B)) > fetched) {
            for (int i = 0; i < 16; ++i) prefetch_l2(reinterpret_cast<const char*>(row[i]) + fetched, next);
            fetched += 64;
        }
        // 16 bytes of quants at a time: v[k]'s 128-bit lane L holds those of
        // row 4L + k; the 4 x 4 dword transposes within each lane give
        // quants[m] for all 16 rows.
        for (int h = 0; h < dw / 4; ++h) {
            __m512i v[4];
            for (int k = 0; k < 4; ++k) v[k] = quants16(row, b, k, h);
            const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpackhi_epi32(v[0], v[1]);
            const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
            __m512i q[4] = {_mm512_unpacklo_epi64(t0, t2), _mm512_unpackhi_epi64(t0, t2), _mm512_unpacklo_epi64(t1, t3),
                            _mm512_unpackhi_epi64(t1, t3)};
            if constexpr (has_fifth_bits<B>) {
                const __m512i qh = _mm512_i32gather_epi32(qh_at, static_cast<const void*>(row[0] + b), 1);
                for (int c = 0; c < 4; ++c) q[c] = _mm512_or_si512(q[c], fifth_bits16(qh, 4 * h + c));
            }
            for (int c = 0; c < 4; ++c) _mm512_store_si512(out[b].quants[4 * h + c], q[c]);
        }
        alignas(32) uint16_t d[16];
        for (int i = 0; i < 16; ++i) d[i] = row[i][b].d;
        _mm512_store_ps(out[b].d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d))));
        if constexpr (prompt_type<B>::min) {
            for (int i = 0; i < 16; ++i) d[i] = row[i][b].m;
            _mm512_store_ps(out[b].m, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d))));
        }
    }
}

// Tokens t.. t + NT - 1 against the 16 rows laid out at w; lanes outside
// `keep` are not stored.
template <class B, int NT>
TACHYON_PROMPT_AVX512 void tokens16(const gemm_args& a, const rows_of<B, 16>* w, int64_t nb, const act_sums& s, int64_t r, int64_t t,
                                    __mmask16 keep) {
    using xblock = typename prompt_type<B>::act;
    const int8_t* xq[NT];  // token j's quants of block 0; block b is b * sizeof(xblock) bytes on
    for (int j = 0; j < NT; ++j) xq[j] = reinterpret_cast<const xblock*>(a.x + (t + j) * a.x_row_bytes)->qs;
    const float* dx = s.d.data() + t;  // block b, token j: dx[b * n_tokens + j]
    const int32_t* start = s.start.data() + t;
    const float* sx = prompt_type<B>::min ? s.s.data() + t : nullptr;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    __m512 acc[NT];
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const auto& blk = w[b];
        const size_t xo = static_cast<size_t>(b) * sizeof(xblock);
        __m512i sum[NT];
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) sum[j] = _mm512_set1_epi32(start[b * a.n_tokens + j]);
        if constexpr (prompt_type<B>::nibbles) {
#pragma GCC unroll 4
            for (int m = 0; m < 4; ++m) {
                const __m512i v = _mm512_load_si512(blk.quants[m]);
                const __m512i lo = _mm512_and_si512(v, low4);
                const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    sum[j] = _mm512_dpbusd_epi32(sum[j], lo, _mm512_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m))));
                    sum[j] = _mm512_dpbusd_epi32(sum[j], hi, _mm512_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 16 + 4 * m))));
                }
            }
        } else {
#pragma GCC unroll 8
            for (int m = 0; m < 8; ++m) {
                const __m512i v = _mm512_load_si512(blk.quants[m]);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j)
                    sum[j] = _mm512_dpbusd_epi32(sum[j], v, _mm512_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m))));
            }
        }
        const __m512 dw = _mm512_load_ps(blk.d);
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j)
            acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[j]), _mm512_mul_ps(dw, _mm512_set1_ps(dx[b * a.n_tokens + j])), acc[j]);
        if constexpr (prompt_type<B>::min) {
            const __m512 mw = _mm512_load_ps(blk.m);
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) acc[j] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sx[b * a.n_tokens + j]), acc[j]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
}

template <class B, int NT = nt16 - 1>
TACHYON_PROMPT_AVX512 void tail16(const gemm_args& a, const rows_of<B, 16>* w, int64_t nb, const act_sums& s, int64_t r, int64_t t,
                                  __mmask16 keep, int64_t n) {
    if constexpr (NT >= 1) {
        if (n == NT) return tokens16<B, NT>(a, w, nb, s, r, t, keep);
        tail16<B, NT - 1>(a, w, nb, s, r, t, keep, n);
    }
}

// ---- AVX2: 8 rows per register ------------------------------------------------

// fifth_bits16 for 8 rows.
TACHYON_PROMPT_AVX2 inline __m256i fifth_bits8(__m256i qh, int m) {
    const __m256i x = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * m), _mm256_set1_epi32(0xf));
    return _mm256_and_si256(_mm256_mullo_epi32(x, _mm256_set1_epi32(0x02040810)), _mm256_set1_epi32(0x10101010));
}

// Half h of block b of rows k and 4 + k as stored bytes, row 4L + k in
// 128-bit lane L (nibbles: the 16 bytes as they are). q8_0 and iq4_nl come
// as value + 128 for dpbusd, or (Signed, for AVX2's maddubs, which their
// bytes + 128 overflow) as the signed values themselves.
template <class B, bool Signed = false>
TACHYON_PROMPT_AVX2 inline __m256i quants8(const B* const (&row)[8], int64_t b, int k, int h) {
    constexpr bool bytes_in_place = std::is_same_v<B, block_q8_0>;
    const int o = bytes_in_place ? 16 * h : 0;
    const __m256i z = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(row[4 + k][b].qs + o), reinterpret_cast<const __m128i*>(row[k][b].qs + o));
    const __m256i n = _mm256_and_si256(h == 0 ? z : _mm256_srli_epi16(z, 4), _mm256_set1_epi8(0x0f));
    if constexpr (prompt_type<B>::nibbles) {
        return z;
    } else if constexpr (bytes_in_place) {
        return Signed ? z : _mm256_xor_si256(z, _mm256_set1_epi8(static_cast<char>(0x80)));
    } else if constexpr (std::is_same_v<B, block_iq4_nl>) {
        const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)));
        const __m256i levels = Signed ? values : _mm256_xor_si256(values, _mm256_set1_epi8(static_cast<char>(0x80)));
        return _mm256_shuffle_epi8(levels, n);
    } else {
        return n;  // q5_0 / q5_1: fifth_bits8 adds the fifth bits after the transpose
    }
}

template <class B, bool Signed = false>
TACHYON_PROMPT_AVX2 void lay_out8(const gemm_args& a, int64_t r, int n, int64_t nb, rows_of<B, 8>* out) {
    constexpr int dw = prompt_type<B>::nibbles ? 4 : 8;
    const B* row[8];
    for (int i = 0; i < 8; ++i) row[i] = reinterpret_cast<const B*>(a.w + (r + (i < n ? i : 0)) * a.w_row_bytes);
    const int64_t next = 8 * static_cast<int64_t>(a.w_row_bytes);
    [[maybe_unused]] __m256i qh_at;
    if constexpr (has_fifth_bits<B>) {
        alignas(32) int32_t o[8];
        qh_offsets(a, n, offsetof(B, qh), o);
        qh_at = _mm256_load_si256(reinterpret_cast<const __m256i*>(o));
    }
    int64_t fetched = 0;
    for (int64_t b = 0; b < nb; ++b) {
        if (static_cast<int64_t>((b + 1) * sizeof(B)) > fetched) {
            for (int i = 0; i < 8; ++i) prefetch_l2(reinterpret_cast<const char*>(row[i]) + fetched, next);
            fetched += 64;
        }
        for (int h = 0; h < dw / 4; ++h) {
            __m256i v[4];  // lane L: the quants of row 4L + k
            for (int k = 0; k < 4; ++k) v[k] = quants8<B, Signed>(row, b, k, h);
            const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
            const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
            __m256i q[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2), _mm256_unpacklo_epi64(t1, t3),
                            _mm256_unpackhi_epi64(t1, t3)};
            if constexpr (has_fifth_bits<B>) {
                const __m256i qh = _mm256_i32gather_epi32(reinterpret_cast<const int*>(row[0] + b), qh_at, 1);
                for (int c = 0; c < 4; ++c) q[c] = _mm256_or_si256(q[c], fifth_bits8(qh, 4 * h + c));
            }
            for (int c = 0; c < 4; ++c) _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].quants[4 * h + c]), q[c]);
        }
        alignas(16) uint16_t d[8];
        for (int i = 0; i < 8; ++i) d[i] = row[i][b].d;
        _mm256_store_ps(out[b].d, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d))));
        if constexpr (prompt_type<B>::min) {
            for (int i = 0; i < 8; ++i) d[i] = row[i][b].m;
            _mm256_store_ps(out[b].m, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d))));
        }
    }
}

// lay_out8's rows r.. r + 7 (r a multiple of 8) from the panels at
// a.panels (packed16, kernels_prompt.h): half r / 8 % 2 of group r / 16,
// already rows in lanes, so no transposes and no gathers; the padding rows
// of the last group are zero. q4_0, q4_1, iq4_nl, q5_0 and q5_1 (q8_0 is
// read in place below AVX-512).
template <class B>
constexpr bool in_packed16 = std::is_same_v<B, block_q4_0> || std::is_same_v<B, block_q4_1> || std::is_same_v<B, block_iq4_nl> ||
                             std::is_same_v<B, block_q5_0> || std::is_same_v<B, block_q5_1>;

template <class B, bool Signed = false>
TACHYON_PROMPT_AVX2 void lay_out8_packed(const gemm_args& a, int64_t r, int64_t nb, rows_of<B, 8>* out) {
    using P = packed16<B>;
    const char* group = reinterpret_cast<const char*>(a.panels) + static_cast<size_t>(r / 16) * packed16_group_bytes<B>(a.n_cols);
    const int h = static_cast<int>((r / 8) % 2);
    const char* scales = group + static_cast<size_t>(nb) * P::main;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    [[maybe_unused]] const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)));
    [[maybe_unused]] const __m256i levels = Signed ? values : _mm256_xor_si256(values, _mm256_set1_epi8(static_cast<char>(0x80)));
    for (int64_t b = 0; b < nb; ++b) {
        const char* blk = group + b * static_cast<int64_t>(P::main);
        if (h == 0)
            for (size_t l = 0; l < P::main / 64; ++l) prefetch_l2(blk + 64 * l, packed16_prefetch_bytes);
        const auto load = [&](size_t at) TACHYON_PROMPT_AVX2 { return _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + at + 32 * h)); };
        auto* q = reinterpret_cast<__m256i*>(out[b].quants);
        if constexpr (prompt_type<B>::nibbles) {
            for (int m = 0; m < 4; ++m) _mm256_store_si256(q + m, load(64 * m));
        } else {
            [[maybe_unused]] __m256i bits;
            if constexpr (P::fifth) bits = load(256);
            for (int m = 0; m < 4; ++m) {
                const __m256i v = load(64 * m);
                __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
                if constexpr (P::levels) {
                    lo = _mm256_shuffle_epi8(levels, lo);
                    hi = _mm256_shuffle_epi8(levels, hi);
                } else {
                    lo = _mm256_or_si256(lo, fifth_bits_lo8(bits, m));
                    hi = _mm256_or_si256(hi, fifth_bits_hi8(bits, m));
                }
                _mm256_store_si256(q + m, lo);
                _mm256_store_si256(q + 4 + m, hi);
            }
        }
        const char* sc = scales + b * static_cast<int64_t>(P::scale_bytes) + 16 * h;
        _mm256_store_ps(out[b].d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc))));
        if constexpr (P::min) _mm256_store_ps(out[b].m, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 32))));
    }
}

// lay_out8 from the panels when the matmul has them, else from the rows.
template <class B, bool Signed = false>
TACHYON_PROMPT_AVX2 void lay_out8_from(const gemm_args& a, int64_t r, int n, int64_t nb, rows_of<B, 8>* out) {
    if constexpr (in_packed16<B>) {
        if (a.panels != nullptr) return lay_out8_packed<B, Signed>(a, r, nb, out);
    }
    lay_out8<B, Signed>(a, r, n, nb, out);
}

// Tokens t.. t + NT - 1 against the 8 rows laid out at w; lanes outside
// `keep` are not stored. Nibbles: maddubs pairs stay within 2 * 15 * 128,
// the 16 products of a block in an int16 lane within 30720, so a block's
// pairs add up in int16 before one madd widens them. q5 bytes: pairs stay
// within 2 * 31 * 128, half a block's 8 products within 31744, so each half
// adds up in int16 and takes a madd.
//
// q8_0 and iq4_nl, laid out as their signed values (lay_out8<B, true>):
// maddubs takes |w| (unsigned) against x carrying w's sign, one psignb per
// token and dword, and each pair sum (up to 2 * 128 * 127) widens by its
// own madd, as two of them may overflow int16; their dot starts at 0.
// Batches of fewer than min_tokens_split tokens (tokens8_split takes the
// rest): against the q8 tile it did in us 255 / 312 at 3 tokens
// (kernels_avx2.cpp has more). Tiles of 5 and 6 tokens measured no faster
// (256 tokens: 14389 us at 4, 14719 at 5, 15369 at 6).
template <class B>
constexpr bool signed_bytes8 = std::is_same_v<B, block_iq4_nl> || std::is_same_v<B, block_q8_0>;

template <class B, int NT>
TACHYON_PROMPT_AVX2 void tokens8(const gemm_args& a, const rows_of<B, 8>* w, int64_t nb, const act_sums& s, int64_t r, int64_t t,
                                 __m256i keep) {
    using xblock = typename prompt_type<B>::act;
    const int8_t* xq[NT];
    for (int j = 0; j < NT; ++j) xq[j] = reinterpret_cast<const xblock*>(a.x + (t + j) * a.x_row_bytes)->qs;
    const float* dx = s.d.data() + t;
    const int32_t* start = s.start.data() + t;
    const float* sx = prompt_type<B>::min ? s.s.data() + t : nullptr;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[NT];
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const auto& blk = w[b];
        const size_t xo = static_cast<size_t>(b) * sizeof(xblock);
        __m256i sum[NT];
        if constexpr (prompt_type<B>::nibbles) {
#pragma GCC unroll 4
            for (int m = 0; m < 4; ++m) {
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.quants[m]));
                const __m256i lo = _mm256_and_si256(v, low4);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const __m256i x_lo = _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m)));
                    const __m256i x_hi = _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 16 + 4 * m)));
                    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, x_lo), _mm256_maddubs_epi16(hi, x_hi));
                    sum[j] = m == 0 ? p : _mm256_add_epi16(sum[j], p);
                    // keeps the sums a chain: reassociated into a tree, GCC
                    // held every product of the block live and spilled them
                    __asm__("" : "+x"(sum[j]));
                }
            }
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) sum[j] = _mm256_madd_epi16(sum[j], ones);
        } else if constexpr (signed_bytes8<B>) {
#pragma GCC unroll 8
            for (int m = 0; m < 8; ++m) {
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.quants[m]));
                const __m256i av = _mm256_sign_epi8(v, v);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const __m256i xv = _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m)));
                    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(av, _mm256_sign_epi8(xv, v)), ones);
                    sum[j] = m == 0 ? p : _mm256_add_epi32(sum[j], p);
                }
            }
        } else {
            __m256i half[NT];
#pragma GCC unroll 8
            for (int m = 0; m < 8; ++m) {
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.quants[m]));
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const __m256i p = _mm256_maddubs_epi16(v, _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m))));
                    half[j] = m % 4 == 0 ? p : _mm256_add_epi16(half[j], p);
                    __asm__("" : "+x"(half[j]));
                    if (m == 3) sum[j] = _mm256_madd_epi16(half[j], ones);
                    if (m == 7) sum[j] = _mm256_add_epi32(sum[j], _mm256_madd_epi16(half[j], ones));
                }
            }
        }
        const __m256 dw = _mm256_load_ps(blk.d);
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) {
            const __m256i d = signed_bytes8<B> ? sum[j] : _mm256_add_epi32(sum[j], _mm256_set1_epi32(start[b * a.n_tokens + j]));
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(dw, _mm256_set1_ps(dx[b * a.n_tokens + j])), acc[j]);
        }
        if constexpr (prompt_type<B>::min) {
            const __m256 mw = _mm256_load_ps(blk.m);
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) acc[j] = _mm256_fmadd_ps(mw, _mm256_set1_ps(sx[b * a.n_tokens + j]), acc[j]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
}

constexpr int nt8 = 4;  // tokens per AVX2 tile: 4 int16 and 4 float sums of the 16 registers

// q8_0 and iq4_nl batches of min_tokens_split tokens and more, the other
// way round: the activations are the unsigned side, x + 128 = 16 h + l
// split into its nibbles once per token (split_activations), and the
// weights stay signed bytes, so that x . w = 16 (h . w) + (l . w) - 128 *
// sum w, the last term once per row group and block (row_bias8). A nibble
// against a signed byte makes pairs within 2 * 15 * 128, a block's 16
// products per int16 lane within 30720: each token and dword costs 2
// maddubs and 2 int16 adds, against tokens8's psignb, maddubs, madd and
// add, one fewer multiply-port operation. Measured on the Xeon (Sapphire
// Rapids class) forced to AVX2, q8_0, `TACHYON_KERNELS=avx2 tachyon bench
// matmul --type q8_0 --tokens 3,4,8,16,64,256 -t 1 --mib 64
// --no-bandwidth`, us against tokens8: 3 tokens 307-313 / 272-284, 8
// 591-609 / 569-590, 16 1046-1060 / 1060-1121, 64 3294-3421 / 3661-3704,
// 256 12286-12775 / 14463-14941 (iq4_nl 256: 12843 / 14670); the few tokens
// lose on the bias pass and the wider activations.
constexpr int64_t min_tokens_split = 16;

// Token t's block b as x + 128 split into nibbles: split[(t * nb + b) * 64
// ..]: bytes 0..31 the low nibbles, 32..63 the high ones.
TACHYON_PROMPT_AVX2 void split_activations(const gemm_args& a, int64_t nb, std::vector<uint8_t>& split) {
    const size_t n = static_cast<size_t>(a.n_tokens * nb * 64);
    if (split.size() < n) split.resize(n);
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), low4 = _mm256_set1_epi8(0x0f);
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        const auto* x = reinterpret_cast<const block_q8_0*>(a.x + t * a.x_row_bytes);
        uint8_t* o = split.data() + t * nb * 64;
        for (int64_t b = 0; b < nb; ++b) {
            const __m256i u = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs)), flip);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 64 * b), _mm256_and_si256(u, low4));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 64 * b + 32), _mm256_and_si256(_mm256_srli_epi16(u, 4), low4));
        }
    }
}

// -128 * (the sum of each row's 32 signed quants), per block, of the 8
// rows laid out at w.
template <class B>
TACHYON_PROMPT_AVX2 void row_bias8(const rows_of<B, 8>* w, int64_t nb, __m256i* bias) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
        __m256i sum = _mm256_setzero_si256();
        for (int m = 0; m < 8; ++m) {
            const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[b].quants[m]));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, v), ones16));
        }
        _mm256_storeu_si256(bias + b, _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), sum), 7));
    }
}

// Tokens t.. t + NT - 1 (their split activations at split) against the 8
// rows of signed quants at w, whose bias row_bias8 gave.
template <class B, int NT>
TACHYON_PROMPT_AVX2 void tokens8_split(const gemm_args& a, const rows_of<B, 8>* w, int64_t nb, const act_sums& s, int64_t r, int64_t t,
                                       __m256i keep, const uint8_t* split, const __m256i* bias) {
    const uint8_t* xs[NT];
    for (int j = 0; j < NT; ++j) xs[j] = split + (t + j) * nb * 64;
    const float* dx = s.d.data() + t;
    const __m256i ones = _mm256_set1_epi16(1), sixteen = _mm256_set1_epi16(16);
    __m256 acc[NT];
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const auto& blk = w[b];
        __m256i lo[NT], hi[NT];  // the products with l and with h, in int16
#pragma GCC unroll 8
        for (int m = 0; m < 8; ++m) {
            const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.quants[m]));
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) {
                const __m256i pl = _mm256_maddubs_epi16(_mm256_set1_epi32(static_cast<int>(load_u32(xs[j] + 64 * b + 4 * m))), v);
                const __m256i ph = _mm256_maddubs_epi16(_mm256_set1_epi32(static_cast<int>(load_u32(xs[j] + 64 * b + 32 + 4 * m))), v);
                lo[j] = m == 0 ? pl : _mm256_add_epi16(lo[j], pl);
                hi[j] = m == 0 ? ph : _mm256_add_epi16(hi[j], ph);
                __asm__("" : "+x"(lo[j]), "+x"(hi[j]));  // chains, as in tokens8
            }
        }
        const __m256 dw = _mm256_load_ps(blk.d);
        const __m256i bb = _mm256_loadu_si256(bias + b);
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) {
            const __m256i d = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(lo[j], ones), _mm256_madd_epi16(hi[j], sixteen)), bb);
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_mul_ps(dw, _mm256_set1_ps(dx[b * a.n_tokens + j])), acc[j]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
}

template <class B, int NT = nt8 - 1>
TACHYON_PROMPT_AVX2 void tail8_split(const gemm_args& a, const rows_of<B, 8>* w, int64_t nb, const act_sums& s, int64_t r, int64_t t,
                                     __m256i keep, int64_t n, const uint8_t* split, const __m256i* bias) {
    if constexpr (NT >= 1) {
        if (n == NT) return tokens8_split<B, NT>(a, w, nb, s, r, t, keep, split, bias);
        tail8_split<B, NT - 1>(a, w, nb, s, r, t, keep, n, split, bias);
    }
}

// The same with AVX-VNNI: each 4-byte product sum accumulates into the
// block's int32 sums by one dpbusd, which starts at -offset * the
// activations' sum.
template <class B, int NT>
TACHYON_PROMPT_AVX_VNNI void tokens8_vnni(const gemm_args& a, const rows_of<B, 8>* w, int64_t nb, const act_sums& s, int64_t r, int64_t t,
                                          __m256i keep) {
    using xblock = typename prompt_type<B>::act;
    const int8_t* xq[NT];
    for (int j = 0; j < NT; ++j) xq[j] = reinterpret_cast<const xblock*>(a.x + (t + j) * a.x_row_bytes)->qs;
    const float* dx = s.d.data() + t;
    const int32_t* start = s.start.data() + t;
    const float* sx = prompt_type<B>::min ? s.s.data() + t : nullptr;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256 acc[NT];
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const auto& blk = w[b];
        const size_t xo = static_cast<size_t>(b) * sizeof(xblock);
        __m256i sum[NT];
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) sum[j] = _mm256_set1_epi32(start[b * a.n_tokens + j]);
        if constexpr (prompt_type<B>::nibbles) {
#pragma GCC unroll 4
            for (int m = 0; m < 4; ++m) {
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.quants[m]));
                const __m256i lo = _mm256_and_si256(v, low4);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    sum[j] = _mm256_dpbusd_avx_epi32(sum[j], lo, _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m))));
                    sum[j] = _mm256_dpbusd_avx_epi32(sum[j], hi, _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 16 + 4 * m))));
                }
            }
        } else {
#pragma GCC unroll 8
            for (int m = 0; m < 8; ++m) {
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.quants[m]));
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j)
                    sum[j] = _mm256_dpbusd_avx_epi32(sum[j], v, _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m))));
            }
        }
        const __m256 dw = _mm256_load_ps(blk.d);
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j)
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), _mm256_mul_ps(dw, _mm256_set1_ps(dx[b * a.n_tokens + j])), acc[j]);
        if constexpr (prompt_type<B>::min) {
            const __m256 mw = _mm256_load_ps(blk.m);
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) acc[j] = _mm256_fmadd_ps(mw, _mm256_set1_ps(sx[b * a.n_tokens + j]), acc[j]);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r, keep, acc[j]);
}


// Tokens t.. t + n - 1 (n < nt8) against the 8 rows at w, with tokens8 or
// (Vnni) tokens8_vnni.
template <class B, bool Vnni, int NT = nt8 - 1>
TACHYON_PROMPT_AVX2 void tail8(const gemm_args& a, const rows_of<B, 8>* w, int64_t nb, const act_sums& s, int64_t r, int64_t t,
                               __m256i keep, int64_t n) {
    if constexpr (NT >= 1) {
        if (n == NT) {
            if constexpr (Vnni) return tokens8_vnni<B, NT>(a, w, nb, s, r, t, keep);
            else return tokens8<B, NT>(a, w, nb, s, r, t, keep);
        }
        tail8<B, Vnni, NT - 1>(a, w, nb, s, r, t, keep, n);
    }
}

// Rows [r0, r1) in groups of R against every token: each group laid out
// once per panel of tokens by lay_out(r, n, rows), then run(r, t0, t1, n, rows).
template <int R, class Rows, class LayOut, class Run>
void by_row_groups(const gemm_args& a, int64_t r0, int64_t r1, int64_t nt, const LayOut& lay_out, const Run& run) {
    const int64_t nb = a.n_cols / qk_32;
    thread_local std::vector<Rows> buffer;
    if (buffer.size() < static_cast<size_t>(nb)) buffer.resize(static_cast<size_t>(nb));
    const int64_t panel = std::max<int64_t>(nt, prompt_panel_bytes / static_cast<int64_t>(a.x_row_bytes) / nt * nt);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += panel) {
        const int64_t t1 = std::min(a.n_tokens, t0 + panel);
        for (int64_t r = r0; r < r1; r += R) {
            const int n = static_cast<int>(std::min<int64_t>(R, r1 - r));
            lay_out(r, n, buffer.data());
            run(r, t0, t1, n, buffer.data());
        }
    }
}

template <class B>
void gemm_prompt_avx512(const gemm_args& a, int64_t r0, int64_t r1) {
    using rows = rows_of<B, 16>;
    const int64_t nb = a.n_cols / qk_32;
    thread_local act_sums s;
    sum_activations<typename prompt_type<B>::act>(a, nb, prompt_type<B>::offset, s);
    by_row_groups<16, rows>(
        a, r0, r1, nt16, [&](int64_t r, int n, rows* w) { lay_out16<B>(a, r, n, nb, w); },
        [&](int64_t r, int64_t t0, int64_t t1, int n, const rows* w) {
            const auto keep = static_cast<__mmask16>((1u << n) - 1);
            int64_t t = t0;
            for (; t + nt16 <= t1; t += nt16) tokens16<B, nt16>(a, w, nb, s, r, t, keep);
            tail16<B>(a, w, nb, s, r, t, keep, t1 - t);
        });
}

template <class B, bool Vnni>
void gemm_prompt_avx2(const gemm_args& a, int64_t r0, int64_t r1) {
    using rows = rows_of<B, 8>;
    if constexpr (!Vnni && signed_bytes8<B>) {
        if (a.n_tokens >= min_tokens_split) {
            const int64_t nb = a.n_cols / qk_32;
            thread_local act_sums s;
            thread_local std::vector<uint8_t> split;  // [n_tokens, nb, 64]
            // [nb] vectors of 8 int32, read and written unaligned (a
            // std::vector<__m256i> drops the type's alignment attribute)
            thread_local std::vector<int32_t> bias;
            if (bias.size() < static_cast<size_t>(8 * nb)) bias.resize(static_cast<size_t>(8 * nb));
            sum_activations<block_q8_0>(a, nb, 0, s);
            split_activations(a, nb, split);
            by_row_groups<8, rows>(
                a, r0, r1, nt8,
                [&](int64_t r, int n, rows* w) {
                    lay_out8_from<B, true>(a, r, n, nb, w);
                    row_bias8<B>(w, nb, reinterpret_cast<__m256i*>(bias.data()));
                },
                [&](int64_t r, int64_t t0, int64_t t1, int n, const rows* w) TACHYON_PROMPT_AVX2 {
                    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
                    int64_t t = t0;
                    for (; t + nt8 <= t1; t += nt8) tokens8_split<B, nt8>(a, w, nb, s, r, t, keep, split.data(), reinterpret_cast<const __m256i*>(bias.data()));
                    tail8_split<B>(a, w, nb, s, r, t, keep, t1 - t, split.data(), reinterpret_cast<const __m256i*>(bias.data()));
                });
            return;
        }
    }
    constexpr bool is_signed = !Vnni && signed_bytes8<B>;  // maddubs: the signed values, no offset
    const int64_t nb = a.n_cols / qk_32;
    thread_local act_sums s;
    sum_activations<typename prompt_type<B>::act>(a, nb, is_signed ? 0 : prompt_type<B>::offset, s);
    by_row_groups<8, rows>(
        a, r0, r1, nt8, [&](int64_t r, int n, rows* w) { lay_out8_from<B, is_signed>(a, r, n, nb, w); },
        [&](int64_t r, int64_t t0, int64_t t1, int n, const rows* w) TACHYON_PROMPT_AVX2 {
            const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            int64_t t = t0;
            for (; t + nt8 <= t1; t += nt8) {
                if constexpr (Vnni) tokens8_vnni<B, nt8>(a, w, nb, s, r, t, keep);
                else tokens8<B, nt8>(a, w, nb, s, r, t, keep);
            }
            tail8<B, Vnni>(a, w, nb, s, r, t, keep, t1 - t);
        });
}

}  // namespace

gemm_fn prompt_gemm_avx512(tensor_type weight) {
    switch (weight) {
        case tensor_type::q4_0: return gemm_prompt_avx512<block_q4_0>;
        case tensor_type::q4_1: return gemm_prompt_avx512<block_q4_1>;
        case tensor_type::q8_0: return gemm_prompt_avx512<block_q8_0>;
        case tensor_type::iq4_nl: return gemm_prompt_avx512<block_iq4_nl>;
        case tensor_type::q5_0: return gemm_prompt_avx512<block_q5_0>;
        case tensor_type::q5_1: return gemm_prompt_avx512<block_q5_1>;
        default: return nullptr;
    }
}

gemm_fn prompt_gemm_avx_vnni(tensor_type weight) {
    switch (weight) {
        case tensor_type::q4_0: return gemm_prompt_avx2<block_q4_0, true>;
        case tensor_type::q4_1: return gemm_prompt_avx2<block_q4_1, true>;
        case tensor_type::q8_0: return gemm_prompt_avx2<block_q8_0, true>;
        case tensor_type::iq4_nl: return gemm_prompt_avx2<block_iq4_nl, true>;
        case tensor_type::q5_0: return gemm_prompt_avx2<block_q5_0, true>;
        case tensor_type::q5_1: return gemm_prompt_avx2<block_q5_1, true>;
        default: return nullptr;
    }
}

gemm_fn prompt_gemm_avx2(tensor_type weight) {
    switch (weight) {
        case tensor_type::q4_0: return gemm_prompt_avx2<block_q4_0, false>;
        case tensor_type::q4_1: return gemm_prompt_avx2<block_q4_1, false>;
        case tensor_type::q8_0: return gemm_prompt_avx2<block_q8_0, false>;
        case tensor_type::iq4_nl: return gemm_prompt_avx2<block_iq4_nl, false>;
        case tensor_type::q5_0: return gemm_prompt_avx2<block_q5_0, false>;
        case tensor_type::q5_1: return gemm_prompt_avx2<block_q5_1, false>;
        default: return nullptr;
    }
}

}  // namespace tachyon::detail
