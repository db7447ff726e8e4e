// Prompts of the quantized types on AMX-BF16 tiles (kernels_amx.cpp has
// the AMX-INT8 q8_0 / q4_0 tiles and the f16 / bf16 ones).
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

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "inference/gguf/quant.h"
#include "inference/kernels/amx/amx_tiles.h"
#include "inference/kernels/kernels.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/rows/kernels_transpose16.h"

#define TACHYON_AMX_BF16 \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16,avx2,fma,f16c,amx-tile,amx-bf16")))

namespace tachyon::detail {
namespace {

constexpr int tile = 16;  // weight rows per A tile, tokens per B tile

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

// A type of blocks of 32 against `Act` activations.
template <class Block, class Act>
struct blocks_of_32 {
    using block = Block;
    using activation = Act;
    static constexpr int cols = qk_32;
};

template <>
struct bf16_rows<tensor_type::q8_0> : blocks_of_32<block_q8_0, block_q8_0> {
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(b.d));
        out[0] = bf16_of(_mm512_mul_ps(floats_i8(_mm256_castsi256_si128(q)), d), _mm512_mul_ps(floats_i8(_mm256_extracti128_si256(q, 1)), d));
    }
};

template <>
struct bf16_rows<tensor_type::q4_0> : blocks_of_32<block_q4_0, block_q8_0> {
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        const float d = _cvtsh_ss(b.d);
        out[0] = scaled_u8(nibbles32(b.qs), _mm512_set1_ps(d), _mm512_set1_ps(8.0f * d));
    }
};

template <>
struct bf16_rows<tensor_type::q4_1> : blocks_of_32<block_q4_1, block_q8_1> {
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        out[0] = scaled_u8(nibbles32(b.qs), _mm512_set1_ps(_cvtsh_ss(b.d)), _mm512_set1_ps(-_cvtsh_ss(b.m)));
    }
};

template <>
struct bf16_rows<tensor_type::q5_0> : blocks_of_32<block_q5_0, block_q8_0> {
    TACHYON_AMX_BF16 static void chunks(const block& b, __m512i* out) {
        const float d = _cvtsh_ss(b.d);
        out[0] = scaled_u8(five_bits32(b.qs, b.qh), _mm512_set1_ps(d), _mm512_set1_ps(16.0f * d));
    }
};

template <>
struct bf16_rows<tensor_type::q5_1> : blocks_of_32<block_q5_1, block_q8_1> {
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
struct bf16_rows<tensor_type::iq4_nl> : blocks_of_32<block_iq4_nl, block_q8_0> {
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
    if constexpr (T == tensor_type::q8_0 || T == tensor_type::q4_0) amx_int8_gemm(T)(a, r0, r1);
    else if (a.panels != nullptr) packed_gemm(T, true)(a, r0, r1);
    else avx512_kernels(T)->gemm(a, r0, r1);
}

// The activations as B tiles, [token tile][32 columns][16 pairs][16
// tokens x 2]: row i of a tile holds columns 2i, 2i + 1 of each of 16
// tokens, zero past the last token.
template <class A>
TACHYON_AMX_BF16 void activation_tiles(const gemm_args& a, line_vector<uint16_t>& rows, line_vector<uint16_t>& tiles) {
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

// Rows r.. r + n - 1 (n <= 32, r a multiple of 16) as dequant_rows lays
// them out, from the packed panels of the type where the matmul has them
// (the mapping's pages of those weights may be gone), else from the rows.
template <tensor_type T>
TACHYON_AMX_BF16 void dequant_groups(const gemm_args& a, int64_t r, int n, uint16_t* w) {
    if constexpr (T == tensor_type::q4_k || T == tensor_type::q5_k || T == tensor_type::q6_k || T == tensor_type::iq4_xs) {
        if (a.panels != nullptr) {
            for (int g = 0; g * tile < n; ++g) packed_group_bf16(T, a.panels, a.n_cols, r / tile + g, w + g * a.n_cols * tile);
            return;
        }
    }
    dequant_rows<T>(a, r, n, w);
}

template <tensor_type T>
TACHYON_AMX_BF16 void gemm_amx_dequant(const gemm_args& a, int64_t r0, int64_t r1) {
    static const bool has_bf16 = cpu_has_amx_bf16();
    using A = typename bf16_rows<T>::activation;
    constexpr int64_t x_cols = sizeof(A::qs);
    if (!has_bf16 || a.n_tokens < min_tokens_dequant<T> || a.x_row_bytes != static_cast<size_t>(a.n_cols / x_cols) * sizeof(A))
        return gemm_below_dequant<T>(a, r0, r1);
    const int64_t n_pad = (a.n_tokens + tile - 1) / tile * tile, n_chunks = a.n_cols / 32;
    // panels hold the last group padded with zero rows: it runs as a whole one
    const int64_t r_full = a.panels != nullptr ? r1 : r0 + (r1 - r0) / tile * tile;
    thread_local line_vector<uint16_t> x_rows, x, w;
    thread_local line_vector<float> acc;  // results, [2 row groups][16 rows][n_pad tokens]
    activation_tiles<A>(a, x_rows, x);
    w.resize(static_cast<size_t>(2 * tile * a.n_cols));
    acc.resize(static_cast<size_t>(2 * tile * n_pad));
    configure_tiles_16x64();
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
        dequant_groups<T>(a, r, g2 ? 2 * tile : tile, w.data());
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
            const auto keep = static_cast<__mmask16>((1u << std::min<int64_t>(tile, r_full - r - g * tile)) - 1);
            for (int64_t t = 0; t < n_pad; t += tile) {
                __m512 v[tile];
#pragma GCC unroll 16
                for (int i = 0; i < tile; ++i) v[i] = _mm512_loadu_ps(rows + i * n_pad + t);
                transpose16(v);
                const int64_t n = std::min<int64_t>(tile, a.n_tokens - t);
                for (int64_t j = 0; j < n; ++j) _mm512_mask_storeu_ps(a.y + (t + j) * a.ldy + r + g * tile, keep, v[j]);
            }
        }
    }
    _tile_release();
    if (r_full < r1) avx512_kernels(T)->gemm(a, r_full, r1);  // never with panels
}

}  // namespace

gemm_fn amx_quant_gemm(tensor_type weight) {
    switch (weight) {
        case tensor_type::q8_0: return gemm_amx_dequant<tensor_type::q8_0>;
        case tensor_type::q4_0: return gemm_amx_dequant<tensor_type::q4_0>;
        case tensor_type::q4_1: return gemm_amx_dequant<tensor_type::q4_1>;
        case tensor_type::q5_0: return gemm_amx_dequant<tensor_type::q5_0>;
        case tensor_type::q5_1: return gemm_amx_dequant<tensor_type::q5_1>;
        case tensor_type::iq4_nl: return gemm_amx_dequant<tensor_type::iq4_nl>;
        case tensor_type::q4_k: return gemm_amx_dequant<tensor_type::q4_k>;
        case tensor_type::q5_k: return gemm_amx_dequant<tensor_type::q5_k>;
        case tensor_type::q6_k: return gemm_amx_dequant<tensor_type::q6_k>;
        case tensor_type::iq4_xs: return gemm_amx_dequant<tensor_type::iq4_xs>;
        default: return nullptr;
    }
}

}  // namespace tachyon::detail
