// The AMX tiles on the packed k-quant and iq4_xs panels (kernels_k_packed.h):
// the panels dequantized into the AMX-BF16 A tiles of kernels_amx_quant.cpp
// for large batches, and small batches on AMX-INT8 tiles (below). Prompts
// then read the same copy of the weights as decode, and the mapping's pages
// of them can go (a model held its file and the panels twice over at the
// AMX level before: the Qwen2.5-1.5B shape in Q4_K_M 1.6 GB of resident
// memory for a 0.79 GB file).
//
// A panel register holds 4 values of each of 16 rows; a tile row holds 32
// values of one row. Each register's values become bf16 with their row's
// scale and min folded in (4 rows x 4 values a conversion), and an 8 x 8
// transposition of 64-bit words per 8 rows then gathers a row's 8 words of
// 4 values into its tile row: 24 shuffles per 8 rows and 32 columns, about
// what the dequantization itself costs.
//
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "base/assert.h"
#include "inference/gguf/quant.h"
#include "inference/kernels/amx/amx_tiles.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/packed/kernels_k_packed.h"

#define TACHYON_BF16 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx512bf16,avx2,fma,f16c")))

namespace tachyon::detail {
namespace {

// v[k] word i -> v[i] word k (64-bit words).
TACHYON_BF16 inline void transpose8x8_epi64(__m512i (&v)[8]) {
    __m512i a[8], b[8];
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
        // 128-bit lane L: words 2L (lo) or 2L + 1 (hi) of v[2p], v[2p + 1]
        a[2 * p] = _mm512_unpacklo_epi64(v[2 * p], v[2 * p + 1]);
        a[2 * p + 1] = _mm512_unpackhi_epi64(v[2 * p], v[2 * p + 1]);
    }
    // lanes 0 and 2 (0x88) or 1 and 3 (0xdd) of each of two
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
        b[4 * h + 0] = _mm512_shuffle_i64x2(a[4 * h + 0], a[4 * h + 2], 0x88);  // words 0, 4 of v[4h..4h+3]
        b[4 * h + 1] = _mm512_shuffle_i64x2(a[4 * h + 0], a[4 * h + 2], 0xdd);  // words 2, 6
        b[4 * h + 2] = _mm512_shuffle_i64x2(a[4 * h + 1], a[4 * h + 3], 0x88);  // words 1, 5
        b[4 * h + 3] = _mm512_shuffle_i64x2(a[4 * h + 1], a[4 * h + 3], 0xdd);  // words 3, 7
    }
    v[0] = _mm512_shuffle_i64x2(b[0], b[4], 0x88);
    v[4] = _mm512_shuffle_i64x2(b[0], b[4], 0xdd);
    v[2] = _mm512_shuffle_i64x2(b[1], b[5], 0x88);
    v[6] = _mm512_shuffle_i64x2(b[1], b[5], 0xdd);
    v[1] = _mm512_shuffle_i64x2(b[2], b[6], 0x88);
    v[5] = _mm512_shuffle_i64x2(b[2], b[6], 0xdd);
    v[3] = _mm512_shuffle_i64x2(b[3], b[7], 0x88);
    v[7] = _mm512_shuffle_i64x2(b[3], b[7], 0xdd);
}

// Lane j of a 16-row vector spread as rows 4q + j / 4 (each row's value 4 times).
TACHYON_BF16 inline __m512 rows4(__m512 v, int q) {
    const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(4 * q), _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2));
    return _mm512_permutexvar_ps(idx, v);
}

// Rows 8H..8H + 7 of a chunk (H a template argument: the 128-bit lane
// picks are immediates).
template <int H>
TACHYON_BF16 inline void chunk_half_bf16(const __m512i (&q)[8], const __m512 (&sq)[2][4], const __m512 (&mq)[2][4], uint16_t* out) {
    __m512i v[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        const int e = k / 4;
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(q[k], 2 * H)));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(q[k], 2 * H + 1)));
        // word i: row 8H + i's 4 values
        v[k] = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_fmsub_ps(hi, sq[e][2 * H + 1], mq[e][2 * H + 1]),
                                                             _mm512_fmsub_ps(lo, sq[e][2 * H], mq[e][2 * H])));
    }
    transpose8x8_epi64(v);
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) _mm512_storeu_si512(out + 32 * (8 * H + i), v[i]);
}

// One chunk of 32 columns of 16 rows: q[k] the registers of values 4k..4k+3
// (unsigned bytes, row i in dword i), each row's value x as bf16 of
// x * s - m, s and m per row (s0 / m0 for k < 4, s1 / m1 from 4). Tile row
// i at out + 32 i.
TACHYON_BF16 void chunk_bf16(const __m512i (&q)[8], __m512 s0, __m512 m0, __m512 s1, __m512 m1, uint16_t* out) {
    __m512 sq[2][4], mq[2][4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        sq[0][j] = rows4(s0, j);
        mq[0][j] = rows4(m0, j);
        sq[1][j] = rows4(s1, j);
        mq[1][j] = rows4(m1, j);
    }
    chunk_half_bf16<0>(q, sq, mq, out);
    chunk_half_bf16<1>(q, sq, mq, out);
}

TACHYON_BF16 inline __m512 halves16(const uint16_t* h) { return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h))); }

// Byte `odd` of each of 16 byte pairs (32 bytes at pairs), as floats.
TACHYON_BF16 inline __m512 pair_bytes16(const void* pairs, int odd, bool is_signed) {
    __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(pairs));
    v = odd != 0 ? (is_signed ? _mm256_srai_epi16(v, 8) : _mm256_srli_epi16(v, 8))
                 : (is_signed ? _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8) : _mm256_and_si256(v, _mm256_set1_epi16(0xff)));
    return _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(v));
}

TACHYON_BF16 inline __m512 bytes16(const void* p, bool is_signed) {
    const __m128i v = _mm_load_si128(static_cast<const __m128i*>(p));
    return _mm512_cvtepi32_ps(is_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v));
}

// q4_K, q5_K and iq4_xs: chunk c is sub-block c; x * d * scale - dmin * min
// (iq4_xs: its levels + 128, the min 128 x its scale).
template <class P>
TACHYON_BF16 void block_bf16(const P& blk, uint16_t* out) {
    constexpr bool is_iq4 = std::is_same_v<P, iq4_xs_packed16>;
    const __m512 d = halves16(blk.d);
    __m512 dmin;
    if constexpr (is_iq4) dmin = _mm512_mul_ps(d, _mm512_set1_ps(128.0f));
    else dmin = halves16(blk.dmin);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
        __m512i q[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) q[k] = values512(blk, c, k);
        const __m512 s = _mm512_mul_ps(d, bytes16(blk.scales[c], is_iq4));
        const __m512 m = _mm512_mul_ps(dmin, pair_bytes16(blk.mins[c / 2], c % 2, is_iq4));
        chunk_bf16(q, s, m, s, m, out + c * 512);
    }
}

// q6_K: chunk c is sub-blocks 2c (values 0..15) and 2c + 1; x * d * scale - 32 * d * scale.
template <>
TACHYON_BF16 void block_bf16(const q6_k_packed16& blk, uint16_t* out) {
    const __m512 d = halves16(blk.d);
    const __m512 thirty_two = _mm512_set1_ps(32.0f);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
        __m512i q[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) q[k] = q6_values512(blk, 2 * c + k / 4, k % 4);
        const __m512 s0 = _mm512_mul_ps(d, bytes16(blk.scales[2 * c], true));
        const __m512 s1 = _mm512_mul_ps(d, bytes16(blk.scales[2 * c + 1], true));
        chunk_bf16(q, s0, _mm512_mul_ps(s0, thirty_two), s1, _mm512_mul_ps(s1, thirty_two), out + c * 512);
    }
}

template <class P>
TACHYON_BF16 void group_bf16(const std::byte* panels, int64_t n_cols, int64_t group, uint16_t* out) {
    const int64_t nb = n_cols / qk_k;
    const auto* blocks = reinterpret_cast<const P*>(panels) + group * nb;
    for (int64_t b = 0; b < nb; ++b) block_bf16(blocks[b], out + b * 8 * 512);
}

}  // namespace

void packed_group_bf16(tensor_type weight, const std::byte* panels, int64_t n_cols, int64_t group, uint16_t* out) {
    switch (weight) {
        case tensor_type::q4_k: return group_bf16<q4_k_packed16>(panels, n_cols, group, out);
        case tensor_type::q5_k: return group_bf16<q5_k_packed16>(panels, n_cols, group, out);
        case tensor_type::q6_k: return group_bf16<q6_k_packed16>(panels, n_cols, group, out);
        case tensor_type::iq4_xs: return group_bf16<iq4_xs_packed16>(panels, n_cols, group, out);
        default: TACHYON_ASSERT(false, "packed_group_bf16: not a packed type");
    }
}


// ---- AMX-INT8: batches of 8-16 tokens straight from the panels -----------------
//
// A verify step of a draft, a batch of 8 sequences, a short prompt. The
// packed kernels spend 8 dpbusd per sub-block and token (tokens512); here
// the tokens' q8_K activations are the A tile (token t's 32 bytes of a
// sub-block in row t), a sub-block of the panel is the B tile as its
// registers come (register k, 16 rows x 4 values, is tile row k), and one
// tile product gives the sub-block's sums for every token and row. The
// vector units keep the unpacking of the nibbles, a conversion and an FMA
// per token and sub-block (the rows' scales, one register for every
// token), and the mins term per block as in tokens512. Each sub-block's
// results must leave the tiles before its scale applies, so the tile unit
// spends a product and a store per 32 columns (per 64 up to 8 tokens)
// however few the tokens: on Sapphire Rapids this beats the packed kernels
// from about 8 tokens (kernels.cpp has the measurements and thresholds).

#define TACHYON_AMX_INT8 \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c,amx-tile,amx-int8")))

namespace {

// tmm0, tmm1: results (m rows x 16 weight rows, int32); tmm2, tmm3:
// activations (m rows x 32 s bytes); tmm4, tmm5: weights (8 s rows of 16
// weight rows x 4 values); s sub-blocks a product.
TACHYON_AMX_INT8 void configure_int8_tiles(int m, int s) {
    tile_config c;
    for (int i : {0, 1}) c.rows[i] = static_cast<uint8_t>(m), c.colsb[i] = 64;
    for (int i : {2, 3}) c.rows[i] = static_cast<uint8_t>(m), c.colsb[i] = static_cast<uint16_t>(32 * s);
    for (int i : {4, 5}) c.rows[i] = static_cast<uint8_t>(8 * s), c.colsb[i] = 64;
    memory_barrier(&c);  // _tile_loadconfig declares a read of 8 bytes only
    _tile_loadconfig(&c);
}

// One tile product into c, on tiles 0, 2, 4 or 1, 3, 5.
TACHYON_AMX_INT8 inline void product_on_tiles_0(const int8_t* x, long x_stride, const void* w, int32_t* c) {
    _tile_zero(0);
    _tile_loadd(2, x, x_stride);
    _tile_loadd(4, w, 64);
    _tile_dpbsud(0, 2, 4);
    _tile_stored(0, c, 64);
}
TACHYON_AMX_INT8 inline void product_on_tiles_1(const int8_t* x, long x_stride, const void* w, int32_t* c) {
    _tile_zero(1);
    _tile_loadd(3, x, x_stride);
    _tile_loadd(5, w, 64);
    _tile_dpbsud(1, 3, 5);
    _tile_stored(1, c, 64);
}

// A block's 8 sub-blocks as B tiles: register k of sub-block sb is row k
// (sub-blocks sb and sb + 1 one after the other: the 16 rows of a product
// of two).
template <class P>
TACHYON_AMX_INT8 inline void weight_tiles(const P& blk, uint8_t (&wt)[8][8][64]) {
    const char* ahead = reinterpret_cast<const char*>(&blk) + 8 * sizeof(P);
    for (int l = 0; l < static_cast<int>(sizeof(P) / 64); l += 2) _mm_prefetch(ahead + l * 64, _MM_HINT_T1);
#pragma GCC unroll 8
    for (int sb = 0; sb < 8; ++sb)
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) _mm512_store_si512(wt[sb][k], values512(blk, sb, k));
}

// Up to 8 tokens take two sub-blocks a product: the A tile's first NT rows
// hold sub-block 2p of each token in bytes 0..31 (zero after), the next NT
// sub-block 2p + 1 in bytes 32..63 (zero before), so result row j is
// sub-block 2p's sums and row NT + j sub-block 2p + 1's, for half the tile
// products and stores. Per call: [block][pair][2 NT rows][64 bytes].
struct alignas(64) tile_line {
    int8_t b[64];
};

template <int NT>
TACHYON_AMX_INT8 void pair_activations(const gemm_args& a, int64_t nb, std::vector<tile_line>& out) {
    out.resize(static_cast<size_t>(nb * 4 * 2 * NT));
    const __m256i zero = _mm256_setzero_si256();
    for (int j = 0; j < NT; ++j) {
        const auto* x = reinterpret_cast<const block_q8_k*>(a.x + j * a.x_row_bytes);
        for (int64_t b = 0; b < nb; ++b)
            for (int p = 0; p < 4; ++p) {
                tile_line* rows = out.data() + (b * 4 + p) * 2 * NT;
                const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 64 * p));
                const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 64 * p + 32));
                _mm512_store_si512(rows[j].b, _mm512_inserti64x4(_mm512_castsi256_si512(lo), zero, 1));
                _mm512_store_si512(rows[NT + j].b, _mm512_inserti64x4(_mm512_castsi256_si512(zero), hi, 1));
            }
    }
    memory_barrier(out.data());
}

// Tokens 0.. NT - 1 against group w (nb blocks) of rows r..; lanes outside
// `keep` are not stored; `pairs`: pair_activations (S = 2), else null. A
// tile load waits until the stores it reads have left the core, and the
// vector loads of a tile's results wait for its store: so the loop runs
// three blocks at once, the tile products of block b on the weights laid
// out in the pass before, the layout of block b + 1, and the scaling of
// block b - 1's results.
template <int NT, int S, class P>
__attribute__((noinline)) TACHYON_AMX_INT8 void tokens_int8(const gemm_args& a, const P* w, int64_t nb, int64_t r, __mmask16 keep,
                                                            const tile_line* pairs) {
    constexpr bool is_iq4 = std::is_same_v<P, iq4_xs_packed16>;
    constexpr int n_products = 8 / S;
    alignas(64) uint8_t wt[2][8][8][64];                // [block % 2][sub-block][register][16 rows x 4]
    alignas(64) int32_t c[2][n_products][S * NT][16];  // [block % 2][product][sub-block of it x token][row]
    const block_q8_k* x[NT];
    for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const block_q8_k*>(a.x + j * a.x_row_bytes);
    const auto stride = static_cast<long>(a.x_row_bytes);
    __m512 acc[NT];
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) acc[j] = _mm512_setzero_ps();
    // Block b's results into acc.
    const auto finish = [&](int64_t b) TACHYON_AMX_INT8 {
        const P& blk = w[b];
        memory_barrier(c[b % 2]);
        __m512 sc[8];
#pragma GCC unroll 8
        for (int sb = 0; sb < 8; ++sb) {
            const __m128i sc8 = _mm_load_si128(reinterpret_cast<const __m128i*>(blk.scales[sb]));
            sc[sb] = _mm512_cvtepi32_ps(is_iq4 ? _mm512_cvtepi8_epi32(sc8) : _mm512_cvtepu8_epi32(sc8));
        }
        __m512i mins[4];
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
            const __m256i m8 = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk.mins[p]));
            mins[p] = is_iq4 ? _mm512_cvtepi8_epi16(m8) : _mm512_cvtepu8_epi16(m8);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.d)));
        __m512 mw;
        if constexpr (is_iq4) mw = _mm512_mul_ps(dw, _mm512_set1_ps(128.0f));
        else mw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk.dmin)));
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) {
            __m512 sumf = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[b % 2][0][j])), sc[0]);
#pragma GCC unroll 8
            for (int sb = 1; sb < 8; ++sb)
                sumf = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[b % 2][sb / S][(sb % S) * NT + j])), sc[sb], sumf);
            // the token's sums over each sub-block of 32 (pairs of its bsums), two int16 per dword
            alignas(16) int32_t xsum[4];
            _mm_store_si128(reinterpret_cast<__m128i*>(xsum),
                            _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums)),
                                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[j][b].bsums + 8))));
            __m512i summ = _mm512_madd_epi16(mins[0], _mm512_set1_epi32(xsum[0]));
#pragma GCC unroll 4
            for (int p = 1; p < 4; ++p) summ = _mm512_dpwssd_epi32(summ, mins[p], _mm512_set1_epi32(xsum[p]));
            const __m512 dx = _mm512_set1_ps(x[j][b].d);
            acc[j] = _mm512_fmadd_ps(sumf, _mm512_mul_ps(dw, dx), acc[j]);
            acc[j] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(summ), _mm512_mul_ps(mw, dx), acc[j]);
        }
    };
    // The A tile of product p of block b and its row stride.
    const auto activations = [&](int64_t b, int p) -> const int8_t* {
        if constexpr (S == 2) return pairs[(b * 4 + p) * 2 * NT].b;
        else return x[0][b].qs + 32 * p;
    };
    const long a_stride = S == 2 ? 64 : stride;
    weight_tiles(w[0], wt[0]);
    for (int64_t b = 0; b < nb; ++b) {
        memory_barrier(wt[b % 2]);
#pragma GCC unroll 8
        for (int p = 0; p < n_products; p += 2) {
            product_on_tiles_0(activations(b, p), a_stride, wt[b % 2][S * p], c[b % 2][p][0]);
            product_on_tiles_1(activations(b, p + 1), a_stride, wt[b % 2][S * (p + 1)], c[b % 2][p + 1][0]);
        }
        if (b + 1 < nb) weight_tiles(w[b + 1], wt[(b + 1) % 2]);
        if (b > 0) finish(b - 1);
    }
    finish(nb - 1);
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(a.y + j * a.ldy + r, keep, acc[j]);
}

template <class P, int NT>
TACHYON_AMX_INT8 void rows_int8(const gemm_args& a, int64_t r0, int64_t r1) {
    constexpr int S = NT <= 8 ? 2 : 1;
    const int64_t nb = a.n_cols / qk_k;
    const auto* packed = reinterpret_cast<const P*>(a.panels);
    thread_local std::vector<tile_line> pairs;
    if constexpr (S == 2) pair_activations<NT>(a, nb, pairs);
    configure_int8_tiles(S * NT, S);
    for (int64_t r = r0; r < r1; r += 16) {
        const auto keep = static_cast<__mmask16>((1u << std::min<int64_t>(16, r1 - r)) - 1);
        tokens_int8<NT, S>(a, packed + r / 16 * nb, nb, r, keep, pairs.data());
    }
    _tile_release();
}

template <class P, int NT = packed_int8_max_tokens>
void gemm_packed_int8(const gemm_args& a, int64_t r0, int64_t r1) {
    if constexpr (NT >= packed_int8_min_tokens) {
        if (a.n_tokens == NT) return rows_int8<P, NT>(a, r0, r1);
        gemm_packed_int8<P, NT - 1>(a, r0, r1);
    } else {
        TACHYON_ASSERT(false, "gemm_packed_int8: a batch outside packed_int8_min_tokens..packed_int8_max_tokens");
    }
}

}  // namespace

gemm_fn packed_gemm_amx_int8(tensor_type weight) {
    switch (weight) {
        case tensor_type::q4_k: return gemm_packed_int8<q4_k_packed16>;
        case tensor_type::q5_k: return gemm_packed_int8<q5_k_packed16>;
        case tensor_type::iq4_xs: return gemm_packed_int8<iq4_xs_packed16>;
        default: return nullptr;
    }
}

}  // namespace tachyon::detail
