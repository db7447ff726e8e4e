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

#include "inference/kernels/amx/amx_tiles.h"
#include "inference/kernels/kernels.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/rows/kernels_transpose16.h"
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
    line_vector<int8_t> quants;  // [token tile][block][8][16 tokens][4]
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
    line_vector<int8_t> unpacked;  // q4_0: [16 rows][n_cols]
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
    line_vector<uint16_t> hi, lo;
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
    thread_local line_vector<uint16_t> w;
    split_activations(a, x);
    configure_tiles_16x64();
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


}  // namespace

bool os_grants_amx() {
    // Linux gives a process the AMX tile data state only on request
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without it the first
    // tile instruction faults.
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
}

gemm_fn amx_int8_gemm(tensor_type weight) {
    switch (weight) {
        case tensor_type::q8_0: return gemm_amx<tensor_type::q8_0>;
        case tensor_type::q4_0: return gemm_amx<tensor_type::q4_0>;
        default: return nullptr;
    }
}

const type_kernels* amx_kernels(tensor_type weight) {
    // The quantized types (but q2_K, q3_K) on AMX-BF16 tiles from their
    // thresholds, q8_0 / q4_0 below on the AMX-INT8 ones (kernels_amx_quant.cpp).
    const auto quant = [](tensor_type t) {
        return type_kernels{amx_quant_gemm(t), avx512_kernels(t)->dot, avx512_kernels(t)->quantize};
    };
    static const type_kernels q8_0 = quant(tensor_type::q8_0), q4_0 = quant(tensor_type::q4_0), q4_1 = quant(tensor_type::q4_1),
                              q5_0 = quant(tensor_type::q5_0), q5_1 = quant(tensor_type::q5_1), iq4_nl = quant(tensor_type::iq4_nl),
                              q4_k = quant(tensor_type::q4_k), q5_k = quant(tensor_type::q5_k), q6_k = quant(tensor_type::q6_k),
                              iq4_xs = quant(tensor_type::iq4_xs);
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
