// The q8_0 / q4_0 matmul on AMX tiles (AMX-INT8): one tile multiply of
// 16 weight rows x 32 bytes by 32 bytes x 16 tokens gives one block's 256
// integer dot products, where AVX-512 spends 64 dpbusd. Each block has its
// own scales, so the int32 results are written out once per block and scaled
// into 16 float accumulators with AVX-512 (convert, scale product, FMA per 16
// sums) - the part that bounds the speed here.
//
// q8_0 weight rows load into a tile as they are, straight from the mapping,
// with the row size as the tile stride; q4_0 rows are unpacked to signed
// bytes per group of 16 rows first. The activations go once per call into the
// tile's "VNNI" order (row k/4 holds bytes 4(k/4)..4(k/4)+3 of each of 16
// tokens), zero-padded to whole tiles of 16 tokens.
//
// Rows that do not fill a group of 16, and batches too small to pay for the
// tile set-up, run the AVX-512 kernels.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "inference/kernels/amx_tiles.h"
#include "inference/kernels/kernels.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/kernels_transpose16.h"
#include "inference/gguf/quant.h"

#define TACHYON_AMX \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c,amx-tile,amx-int8")))

namespace tachyon::detail {
namespace {

constexpr int tile = 16;  // weight rows per A tile, tokens per B tile
// Below this many tokens the AVX-512 kernels win: a call pays for packing
// the tokens, converting the rows' scales (and unpacking q4_0 rows) and a
// token tile padded to 16 (measured on a 40M model, prompts of n tokens, AMX
// vs AVX-512: q8_0 n=3 0.9x, n=4 1.04x, n=5 1.56x, n=8 1.58x, n=32 3.4x;
// q4_0 n=3 0.7x, n=4 0.93x, n=5 1.26x, n=8 1.70x, n=32 3.2x).
constexpr int64_t min_tokens = 5;

// tmm0, tmm1: int32 results (16 weight rows x 16 tokens) of blocks b and
// b + 1; tmm2, tmm3: weights (16 rows x 32 bytes); tmm4, tmm5: activations
// (8 rows of 16 tokens x 4 bytes).
TACHYON_AMX void configure_tiles() {
    tile_config c;
    for (int i : {0, 1}) c.rows[i] = tile, c.colsb[i] = tile * 4;
    for (int i : {2, 3}) c.rows[i] = tile, c.colsb[i] = qk_32;
    for (int i : {4, 5}) c.rows[i] = qk_32 / 4, c.colsb[i] = tile * 4;
    memory_barrier(&c);  // _tile_loadconfig declares a read of 8 bytes only
    _tile_loadconfig(&c);
}

// The activations of up to 16 tokens in B-tile order, zero past the last
// token: per block, 8 rows of (16 tokens x 4 bytes), and the tokens' scales
// as floats.
struct packed_tokens {
    std::vector<int8_t> quants;  // [token tile][block][8][16 tokens][4]
    std::vector<float> scales;   // [token tile][block][16 tokens]
};

// Offsets of 16 rows of `stride` bytes.
TACHYON_AMX inline __m512i row_offsets(size_t stride) {
    return _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                              _mm512_set1_epi32(static_cast<int>(stride)));
}

// The fp16 scales at the start of a block in each of 16 rows, as floats
// (0 in the lanes `valid` leaves out).
TACHYON_AMX inline __m512 block_scales(const std::byte* first, __m512i rows, __mmask16 valid = 0xffff) {
    const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, rows, first, 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
}

TACHYON_AMX void pack_tokens(const gemm_args& a, int64_t n_blocks, packed_tokens& p) {
    const int64_t n_tiles = (a.n_tokens + tile - 1) / tile;
    p.quants.resize(static_cast<size_t>(n_tiles * n_blocks * qk_32 * tile));
    p.scales.resize(static_cast<size_t>(n_tiles * n_blocks * tile));
    const __m512i rows = row_offsets(a.x_row_bytes);
    for (int64_t i = 0; i < n_tiles; ++i) {
        const int64_t n = std::min<int64_t>(tile, a.n_tokens - i * tile);
        const auto valid = static_cast<__mmask16>((1u << n) - 1);
        const std::byte* x = a.x + i * tile * a.x_row_bytes;
        int8_t* q = p.quants.data() + i * n_blocks * qk_32 * tile;
        float* d = p.scales.data() + i * n_blocks * tile;
        for (int64_t b = 0; b < n_blocks; ++b) {
            const std::byte* block = x + b * sizeof(block_q8_0);
            _mm512_storeu_ps(d + b * tile, block_scales(block, rows, valid));
            for (int k4 = 0; k4 < qk_32 / 4; ++k4) {
                const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, rows,
                                                              block + offsetof(block_q8_0, qs) + 4 * k4, 1);
                _mm512_storeu_si512(q + (b * qk_32 / 4 + k4) * 64, v);
            }
        }
    }
    memory_barrier(p.quants.data());
}

// 16 weight rows as A tiles: where block b's 16 x 32 signed bytes are
// (`stride` apart), and the rows' scales as floats, [block][16 rows].
struct weight_rows {
    const std::byte* quants = nullptr;  // block b at quants + b * block_bytes
    size_t block_bytes = 0;
    size_t stride = 0;
    std::vector<float> scales;
    std::vector<int8_t> unpacked;  // q4_0: [16 rows][n_cols]
};

TACHYON_AMX void scales_of_rows(const gemm_args& a, int64_t r, int64_t n_blocks, size_t block_bytes, weight_rows& w) {
    w.scales.resize(static_cast<size_t>(n_blocks * tile));
    const __m512i rows = row_offsets(a.w_row_bytes);
    const std::byte* first = a.w + r * a.w_row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) _mm512_storeu_ps(w.scales.data() + b * tile, block_scales(first + b * block_bytes, rows));
}

// q8_0 rows load as they are.
TACHYON_AMX void rows_q8_0(const gemm_args& a, int64_t r, int64_t n_blocks, weight_rows& w) {
    scales_of_rows(a, r, n_blocks, sizeof(block_q8_0), w);
    w.quants = a.w + r * a.w_row_bytes + offsetof(block_q8_0, qs);
    w.block_bytes = sizeof(block_q8_0);
    w.stride = a.w_row_bytes;
}

// q4_0 rows are unpacked to signed bytes, four rows per register: element
// j < 16 of a block is the low nibble of byte j, element j + 16 its high one.
TACHYON_AMX void rows_q4_0(const gemm_args& a, int64_t r, int64_t n_blocks, weight_rows& w) {
    scales_of_rows(a, r, n_blocks, sizeof(block_q4_0), w);
    const int64_t n_cols = a.n_cols;
    w.unpacked.resize(static_cast<size_t>(tile * n_cols));
    const __m512i low = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
    // [lo0 hi0 lo1 hi1] and [lo2 hi2 lo3 hi3] in 128-bit lanes (qwords 8+ pick from hi)
    const __m512i rows01 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), rows23 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    for (int i = 0; i < tile; i += 4) {
        const std::byte* src[4];
        for (int k = 0; k < 4; ++k) src[k] = a.w + (r + i + k) * a.w_row_bytes + offsetof(block_q4_0, qs);
        int8_t* dst = w.unpacked.data() + i * n_cols;
        for (int64_t b = 0; b < n_blocks; ++b) {
            const size_t o = b * sizeof(block_q4_0);
            __m512i q = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src[0] + o)));
            q = _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[1] + o)), 1);
            q = _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[2] + o)), 2);
            q = _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[3] + o)), 3);
            const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(q, low), eight);
            const __m512i hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(q, 4), low), eight);
            const __m512i r01 = _mm512_permutex2var_epi64(lo, rows01, hi), r23 = _mm512_permutex2var_epi64(lo, rows23, hi);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + b * qk_32), _mm512_castsi512_si256(r01));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + n_cols + b * qk_32), _mm512_extracti64x4_epi64(r01, 1));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * n_cols + b * qk_32), _mm512_castsi512_si256(r23));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 3 * n_cols + b * qk_32), _mm512_extracti64x4_epi64(r23, 1));
        }
    }
    memory_barrier(w.unpacked.data());
    w.quants = reinterpret_cast<const std::byte*>(w.unpacked.data());
    w.block_bytes = qk_32;
    w.stride = static_cast<size_t>(n_cols);
}

// Adds block b's int32 results (c: 16 rows x 16 tokens) times the scale
// products into acc (row i's 16 tokens in acc[i]).
TACHYON_AMX inline void scale_into(__m512 (&acc)[tile], const int32_t* c, const float* dw, __m512 dx) {
#pragma GCC unroll 16
    for (int i = 0; i < tile; ++i) {
        const __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512(c + i * tile));
        acc[i] = _mm512_fmadd_ps(s, _mm512_mul_ps(dx, _mm512_set1_ps(dw[i])), acc[i]);
    }
}

// One block's tile multiply, written to c: on tiles 0, 2, 4 or on 1, 3, 5
// (tile numbers are part of the instruction).
TACHYON_AMX inline void block_on_tiles_0(const std::byte* w, long w_stride, const int8_t* x, int32_t* c) {
    _tile_zero(0);
    _tile_loadd(2, w, w_stride);
    _tile_loadd(4, x, 64);
    _tile_dpbssd(0, 2, 4);
    _tile_stored(0, c, 64);
}
TACHYON_AMX inline void block_on_tiles_1(const std::byte* w, long w_stride, const int8_t* x, int32_t* c) {
    _tile_zero(1);
    _tile_loadd(3, w, w_stride);
    _tile_loadd(5, x, 64);
    _tile_dpbssd(1, 3, 5);
    _tile_stored(1, c, 64);
}

// Rows r.. r + 15 against token tile `i` (tokens 16i.., n of them). The
// tile multiplies run two blocks ahead of the scaling: a block's results
// take a while to come back from the tiles, and the scaling of the two
// before it fills that time.
TACHYON_AMX void tile_rows(const gemm_args& a, const weight_rows& w, const packed_tokens& x, int64_t n_blocks, int64_t r,
                           int64_t i, int64_t n) {
    alignas(64) int32_t c[4][tile * tile];  // block b's results in c[b % 4]
    __m512 acc[tile];
#pragma GCC unroll 16
    for (int k = 0; k < tile; ++k) acc[k] = _mm512_setzero_ps();
    const int8_t* xq = x.quants.data() + i * n_blocks * qk_32 * tile;
    const float* dx = x.scales.data() + i * n_blocks * tile;
    const float* dw = w.scales.data();
    const auto stride = static_cast<long>(w.stride);
    const auto scale = [&](int64_t b) TACHYON_AMX { scale_into(acc, c[b % 4], dw + b * tile, _mm512_loadu_ps(dx + b * tile)); };
    int64_t b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
        block_on_tiles_0(w.quants + b * w.block_bytes, stride, xq + b * (qk_32 * tile), c[b % 4]);
        if (b >= 2) scale(b - 2);
        block_on_tiles_1(w.quants + (b + 1) * w.block_bytes, stride, xq + (b + 1) * (qk_32 * tile), c[(b + 1) % 4]);
        if (b >= 2) scale(b - 1);
    }
    if (b < n_blocks) block_on_tiles_0(w.quants + b * w.block_bytes, stride, xq + b * (qk_32 * tile), c[b % 4]);
    for (int64_t k = std::max<int64_t>(0, b - 2); k < n_blocks; ++k) scale(k);
    transpose16(acc);
    float* y = a.y + i * tile * a.ldy + r;
    for (int64_t t = 0; t < n; ++t) _mm512_storeu_ps(y + t * a.ldy, acc[t]);
}

template <tensor_type T>
TACHYON_AMX void gemm_amx(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens < min_tokens) return avx512_kernels(T)->gemm(a, r0, r1);
    const int64_t n_blocks = a.n_cols / qk_32;
    const int64_t n_tiles = (a.n_tokens + tile - 1) / tile;
    const int64_t r_full = r0 + (r1 - r0) / tile * tile;
    thread_local packed_tokens x;
    thread_local weight_rows w;
    pack_tokens(a, n_blocks, x);
    configure_tiles();
    for (int64_t r = r0; r < r_full; r += tile) {
        if constexpr (T == tensor_type::q8_0) rows_q8_0(a, r, n_blocks, w);
        else rows_q4_0(a, r, n_blocks, w);
        for (int64_t i = 0; i < n_tiles; ++i) tile_rows(a, w, x, n_blocks, r, i, std::min<int64_t>(tile, a.n_tokens - i * tile));
    }
    _tile_release();
    // The last rows (fewer than 16), every token.
    if (r_full < r1) avx512_kernels(T)->gemm(a, r_full, r1);
}

// ---- f16 / bf16 weights on AMX-BF16 tiles ----------------------------------
//
// A float matmul of 32 tokens and more multiplies bf16 tiles: the tokens'
// activations are the A tiles (16 tokens x 32 columns), the weights the B
// tiles (16 pairs of columns x 16 rows), so a result tile is 16 tokens x 16
// rows of y as it is laid out. Every f32 activation is split into a bf16
// high part and a bf16 remainder; an f16 weight is exactly the sum of two
// bf16 (its 11 significant bits are 8 + 3), a bf16 weight is one. Three
// tile products (x_hi·w_hi + x_hi·w_lo + x_lo·w_hi; two for bf16) then give
// each product to about 2^-17 of its size, and the tiles accumulate in f32.

#define TACHYON_AMX_BF16 \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16,avx2,fma,f16c,amx-tile,amx-bf16")))

// Below this many tokens the AVX-512 kernels run: a call splits the
// activations and converts each group of 16 rows, which a few token tiles
// do not pay for.
constexpr int64_t min_tokens_bf16 = 32;

// x = hi + lo for 32 values (x0: the first 16, x1: the next), as 32 bf16 each.
TACHYON_AMX_BF16 inline void split32(__m512 x0, __m512 x1, __m512i& hi, __m512i& lo) {
    hi = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
    const __m512 h0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(hi)), 16));
    const __m512 h1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(hi, 1)), 16));
    lo = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0)));
}

// The activations as A tiles: [tokens rounded up to 16][n_cols] bf16, hi and lo.
struct split_tokens {
    std::vector<uint16_t> hi, lo;
};

TACHYON_AMX_BF16 void split_activations(const gemm_args& a, split_tokens& x) {
    const int64_t n_rows = (a.n_tokens + tile - 1) / tile * tile;
    x.hi.resize(static_cast<size_t>(n_rows * a.n_cols));
    x.lo.resize(x.hi.size());
    for (int64_t t = 0; t < n_rows; ++t) {
        uint16_t* hi = x.hi.data() + t * a.n_cols;
        uint16_t* lo = x.lo.data() + t * a.n_cols;
        if (t >= a.n_tokens) {
            std::fill(hi, hi + a.n_cols, uint16_t{0});
            std::fill(lo, lo + a.n_cols, uint16_t{0});
            continue;
        }
        const float* row = reinterpret_cast<const float*>(a.x + t * a.x_row_bytes);
        for (int64_t k = 0; k < a.n_cols; k += 32) {
            __m512i h, l;
            split32(_mm512_loadu_ps(row + k), _mm512_loadu_ps(row + k + 16), h, l);
            _mm512_storeu_si512(hi + k, h);
            _mm512_storeu_si512(lo + k, l);
        }
    }
}

// Rows r.. r + 15 as B tiles, per 32 columns a hi and a lo tile: row i of a
// tile holds columns 2i, 2i + 1 of each of the 16 rows.
template <tensor_type T>
TACHYON_AMX_BF16 void weight_tiles(const gemm_args& a, int64_t r, uint16_t* w) {
    const int64_t n_chunks = a.n_cols / 32;
    for (int64_t c = 0; c < n_chunks; ++c) {
        __m512 h[tile], l[tile];
#pragma GCC unroll 16
        for (int n = 0; n < tile; ++n) {
            const auto* row = reinterpret_cast<const uint16_t*>(a.w + (r + n) * a.w_row_bytes) + 32 * c;
            __m512 x0, x1;
            if constexpr (T == tensor_type::f16) {
                x0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row)));
                x1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16)));
            } else {
                x0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row))), 16));
                x1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16))), 16));
            }
            __m512i hi, lo;
            split32(x0, x1, hi, lo);
            h[n] = _mm512_castsi512_ps(hi);
            l[n] = _mm512_castsi512_ps(lo);
        }
        transpose16(h);  // dword i of row n (columns 2i, 2i + 1) -> row i, lane n
        uint16_t* out = w + c * 2 * 512;
#pragma GCC unroll 16
        for (int i = 0; i < tile; ++i) _mm512_storeu_ps(reinterpret_cast<float*>(out + i * 32), h[i]);
        if constexpr (T == tensor_type::f16) {
            transpose16(l);
#pragma GCC unroll 16
            for (int i = 0; i < tile; ++i) _mm512_storeu_ps(reinterpret_cast<float*>(out + 512 + i * 32), l[i]);
        }
    }
}

// All eight tiles 16 rows x 64 bytes (16 x 32 bf16 operands, 16 x 16 f32 results).
TACHYON_AMX_BF16 void configure_bf16_tiles() {
    tile_config c;
    for (int i = 0; i < 8; ++i) c.rows[i] = tile, c.colsb[i] = 64;
    memory_barrier(&c);
    _tile_loadconfig(&c);
}

// Writes the result tile of tokens t.. t + 15 to y (y[token * ldy + row]):
// straight from the tile when all 16 tokens are there, else through a
// buffer, of which the tokens there are copied out.
template <class WriteTile>
TACHYON_AMX_BF16 void store_token_tile(const gemm_args& a, float* y, int64_t t, WriteTile write_tile) {
    const int64_t n = std::min<int64_t>(tile, a.n_tokens - t);
    if (n == tile) return write_tile(y + t * a.ldy, static_cast<long>(a.ldy) * 4);
    alignas(64) float part[tile][tile];
    write_tile(&part[0][0], static_cast<long>(tile) * 4);
    memory_barrier(part);
    for (int64_t i = 0; i < n; ++i) std::copy(part[i], part[i] + tile, y + (t + i) * a.ldy);
}

template <tensor_type T>
TACHYON_AMX_BF16 void gemm_amx_float(const gemm_args& a, int64_t r0, int64_t r1) {
    static const bool has_bf16 = cpu_has_amx_bf16();
    if (!has_bf16 || a.n_tokens < min_tokens_bf16 || a.n_cols % 32 != 0) return avx512_kernels(T)->gemm(a, r0, r1);
    const int64_t r_full = r0 + (r1 - r0) / tile * tile;
    const int64_t n_chunks = a.n_cols / 32, n_pad = (a.n_tokens + tile - 1) / tile * tile;
    const long x_stride = static_cast<long>(a.n_cols) * 2;
    thread_local split_tokens x;
    thread_local std::vector<uint16_t> w;
    split_activations(a, x);
    configure_bf16_tiles();
    memory_barrier(x.hi.data());
    // tmm0, tmm1: results of tokens t.. t + 15 and t + 16.. t + 31; tmm2-5:
    // their activations (hi, lo); tmm6, tmm7: the weights (hi, lo).
    const auto store = [&](float* y, int64_t t, auto write_tile) TACHYON_AMX_BF16 { store_token_tile(a, y, t, write_tile); };
    // Every row group's tiles first, then 32 tokens at a time against all of
    // them: the tokens' tiles stay in L1 while the weights stream from L2
    // (the other order reads each token tile again from L2 for every group).
    const int64_t group_elems = n_chunks * 2 * 512;
    w.resize(static_cast<size_t>((r_full - r0) / tile * group_elems));
    for (int64_t r = r0; r < r_full; r += tile) weight_tiles<T>(a, r, w.data() + (r - r0) / tile * group_elems);
    memory_barrier(w.data());
    for (int64_t t = 0; t < n_pad; t += 2 * tile) {
        const bool two = t + tile < n_pad;
        for (int64_t r = r0; r < r_full; r += tile) {
            const uint16_t* wg = w.data() + (r - r0) / tile * group_elems;
            _tile_zero(0);
            _tile_zero(1);
            for (int64_t c = 0; c < n_chunks; ++c) {
                const uint16_t* wc = wg + c * 2 * 512;
                _tile_loadd(6, wc, 64);
                if constexpr (T == tensor_type::f16) _tile_loadd(7, wc + 512, 64);
                _tile_loadd(2, x.hi.data() + t * a.n_cols + 32 * c, x_stride);
                _tile_loadd(3, x.lo.data() + t * a.n_cols + 32 * c, x_stride);
                _tile_dpbf16ps(0, 2, 6);
                if constexpr (T == tensor_type::f16) _tile_dpbf16ps(0, 2, 7);
                _tile_dpbf16ps(0, 3, 6);
                if (two) {
                    _tile_loadd(4, x.hi.data() + (t + tile) * a.n_cols + 32 * c, x_stride);
                    _tile_loadd(5, x.lo.data() + (t + tile) * a.n_cols + 32 * c, x_stride);
                    _tile_dpbf16ps(1, 4, 6);
                    if constexpr (T == tensor_type::f16) _tile_dpbf16ps(1, 4, 7);
                    _tile_dpbf16ps(1, 5, 6);
                }
            }
            float* y = a.y + r;
            store(y, t, [](float* p, long stride) TACHYON_AMX_BF16 { _tile_stored(0, p, stride); });
            if (two) store(y, t + tile, [](float* p, long stride) TACHYON_AMX_BF16 { _tile_stored(1, p, stride); });
        }
    }
    _tile_release();
    if (r_full < r1) avx512_kernels(T)->gemm(a, r_full, r1);
}


// ---- quantized weights on AMX-BF16 tiles ------------------------------------
//
// Prompts of the quantized types: each pair of 16-row groups is dequantized
// once per call into bf16 A tiles (the block scales and mins folded into
// every weight; a row's values are a tile row as they come, so nothing is
// transposed per weight), the tokens' q8_0 / q8_1 / q8_K activations once
// into bf16 B tiles, and the tiles accumulate in f32 over the whole row: no
// per-block work is left between the tile products. The results (rows x
// tokens) are transposed into y once per row group. The AMX-INT8 tiles
// above need each block's int32 results scaled out with AVX-512 (16
// conversions, products and FMAs per 256 results), which bounds them at
// about the AVX-512 kernels' speed: measured on a Xeon (Sapphire Rapids, 1
// core), 4864 x 896 q4_0 times 256 tokens 7.1 ms on the AMX-INT8 tiles and
// 7.2 ms on AVX-512. The k-quants' AVX-512 tiles (kernels_avx512_kquants.cpp)
// spend a maddubs and a dpwssd per 32 quants and two tokens besides the
// unpacking: 8960 x 1536 q4_K times 256 tokens 60.9 ms there, about 15 ms
// here. Two row groups and two token tiles share each step's four tile
// loads (2 x 2 results).
//
// Weights in B tiles (the activations in A) need a 16 x 16 transposition
// per 32 columns of every row group: the same q4_K matmul dequantized in
// 3.5 ms instead of 1.9. Their tile products ran about 20 % faster from 128
// tokens on, but prompts of 32 and 64 tokens of a Qwen2.5-1.5B-shaped Q4_K_M
// file 25 % and 17 % slower (`tachyon bench decode -p 32` / `-p 64`); a
// loop over columns in blocks of 256 or 1024 (the results reloaded per
// block) ran slower in both layouts.
//
// A bf16 weight keeps 8 significant bits of its value (q8_0: d * q has up to
// 18; the k-quants: d * scale * q - dmin * min) and a bf16 activation 8 of
// the q8 activation's value: each product to about 2^-8 of its size, the
// accumulation in f32. The activations themselves round to 2^-8 of their
// block's largest value, so the results stay about as close to the float
// ones as the integer kernels' (the conformance tests hold every level to
// the same bound).

// 32 floats (lo: elements 0-15, hi: 16-31) as 32 bf16, element j in word j.
TACHYON_AMX_BF16 inline __m512i bf16_of(__m512 lo, __m512 hi) { return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)); }

TACHYON_AMX_BF16 inline __m512 floats_u8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q)); }
TACHYON_AMX_BF16 inline __m512 floats_i8(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }

// 32 unsigned bytes q as bf16 of q * s - m.
TACHYON_AMX_BF16 inline __m512i scaled_u8(__m256i q, __m512 s, __m512 m) {
    return bf16_of(_mm512_fmsub_ps(floats_u8(_mm256_castsi256_si128(q)), s, m),
                   _mm512_fmsub_ps(floats_u8(_mm256_extracti128_si256(q, 1)), s, m));
}

// The 32 nibbles of 16 bytes in q4_0's order: element j < 16 the low nibble
// of byte j, element j + 16 its high one.
TACHYON_AMX_BF16 inline __m256i nibbles32(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)), low = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
}

// q5_0 / q5_1: the nibbles with bit 4 of element j from bit j of qh.
TACHYON_AMX_BF16 inline __m256i five_bits32(const uint8_t* qs, const uint8_t* qh) {
    uint32_t h;
    std::memcpy(&h, qh, 4);
    return _mm256_or_si256(nibbles32(qs), _mm256_maskz_mov_epi8(h, _mm256_set1_epi8(0x10)));
}

// How the blocks of a weight type become bf16: `cols` values per block;
// chunks() writes a block's values 32 per register (element j of a chunk in
// word j), in the row's order; `activation` is the block of its activations.
template <tensor_type T>
struct bf16_rows;

template <>
struct bf16_rows<tensor_type::q8_0> {
    using activation = block_q8_0;
    using block = block_q8_0;
    static constexpr int cols = qk_32;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(b.d));
        out[0] = bf16_of(_mm512_mul_ps(floats_i8(_mm256_castsi256_si128(q)), d), _mm512_mul_ps(floats_i8(_mm256_extracti128_si256(q, 1)), d));
    }
};

template <>
struct bf16_rows<tensor_type::q4_0> {
    using activation = block_q8_0;
    using block = block_q4_0;
    static constexpr int cols = qk_32;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        const float d = _cvtsh_ss(b.d);
        out[0] = scaled_u8(nibbles32(b.qs), _mm512_set1_ps(d), _mm512_set1_ps(8.0f * d));
    }
};

template <>
struct bf16_rows<tensor_type::q4_1> {
    using activation = block_q8_1;
    using block = block_q4_1;
    static constexpr int cols = qk_32;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        out[0] = scaled_u8(nibbles32(b.qs), _mm512_set1_ps(_cvtsh_ss(b.d)), _mm512_set1_ps(-_cvtsh_ss(b.m)));
    }
};

template <>
struct bf16_rows<tensor_type::q5_0> {
    using activation = block_q8_0;
    using block = block_q5_0;
    static constexpr int cols = qk_32;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        const float d = _cvtsh_ss(b.d);
        out[0] = scaled_u8(five_bits32(b.qs, b.qh), _mm512_set1_ps(d), _mm512_set1_ps(16.0f * d));
    }
};

template <>
struct bf16_rows<tensor_type::q5_1> {
    using activation = block_q8_1;
    using block = block_q5_1;
    static constexpr int cols = qk_32;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        out[0] = scaled_u8(five_bits32(b.qs, b.qh), _mm512_set1_ps(_cvtsh_ss(b.d)), _mm512_set1_ps(-_cvtsh_ss(b.m)));
    }
};

// iq4_nl and iq4_xs: each nibble picks one of 16 levels (pshufb on the table).
TACHYON_AMX_BF16 inline __m512i levels_scaled(const uint8_t* qs, float d) {
    const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)), low = _mm_set1_epi8(0x0f);
    const __m512 vd = _mm512_set1_ps(d);
    return bf16_of(_mm512_mul_ps(floats_i8(_mm_shuffle_epi8(levels, _mm_and_si128(q, low))), vd),
                   _mm512_mul_ps(floats_i8(_mm_shuffle_epi8(levels, _mm_and_si128(_mm_srli_epi16(q, 4), low))), vd));
}

template <>
struct bf16_rows<tensor_type::iq4_nl> {
    using activation = block_q8_0;
    using block = block_iq4_nl;
    static constexpr int cols = qk_32;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) { out[0] = levels_scaled(b.qs, _cvtsh_ss(b.d)); }
};

template <>
struct bf16_rows<tensor_type::iq4_xs> {
    using activation = block_q8_k;
    using block = block_iq4_xs;
    static constexpr int cols = qk_k;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        const float d = _cvtsh_ss(b.d);
#pragma GCC unroll 8
        for (int s = 0; s < qk_k / 32; ++s) out[s] = levels_scaled(b.qs + 16 * s, d * static_cast<float>(iq4_xs_scale(b, s) - 32));
    }
};

// q4_K / q5_K: sub-block 2g in the low nibbles of qs[32g..32g + 31], 2g + 1
// in the high ones; q5_K's bit 4 of sub-block j in bit j of qh[l].
template <bool FiveBits>
struct q45_k_bf16 {
    using activation = block_q8_k;
    using block = std::conditional_t<FiveBits, block_q5_k, block_q4_k>;
    static constexpr int cols = qk_k;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        uint8_t sm[16];  // scales, then mins
        q4_k_unpack_scales(b.scales, sm);
        const float d = _cvtsh_ss(b.d), dmin = _cvtsh_ss(b.dmin);
        const __m256i low = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
        __m256i qh = _mm256_setzero_si256();
        if constexpr (FiveBits) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * g));
            __m256i lo = _mm256_and_si256(q, low), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low);
            if constexpr (FiveBits) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4));
            }
            out[2 * g] = scaled_u8(lo, _mm512_set1_ps(d * sm[2 * g]), _mm512_set1_ps(dmin * sm[8 + 2 * g]));
            out[2 * g + 1] = scaled_u8(hi, _mm512_set1_ps(d * sm[2 * g + 1]), _mm512_set1_ps(dmin * sm[9 + 2 * g]));
        }
    }
};
template <>
struct bf16_rows<tensor_type::q4_k> : q45_k_bf16<false> {};
template <>
struct bf16_rows<tensor_type::q5_k> : q45_k_bf16<true> {};

// q6_K: per half of 128, value 32k + l (k = 0..3, l = 0..31) has its low 4
// bits in nibble k / 2 of ql[l + 32 (k % 2)], its high 2 in bits 2k, 2k + 1
// of qh[l], and the scale of 16 values scales[l / 16 + 2k].
template <>
struct bf16_rows<tensor_type::q6_k> {
    using activation = block_q8_k;
    using block = block_q6_k;
    static constexpr int cols = qk_k;
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        const float d = _cvtsh_ss(b.d);
        const __m256i low = _mm256_set1_epi8(0x0f), three = _mm256_set1_epi8(3);
        const __m512 offset = _mm512_set1_ps(32.0f);
        const auto load = [](const uint8_t* p) TACHYON_AMX_BF16 { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
        const auto high2 = [&](__m256i qh, int shift) TACHYON_AMX_BF16 {
            return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), three), 4);
        };
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i ql0 = load(b.ql + 64 * h), ql1 = load(b.ql + 64 * h + 32), qh = load(b.qh + 32 * h);
            const __m256i q[4] = {_mm256_or_si256(_mm256_and_si256(ql0, low), high2(qh, 0)),
                                  _mm256_or_si256(_mm256_and_si256(ql1, low), high2(qh, 2)),
                                  _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low), high2(qh, 4)),
                                  _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low), high2(qh, 6))};
            const int8_t* sc = b.scales + 8 * h;
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m512 v0 = _mm512_sub_ps(floats_u8(_mm256_castsi256_si128(q[k])), offset);
                const __m512 v1 = _mm512_sub_ps(floats_u8(_mm256_extracti128_si256(q[k], 1)), offset);
                out[4 * h + k] = bf16_of(_mm512_mul_ps(v0, _mm512_set1_ps(d * sc[2 * k])), _mm512_mul_ps(v1, _mm512_set1_ps(d * sc[2 * k + 1])));
            }
        }
    }
};

// Below this many tokens the type's other kernels run: a call dequantizes
// every row group once, which a few token tiles do not pay for. q8_0 / q4_0
// hand on to the AMX-INT8 tiles, the others to the AVX-512 kernels.
// Measured on a Xeon (Sapphire Rapids, 1 core, `tachyon bench matmul -t 1
// --mib 32 --no-bandwidth`), us per matmul, bf16 tiles against the other
// kernels: 8960 x 1536 q4_K at 8 tokens 3236 / 1696, 16 3124 / 3621, 32
// 3431 / 8220 (q5_K and q6_K alike; iq4_xs 2355 / 2886 at 8); 4864 x 896
// q4_0 at 64 tokens 1408 / 1548 (AMX-INT8), 128 2904 / 2772; q4_1 64 1674 /
// 1875, 96 2321 / 2699, 128 3261 / 3559 (q5_0 and iq4_nl alike, within the
// noise from 128 on).
template <tensor_type T>
constexpr int64_t min_tokens_dequant = T == tensor_type::q8_0 || T == tensor_type::q4_0 ? 96
                                       : bf16_rows<T>::cols == qk_32                    ? 64
                                                                                        : 16;

// Rows r.. r + n - 1 (n <= 32) as A tiles, one per row group and 32
// columns, 16 rows of 32 bf16 each: chunk c of group g at (g * n_cols / 32
// + c) * 512. No transposition: a row's values are a tile row as they come.
template <tensor_type T>
TACHYON_AMX_BF16 void dequant_rows(const gemm_args& a, int64_t r, int n, uint16_t* w) {
    using R = bf16_rows<T>;
    constexpr int n_chunks = R::cols / 32;
    const int64_t n_blocks = a.n_cols / R::cols;
    for (int i = 0; i < n; ++i) {
        const auto* row = reinterpret_cast<const typename R::block*>(a.w + (r + i) * a.w_row_bytes);
        uint16_t* out = w + (i / tile) * a.n_cols * tile + (i % tile) * 32;
        for (int64_t b = 0; b < n_blocks; ++b) {
            __m512i v[n_chunks];
            R::chunks(row[b], v);
#pragma GCC unroll 8
            for (int c = 0; c < n_chunks; ++c) _mm512_storeu_si512(out + (b * n_chunks + c) * 512, v[c]);
        }
    }
}

// One token's activations (q8_0, q8_1 or q8_K blocks) as bf16 of d * q.
template <class A>
TACHYON_AMX_BF16 void activations_bf16(const std::byte* x, int64_t n_cols, uint16_t* out) {
    constexpr int64_t cols = sizeof(A::qs);
    for (int64_t b = 0; b < n_cols / cols; ++b) {
        const A& xb = reinterpret_cast<const A*>(x)[b];
        float d;
        if constexpr (std::is_same_v<A, block_q8_k>) d = xb.d;
        else d = _cvtsh_ss(xb.d);
        const __m512 vd = _mm512_set1_ps(d);
#pragma GCC unroll 8
        for (int64_t c = 0; c < cols / 32; ++c) {
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs + 32 * c));
            _mm512_storeu_si512(out + b * cols + 32 * c, bf16_of(_mm512_mul_ps(floats_i8(_mm256_castsi256_si128(q)), vd),
                                                                 _mm512_mul_ps(floats_i8(_mm256_extracti128_si256(q, 1)), vd)));
        }
    }
}

// The type's kernels for a batch the bf16 tiles do not take.
template <tensor_type T>
void gemm_below_dequant(const gemm_args& a, int64_t r0, int64_t r1) {
    if constexpr (T == tensor_type::q8_0 || T == tensor_type::q4_0) gemm_amx<T>(a, r0, r1);
    else avx512_kernels(T)->gemm(a, r0, r1);
}

// The activations as B tiles, [token tile][32 columns][16 pairs][16
// tokens x 2]: row i of a tile holds columns 2i, 2i + 1 of each of 16
// tokens, zero past the last token.
template <class A>
TACHYON_AMX_BF16 void activation_tiles(const gemm_args& a, std::vector<uint16_t>& rows, std::vector<uint16_t>& tiles) {
    const int64_t n_tiles = (a.n_tokens + tile - 1) / tile, n_chunks = a.n_cols / 32;
    rows.resize(static_cast<size_t>(tile * a.n_cols));
    tiles.resize(static_cast<size_t>(n_tiles * n_chunks * 512));
    for (int64_t i = 0; i < n_tiles; ++i) {
        const int64_t n = std::min<int64_t>(tile, a.n_tokens - i * tile);
        for (int64_t t = 0; t < tile; ++t) {
            uint16_t* row = rows.data() + t * a.n_cols;
            if (t < n) activations_bf16<A>(a.x + (i * tile + t) * a.x_row_bytes, a.n_cols, row);
            else std::fill(row, row + a.n_cols, uint16_t{0});
        }
        memory_barrier(rows.data());
        for (int64_t c = 0; c < n_chunks; ++c) {
            __m512 h[tile];
#pragma GCC unroll 16
            for (int t = 0; t < tile; ++t) h[t] = _mm512_loadu_ps(reinterpret_cast<const float*>(rows.data() + t * a.n_cols + 32 * c));
            transpose16(h);  // dword k of token t (columns 2k, 2k + 1) -> row k, lane t
            uint16_t* out = tiles.data() + (i * n_chunks + c) * 512;
#pragma GCC unroll 16
            for (int k = 0; k < tile; ++k) _mm512_storeu_ps(reinterpret_cast<float*>(out + k * 32), h[k]);
        }
    }
}

template <tensor_type T>
TACHYON_AMX_BF16 void gemm_amx_dequant(const gemm_args& a, int64_t r0, int64_t r1) {
    static const bool has_bf16 = cpu_has_amx_bf16();
    using A = typename bf16_rows<T>::activation;
    constexpr int64_t x_cols = sizeof(A::qs);
    if (!has_bf16 || a.n_tokens < min_tokens_dequant<T> || a.x_row_bytes != static_cast<size_t>(a.n_cols / x_cols) * sizeof(A))
        return gemm_below_dequant<T>(a, r0, r1);
    const int64_t n_pad = (a.n_tokens + tile - 1) / tile * tile, n_chunks = a.n_cols / 32;
    const int64_t r_full = r0 + (r1 - r0) / tile * tile;
    thread_local std::vector<uint16_t> x_rows, x, w;
    thread_local std::vector<float> acc;  // results, [2 row groups][16 rows][n_pad tokens]
    activation_tiles<A>(a, x_rows, x);
    w.resize(static_cast<size_t>(2 * tile * a.n_cols));
    acc.resize(static_cast<size_t>(2 * tile * n_pad));
    configure_bf16_tiles();
    memory_barrier(x.data());
    const long acc_stride = static_cast<long>(n_pad) * 4;
    float* const acc0 = acc.data();
    float* const acc1 = acc.data() + tile * n_pad;
    const uint16_t* const w1 = w.data() + n_chunks * 512;
    // tmm0-3: results (rows r / r + 16 x tokens t / t + 16); tmm4, tmm5: the
    // two row groups; tmm6, tmm7: the two token tiles. The products that
    // share a row group run back to back.
    for (int64_t r = r0; r < r_full; r += 2 * tile) {
        const bool g2 = r + tile < r_full;
        dequant_rows<T>(a, r, g2 ? 2 * tile : tile, w.data());
        memory_barrier(w.data());
        for (int64_t t = 0; t < n_pad; t += 2 * tile) {
            const bool t2 = t + tile < n_pad;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            const uint16_t* xt = x.data() + (t / tile) * n_chunks * 512;
            for (int64_t c = 0; c < n_chunks; ++c) {
                _tile_loadd(4, w.data() + c * 512, 64);
                _tile_loadd(6, xt + c * 512, 64);
                if (t2) _tile_loadd(7, xt + (n_chunks + c) * 512, 64);
                _tile_dpbf16ps(0, 4, 6);
                if (t2) _tile_dpbf16ps(1, 4, 7);
                if (g2) {
                    _tile_loadd(5, w1 + c * 512, 64);
                    _tile_dpbf16ps(2, 5, 6);
                    if (t2) _tile_dpbf16ps(3, 5, 7);
                }
            }
            _tile_stored(0, acc0 + t, acc_stride);
            if (t2) _tile_stored(1, acc0 + t + tile, acc_stride);
            if (g2) _tile_stored(2, acc1 + t, acc_stride);
            if (g2 && t2) _tile_stored(3, acc1 + t + tile, acc_stride);
        }
        memory_barrier(acc.data());
        // [row][token] -> y[token][row], the tokens there.
        for (int g = 0; g < (g2 ? 2 : 1); ++g) {
            const float* rows = acc.data() + g * tile * n_pad;
            for (int64_t t = 0; t < n_pad; t += tile) {
                __m512 v[tile];
#pragma GCC unroll 16
                for (int i = 0; i < tile; ++i) v[i] = _mm512_loadu_ps(rows + i * n_pad + t);
                transpose16(v);
                const int64_t n = std::min<int64_t>(tile, a.n_tokens - t);
                for (int64_t j = 0; j < n; ++j) _mm512_storeu_ps(a.y + (t + j) * a.ldy + r + g * tile, v[j]);
            }
        }
    }
    _tile_release();
    if (r_full < r1) avx512_kernels(T)->gemm(a, r_full, r1);
}

}  // namespace

bool os_grants_amx() {
    // Linux gives a process the AMX tile data state only on request
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without it the first
    // tile instruction faults.
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
}

const type_kernels* amx_kernels(tensor_type weight) {
    const auto dequant = [](tensor_type t, gemm_fn gemm) {
        return type_kernels{gemm, avx512_kernels(t)->dot, avx512_kernels(t)->quantize};
    };
    static const type_kernels q8_0 = dequant(tensor_type::q8_0, gemm_amx_dequant<tensor_type::q8_0>);
    static const type_kernels q4_0 = dequant(tensor_type::q4_0, gemm_amx_dequant<tensor_type::q4_0>);
    static const type_kernels q4_1 = dequant(tensor_type::q4_1, gemm_amx_dequant<tensor_type::q4_1>);
    static const type_kernels q5_0 = dequant(tensor_type::q5_0, gemm_amx_dequant<tensor_type::q5_0>);
    static const type_kernels q5_1 = dequant(tensor_type::q5_1, gemm_amx_dequant<tensor_type::q5_1>);
    static const type_kernels iq4_nl = dequant(tensor_type::iq4_nl, gemm_amx_dequant<tensor_type::iq4_nl>);
    static const type_kernels q4_k = dequant(tensor_type::q4_k, gemm_amx_dequant<tensor_type::q4_k>);
    static const type_kernels q5_k = dequant(tensor_type::q5_k, gemm_amx_dequant<tensor_type::q5_k>);
    static const type_kernels q6_k = dequant(tensor_type::q6_k, gemm_amx_dequant<tensor_type::q6_k>);
    static const type_kernels iq4_xs = dequant(tensor_type::iq4_xs, gemm_amx_dequant<tensor_type::iq4_xs>);
    static const type_kernels f16{gemm_amx_float<tensor_type::f16>, avx512_kernels(tensor_type::f16)->dot, nullptr};
    static const type_kernels bf16{gemm_amx_float<tensor_type::bf16>, avx512_kernels(tensor_type::bf16)->dot, nullptr};
    switch (weight) {
        case tensor_type::q8_0: return &q8_0;
        case tensor_type::q4_0: return &q4_0;
        case tensor_type::q4_1: return &q4_1;
        case tensor_type::q5_0: return &q5_0;
        case tensor_type::q5_1: return &q5_1;
        case tensor_type::iq4_nl: return &iq4_nl;
        case tensor_type::q4_k: return &q4_k;
        case tensor_type::q5_k: return &q5_k;
        case tensor_type::q6_k: return &q6_k;
        case tensor_type::iq4_xs: return &iq4_xs;
        case tensor_type::f16: return &f16;
        case tensor_type::bf16: return &bf16;
        default: return avx512_kernels(weight);
    }
}

}  // namespace tachyon::detail
