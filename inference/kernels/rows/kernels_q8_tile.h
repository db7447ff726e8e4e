// The q8_0 / q4_0 / q5_0 / iq4_nl (q8_0 activations) and q4_1 / q5_1 (q8_1
// activations) matmul tile, the one-token tile of the 4- and 5-bit types
// (nibble_decode_tile), and the tile drivers, compiled once per
// instruction set: the including file defines TACHYON_TILE_TARGET (a target
// attribute) and TACHYON_TILE_VNNI (0: AVX2 maddubs, 1: AVX-VNNI dpbusd,
// VEX-encoded; 2: the same dpbusd EVEX-encoded, AVX512-VNNI with VL, for
// the CPUs with AVX-512 and no AVX-VNNI: Zen 4, Ice Lake, Cascade Lake)
// before including it, and TACHYON_TILE_MASKS 1 where AVX-512BW's byte masks
// may be used. Everything lands in that file's anonymous namespace.
//
// matmul works on tiles of RM weight rows x RN tokens: each weight block is
// loaded (and unpacked) once per tile and multiplied with RN activation rows,
// each activation block once and multiplied with RM weight rows. For one
// token (decode) RM = 4 independent rows keep four accumulator chains in
// flight while the weights stream from memory; the horizontal sum happens
// once per (row, token), never per block.
//
// Per (weight block, activation block) pair the q8 tile does an integer dot
// of 32 bytes, its conversion to float and one FMA with the product of the
// two block scales. What depends on one side only (unpacking the weights,
// the activation sums that undo an offset, the fp16 scales) is done once per
// tile row or column, not per pair.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "inference/kernels/kernels_internal.h"
#include "inference/gguf/quant.h"

#ifndef TACHYON_TILE_MASKS
#define TACHYON_TILE_MASKS 0
#endif

namespace tachyon::detail {
namespace {

constexpr int rows_per_tile = 4;

// Decode streams each weight once per token, straight from L3 or DRAM, and
// the hardware prefetcher alone leaves the loads waiting: each row of a
// decode tile asks for its line this far ahead into L2. Float weights
// prefetch for batches of up to max_stream_tokens too (batched decode of 8
// sequences: f16 2.0-2.2x, f32 1.5x), and so do the AVX-512 q8_0 and
// k-quant tiles of such batches; the AMX tiles of larger batches measured
// nothing. Measured with `tachyon bench matmul --type T -t 1 --tokens 1
// --mib 256` on a Xeon whose L3 held the 40M models (q4_0 2.5 -> 4.9-6.3
// GB/s at 2 KiB, q4_K 3.0 -> 4.6, q6_K 3.2-3.9 -> 4.6-4.8 at 4 KiB), and on
// an EPYC (Zen 5, 1 MiB L2, 32 MiB L3, 40-49 GB/s from DRAM on one core)
// whose DRAM latency wants farther: AVX2 tiles, GB/s at 2 / 4 / 8 / 16 /
// 32 KiB, q8_0 9.1 / 18.0 / 26.4 / 30.8-36.4 / 38.0, q4_0 10.8 / 15.6 /
// 17.9 / 17.9 / 18.4 (the AVX-VNNI one 24.4 at 8, 22 at 16); q6_K 21.2 /
// 29.9 / 29.1 at 4 / 8 / 16 KiB.
constexpr int64_t max_stream_tokens = 16;
constexpr int64_t float_prefetch_bytes = 16 << 10;
constexpr int64_t q8_prefetch_bytes = 16 << 10;
constexpr int64_t q4_prefetch_bytes = 8 << 10;

// How far ahead the rows of a decode tile prefetch: `base`, and at least
// the tile's own span. The tile's rows lie one after the other, so what its
// rows ask for `ahead` bytes on covers the stretch from `ahead` past the tile's
// start to `ahead` past its end; shorter than the span, part of the next tile
// is asked for only once that tile runs, too late (measured on the Zen 5,
// f16 rows of 2816 x 1024: 21.6 GB/s at 16 KiB, 32 at 32 KiB).
inline int64_t prefetch_distance(const gemm_args& a, int64_t base) {
    return std::max(base, rows_per_tile * static_cast<int64_t>(a.w_row_bytes));
}

TACHYON_TILE_TARGET inline void prefetch_l2(const void* p, int64_t ahead) {
    _mm_prefetch(static_cast<const char*>(p) + ahead, _MM_HINT_T1);
}

// The k-quant tiles' rows (blocks of 84 to 210 bytes): 8 KiB ahead.
constexpr int64_t kq_prefetch_bytes = 8 << 10;

// Every 64-byte line of the block at p, `ahead` bytes on, into L2.
template <class Block>
TACHYON_TILE_TARGET inline void prefetch_block_l2(const Block* p, int64_t ahead) {
    for (size_t o = 0; o < sizeof(Block); o += 64) prefetch_l2(reinterpret_cast<const char*>(p) + o, ahead);
}

// Four fp16 values as floats. Packed in a 64-bit general register first
// (integer shifts and ors, on ports the vector work leaves idle) and moved
// over once, instead of a chain of word inserts on the shuffle port.
TACHYON_TILE_TARGET inline __m128 halves4(uint16_t h0, uint16_t h1, uint16_t h2, uint16_t h3) {
    const uint64_t packed = uint64_t{h0} | (uint64_t{h1} << 16) | (uint64_t{h2} << 32) | (uint64_t{h3} << 48);
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(packed)));
}

// Factor k (0..7) of eight int16 factors held in both 128-bit lanes, in
// every int16 lane: one shuffle, where a broadcast from memory takes a load,
// a move and a broadcast.
TACHYON_TILE_TARGET inline __m256i lane_factor(__m256i factors, int k) {
    const char lo = static_cast<char>(2 * k), hi = static_cast<char>(2 * k + 1);
    return _mm256_shuffle_epi8(factors, _mm256_setr_epi8(lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi,
                                                         lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi));
}

// From eight int16 factors held in both 128-bit lanes: factor 2g in the
// lower lane, factor 2g + 1 in the upper one (the two sub-blocks of 16 that
// a 32-byte group g of a k-quant covers).
TACHYON_TILE_TARGET inline __m256i pair_factor(__m256i factors, int g) {
    const char lo = static_cast<char>(4 * g), hi = static_cast<char>(4 * g + 2);
    const __m256i pick = _mm256_setr_epi8(lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1,
                                          hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1);
    return _mm256_shuffle_epi8(factors, pick);
}

// The 16 6-bit scales of a q3_K block (0..63, before the - 32) as bytes,
// from its 12-byte packing (q3_k_scales in quant.h): the low 4 bits of
// scales 0..7 are the low nibbles of words 0 and 1, of scales 8..15 their
// high nibbles, and the top 2 bits of each group of 4 scales a 2-bit field
// of word 2. Computed in vector lanes so that the scales stay in a register
// (unpacked as words into memory and loaded back as 16 bytes, they waited
// on store forwarding in every block: q3_K decode 1.5x).
TACHYON_TILE_TARGET inline __m128i q3_k_scales_vector(const uint8_t* packed) {
    uint32_t a2;
    std::memcpy(&a2, packed + 8, 4);
    const __m128i a01 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));  // words a0, a1
    // low nibbles of a0, a1, then their high nibbles: scales 0-3, 4-7, 8-11, 12-15
    const __m128i low = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(a01, 0x44), _mm_setr_epi32(0, 0, 4, 4)), _mm_set1_epi8(0x0f));
    // their two high bits from a2, 2 bits per scale group
    const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(a2)), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(0x03));
    return _mm_or_si128(low, _mm_slli_epi32(high, 4));
}

// Bit `bit` (0..7) of every byte of v, as 4 in the byte (0 when clear): one
// shift and one mask (bits shifted in from the neighbouring byte miss bit 2).
TACHYON_TILE_TARGET inline __m256i bit_as_4(__m256i v, int bit) {
    const __m256i four = _mm256_set1_epi8(4);
    if (bit >= 2) return _mm256_and_si256(_mm256_srli_epi16(v, bit - 2), four);
    return _mm256_and_si256(_mm256_slli_epi16(v, 2 - bit), four);
}

// q4_K / q5_K: the 64 quants of 32-byte group c of the nibbles (elements
// 64c..64c+31 in lo, 64c+32..64c+63 in hi), with q5_K's fifth bit (bit 2c /
// 2c + 1 of the 32 bytes qh) as 16.
template <bool five_bits>
TACHYON_TILE_TARGET inline void q45_k_quants(const uint8_t* qs, __m256i qh, int c, __m256i& lo, __m256i& hi) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
    lo = _mm256_and_si256(raw, low4);
    hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    if constexpr (five_bits) {
        const __m256i one = _mm256_set1_epi8(1);
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4));
    }
}

// q6_K: the 128 quants of half h of a block (stored q + 32, 0..63) as four
// groups of 32, group g against activations 128h + 32g.. .
TACHYON_TILE_TARGET inline void q6_k_quants(const block_q6_k& b, int h, __m256i (&q)[4]) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i low2 = _mm256_set1_epi8(0x03);
    const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
    const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
    q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4));
    q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4));
}

TACHYON_TILE_TARGET inline float hsum128(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TACHYON_TILE_TARGET inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Unpackers give a block's quants as 32 bytes and say how to read them:
// offset 0 means signed int8 values; offset k means unsigned bytes u = q + k,
// so that sum q*x = sum u*x - k * sum x (maddubs and dpbusd multiply unsigned
// by signed bytes); offset with_min means unsigned values as they are, of a
// block x = d * u + m whose min term m * s comes from the activations' q8_1
// block sums. `act` is the activation block type.
constexpr int with_min = -1;

struct unpack_q8_0 {
    using block = block_q8_0;
    using act = block_q8_0;
    static constexpr int offset = 0;
    TACHYON_TILE_TARGET static __m256i quants(const block_q8_0& b) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    }
};

// Element j is the low nibble of byte j, element j + 16 the high nibble:
// low nibbles fill the lower 128-bit lane, high nibbles the upper one.
TACHYON_TILE_TARGET inline __m256i nibbles32(const uint8_t* qs) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// Bit j of the 32-bit little-endian qh as 16 in byte j (0 when clear): the
// fifth bit of q5_0 / q5_1 element j.
TACHYON_TILE_TARGET inline __m256i high_bits32(const uint8_t* qh) {
    uint32_t h;
    std::memcpy(&h, qh, 4);
    // byte j of the result holds byte j / 8 of h, then keeps bit j % 8 of it
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(h)),
                                               _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                                                2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

struct unpack_q4_0 {
    using block = block_q4_0;
    using act = block_q8_0;
    static constexpr int offset = 8;
    TACHYON_TILE_TARGET static __m256i quants(const block_q4_0& b) { return nibbles32(b.qs); }
};

struct unpack_q5_0 {
    using block = block_q5_0;
    using act = block_q8_0;
    static constexpr int offset = 16;
    TACHYON_TILE_TARGET static __m256i quants(const block_q5_0& b) {
        return _mm256_or_si256(nibbles32(b.qs), high_bits32(b.qh));
    }
};

struct unpack_iq4_nl {
    using block = block_iq4_nl;
    using act = block_q8_0;
    static constexpr int offset = 0;
    // The nibbles index the table of levels (in both 128-bit lanes).
    TACHYON_TILE_TARGET static __m256i quants(const block_iq4_nl& b) {
        const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)));
        return _mm256_shuffle_epi8(table, nibbles32(b.qs));
    }
};

struct unpack_q4_1 {
    using block = block_q4_1;
    using act = block_q8_1;
    static constexpr int offset = with_min;
    TACHYON_TILE_TARGET static __m256i quants(const block_q4_1& b) { return nibbles32(b.qs); }
};

struct unpack_q5_1 {
    using block = block_q5_1;
    using act = block_q8_1;
    static constexpr int offset = with_min;
    TACHYON_TILE_TARGET static __m256i quants(const block_q5_1& b) {
        return _mm256_or_si256(nibbles32(b.qs), high_bits32(b.qh));
    }
};

#if TACHYON_TILE_VNNI == 2
#define TACHYON_DPBUSD256 _mm256_dpbusd_epi32
#elif TACHYON_TILE_VNNI
#define TACHYON_DPBUSD256 _mm256_dpbusd_avx_epi32
#endif

#if TACHYON_TILE_VNNI
// One dpbusd multiplies and sums 4 byte products into each int32 lane, with
// no saturation: signed q8_0 weights are read as unsigned w + 128 too, and
// every sum starts at -offset * sum x.
struct int_dot {
    template <int Offset>
    static constexpr int k = Offset == 0 ? 128 : Offset;

    template <int Offset>
    TACHYON_TILE_TARGET static __m256i prepare_w(__m256i w) {
        if constexpr (Offset == 0) return _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80)));
        else return w;
    }
    // -k * (sum of each group of 4 x), the starting value of every pair's sum
    // (0 for unsigned values taken as they are).
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i prepare_x(__m256i x) {
        if constexpr (Offset == with_min) {
            return _mm256_setzero_si256();
        } else {
            const __m256i s = TACHYON_DPBUSD256(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(k<Offset>)), x);
            return _mm256_sub_epi32(_mm256_setzero_si256(), s);
        }
    }
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i dot(__m256i w, __m256i x, __m256i x_off) {
        return TACHYON_DPBUSD256(x_off, w, x);
    }
};
#else
// Unsigned weights: maddubs pairs stay within 2*31*128, and the offset term
// is subtracted in int16 (x_off = maddubs(offset, x), |pairs| <= 2*16*128).
// Signed weights (q8_0, iq4_nl): move w's sign onto x and use |w|; pairs
// stay below 2*128*127 < 2^15.
struct int_dot {
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i prepare_w(__m256i w) {
        return w;
    }
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i prepare_x(__m256i x) {
        if constexpr (Offset == 0 || Offset == with_min) return x;
        else return _mm256_maddubs_epi16(_mm256_set1_epi8(Offset), x);
    }
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i dot(__m256i w, __m256i x, __m256i x_off) {
        const __m256i ones = _mm256_set1_epi16(1);
        if constexpr (Offset == 0) {
            return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), ones);
        } else if constexpr (Offset == with_min) {
            return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), ones);
        } else {
            return _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(w, x), x_off), ones);
        }
    }
};
#endif

template <class U>
struct q8_tile {
    // 4 x 2 keeps the 8 accumulators, the activations and the weight block in
    // the 16 ymm registers; 4 x 4 spills and measured no faster.
    static constexpr int rn = 2;

    // Rows r.. r + RM - 1 against tokens t.. t + RN - 1.
    template <int RM, int RN>
    TACHYON_TILE_TARGET static void run(const gemm_args& a, int64_t r, int64_t t) {
        int64_t rows[RM];
        for (int i = 0; i < RM; ++i) rows[i] = r + i;
        run_rows<RM, RN>(a, rows, t, prefetch_distance(a, prefetch_base()));
    }

    static constexpr int64_t prefetch_base() {
        return std::is_same_v<typename U::block, block_q8_0> ? q8_prefetch_bytes : q4_prefetch_bytes;
    }

    // Rows rows[0..RM) (anywhere in the matrix) against tokens t..; a
    // decode tile asks for each row's blocks `ahead` bytes on.
    template <int RM, int RN>
    TACHYON_TILE_TARGET static void run_rows(const gemm_args& a, const int64_t (&rows)[RM], int64_t t, int64_t ahead) {
        static_assert(RM <= 4 && RN <= 4);
        using block = typename U::block;
        using xblock = typename U::act;
        constexpr int off = U::offset;
        const block* w[RM];
        const xblock* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const block*>(a.w + rows[i] * a.w_row_bytes);
        for (int j = 0; j < RN; ++j) x[j] = reinterpret_cast<const xblock*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[RM][RN];
        // with_min: sum of m_i * s_j over the blocks, rows i in the lanes
        __m128 min_acc[RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
#pragma GCC unroll 16
        for (int j = 0; j < RN; ++j) min_acc[j] = _mm_setzero_ps();
        const int64_t nb = a.n_cols / qk_32;
        // Decode: the first token group of a tile fetches the rows ahead
        // (the later ones find them in L1 / L2). Every block asks, a few
        // times per 64-byte line for the 18 to 24-byte blocks: one load-port
        // operation against the ten or so vector ones of its products.
        const bool stream = t == 0 && a.n_tokens <= max_stream_tokens;
        for (int64_t b = 0; b < nb; ++b) {
            // The RM x RN products of the fp16 block scales, four at a time;
            // the pairs read them back with a broadcast load (no ALU work).
            const __m128 dw = halves4(w[0][b].d, RM > 1 ? w[1 % RM][b].d : 0, RM > 2 ? w[2 % RM][b].d : 0, RM > 3 ? w[3 % RM][b].d : 0);
            alignas(16) float dx[4];
            _mm_store_ps(dx, halves4(x[0][b].d, RN > 1 ? x[1 % RN][b].d : 0, RN > 2 ? x[2 % RN][b].d : 0, RN > 3 ? x[3 % RN][b].d : 0));
            alignas(16) float d[RN][4];  // d[j][i] = dw_i * dx_j
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) _mm_store_ps(d[j], _mm_mul_ps(dw, _mm_broadcast_ss(&dx[j])));
            if constexpr (off == with_min) {
                const __m128 mw = halves4(w[0][b].m, RM > 1 ? w[1 % RM][b].m : 0, RM > 2 ? w[2 % RM][b].m : 0, RM > 3 ? w[3 % RM][b].m : 0);
                alignas(16) float sx[4];
                _mm_store_ps(sx, halves4(x[0][b].s, RN > 1 ? x[1 % RN][b].s : 0, RN > 2 ? x[2 % RN][b].s : 0, RN > 3 ? x[3 % RN][b].s : 0));
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) min_acc[j] = _mm_fmadd_ps(mw, _mm_broadcast_ss(&sx[j]), min_acc[j]);
            }
            __m256i xq[RN], x_off[RN];
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) {
                xq[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs));
                x_off[j] = int_dot::prepare_x<off>(xq[j]);
            }
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                if (stream) prefetch_l2(&w[i][b], ahead);
                const __m256i wq = int_dot::prepare_w<off>(U::quants(w[i][b]));
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const __m256 p = _mm256_cvtepi32_ps(int_dot::dot<off>(wq, xq[j], x_off[j]));
                    acc[i][j] = _mm256_fmadd_ps(p, _mm256_broadcast_ss(&d[j][i]), acc[i][j]);
                }
            }
        }
        // Unrolled like the loops above, so acc never needs an address and
        // stays in registers.
        if constexpr (off == with_min) {
            alignas(16) float mins[RN][4];
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) _mm_store_ps(mins[j], min_acc[j]);
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) a.y[(t + j) * a.ldy + rows[i]] = hsum(acc[i][j]) + mins[j][i];
        } else {
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) a.y[(t + j) * a.ldy + rows[i]] = hsum(acc[i][j]);
        }
    }
};

// The fifth bits of two q5 blocks' elements as 16 in each byte (0 when
// clear), laid out as q5_decode_tile's row pairs: `lo` holds elements 0..15
// (qh bytes 0-1) of row 0 in its lower lane and of row 1 in its upper one,
// `hi` elements 16..31 (qh bytes 2-3) the same way.
TACHYON_TILE_TARGET inline void high_bits_pair(const uint8_t* qh0, const uint8_t* qh1, __m256i& lo, __m256i& hi) {
    uint32_t h0, h1;
    std::memcpy(&h0, qh0, 4);
    std::memcpy(&h1, qh1, 4);
    // both lanes hold the 8 bytes h0 | h1 << 32; byte k of each lane picks the qh byte of its element
    const __m256i v = _mm256_set1_epi64x(static_cast<long long>(uint64_t{h0} | (uint64_t{h1} << 32)));
    const __m256i pick_lo = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5);
    const __m256i pick_hi = _mm256_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i sixteen = _mm256_set1_epi8(0x10);
    lo = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, pick_lo), bit), bit), sixteen);
    hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, pick_hi), bit), bit), sixteen);
}

// ---- q4_0 / q4_1 / q5_0 / q5_1 decode: two rows per register --------------
//
// One token against 4- and 5-bit rows, whose 16 bytes of nibbles per block leave
// half of a 256-bit register empty in q8_tile: here rows i and i + 1 share
// one (row i in the lower 128-bit lane, row i + 1 in the upper), so one
// and / shift / and unpacks 64 quants and every following operation serves
// two rows. The activations are loaded as two broadcast halves, elements
// 0..15 (against the low nibbles) and 16..31 (the high ones), once per block
// for the four rows of the tile. q5_0 / q5_1 add their fifth bits to the
// nibbles (high_bits_pair); iq4_nl (VNNI only) looks its nibbles up as the
// levels + 128, unsigned bytes whose sums start at -128 * the activations'.
template <class U>
struct nibble_decode_tile {
    static constexpr int rn = 1;

    template <int RM, int RN>
    TACHYON_TILE_TARGET static void run(const gemm_args& a, int64_t r, int64_t t) {
        static_assert(RN == 1 && RM <= 4);
        constexpr bool levels = std::is_same_v<U, unpack_iq4_nl>;
        static_assert(U::offset == 8 || U::offset == 16 || U::offset == with_min || (levels && TACHYON_TILE_VNNI));
        constexpr bool five_bits = requires(const typename U::block& blk) { blk.qh; };
        using block = typename U::block;
        using xblock = typename U::act;
        constexpr int off = levels ? 128 : U::offset;
        // iq4_nl: the levels + 128 in both lanes
        [[maybe_unused]] const __m256i level_bytes = _mm256_xor_si256(
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values))), _mm256_set1_epi8(static_cast<char>(0x80)));
        constexpr int n_pairs = (RM + 1) / 2;
        const block* w[RM];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const block*>(a.w + (r + i) * a.w_row_bytes);
        const xblock* x = reinterpret_cast<const xblock*>(a.x + t * a.x_row_bytes);
        __m256 acc[n_pairs];  // lanes 0-3: row 2p, lanes 4-7: row 2p + 1
#pragma GCC unroll 4
        for (int p = 0; p < n_pairs; ++p) acc[p] = _mm256_setzero_ps();
        __m128 min_acc = _mm_setzero_ps();  // q4_1 / q5_1: sum of m_i * s over the blocks, rows in the lanes
        const __m256i low4 = _mm256_set1_epi8(0x0f);
        const int64_t nb = a.n_cols / qk_32;
        const bool stream = a.n_tokens <= max_stream_tokens;
        const int64_t ahead = prefetch_distance(a, q4_prefetch_bytes);
        for (int64_t b = 0; b < nb; ++b) {
            const __m128 dw = halves4(w[0][b].d, RM > 1 ? w[1 % RM][b].d : 0, RM > 2 ? w[2 % RM][b].d : 0, RM > 3 ? w[3 % RM][b].d : 0);
            const __m128 d = _mm_mul_ps(dw, _mm_set1_ps(_cvtsh_ss(x[b].d)));
            if constexpr (off == with_min) {
                const __m128 mw = halves4(w[0][b].m, RM > 1 ? w[1 % RM][b].m : 0, RM > 2 ? w[2 % RM][b].m : 0, RM > 3 ? w[3 % RM][b].m : 0);
                min_acc = _mm_fmadd_ps(mw, _mm_set1_ps(_cvtsh_ss(x[b].s)), min_acc);
            }
            const __m256i x_lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs)));
            const __m256i x_hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs + 16)));
#if TACHYON_TILE_VNNI
            // every sum starts at -offset * (the sums of 4 x); 0 for q4_1 / q5_1
            __m256i start = _mm256_setzero_si256();
            if constexpr (off != with_min) {
                const __m256i k = _mm256_set1_epi8(static_cast<char>(off));
                start = _mm256_sub_epi32(start, TACHYON_DPBUSD256(TACHYON_DPBUSD256(start, k, x_lo), k, x_hi));
            }
#else
            // q4_0 / q5_0: offset * (pair sums of x), subtracted in int16
            __m256i x_off = _mm256_setzero_si256();
            if constexpr (off != with_min) {
                const __m256i k = _mm256_set1_epi8(off);
                x_off = _mm256_add_epi16(_mm256_maddubs_epi16(k, x_lo), _mm256_maddubs_epi16(k, x_hi));
            }
#endif
#pragma GCC unroll 4
            for (int p = 0; p < n_pairs; ++p) {
                const int i0 = 2 * p, i1 = std::min(2 * p + 1, RM - 1);
                if (stream) {
                    prefetch_l2(&w[i0][b], ahead);
                    if (i1 != i0) prefetch_l2(&w[i1][b], ahead);
                }
                const __m256i raw = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(w[i1][b].qs), reinterpret_cast<const __m128i*>(w[i0][b].qs));
                __m256i lo = _mm256_and_si256(raw, low4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
                if constexpr (levels) {
                    lo = _mm256_shuffle_epi8(level_bytes, lo);
                    hi = _mm256_shuffle_epi8(level_bytes, hi);
                }
                if constexpr (five_bits) {
#if TACHYON_TILE_MASKS
                    // qh bits 0-15 are the fifth bits of elements 0-15 (the low
                    // nibbles), bits 16-31 of 16-31: as byte masks, one masked
                    // add each
                    uint32_t h0, h1;
                    std::memcpy(&h0, w[i0][b].qh, 4);
                    std::memcpy(&h1, w[i1][b].qh, 4);
                    const __m256i sixteen = _mm256_set1_epi8(0x10);
                    lo = _mm256_mask_add_epi8(lo, static_cast<__mmask32>((h0 & 0xffff) | (h1 << 16)), lo, sixteen);
                    hi = _mm256_mask_add_epi8(hi, static_cast<__mmask32>((h0 >> 16) | (h1 & 0xffff0000u)), hi, sixteen);
#else
                    __m256i h_lo, h_hi;
                    high_bits_pair(w[i0][b].qh, w[i1][b].qh, h_lo, h_hi);
                    lo = _mm256_or_si256(lo, h_lo);
                    hi = _mm256_or_si256(hi, h_hi);
#endif
                }
#if TACHYON_TILE_VNNI
                const __m256i sum = TACHYON_DPBUSD256(TACHYON_DPBUSD256(start, lo, x_lo), hi, x_hi);
#else
                // pairs of products stay within 2 * 31 * 127, the two halves
                // within 2^14, less the offset term (at most 2 * 2 * 16 * 127)
                __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, x_lo), _mm256_maddubs_epi16(hi, x_hi));
                if constexpr (off != with_min) s16 = _mm256_sub_epi16(s16, x_off);
                const __m256i sum = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
#endif
                // [d_i0 x 4 | d_i1 x 4]
                const __m256 scale = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(d), _mm256_setr_epi32(i0, i0, i0, i0, i1, i1, i1, i1));
                acc[p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc[p]);
            }
        }
        alignas(16) float mins[4];
        _mm_store_ps(mins, min_acc);
#pragma GCC unroll 4
        for (int p = 0; p < n_pairs; ++p) {
            const int i0 = 2 * p, i1 = std::min(2 * p + 1, RM - 1);
            const float s0 = hsum128(_mm256_castps256_ps128(acc[p])), s1 = hsum128(_mm256_extractf128_ps(acc[p], 1));
            a.y[t * a.ldy + r + i0] = s0 + (off == with_min ? mins[i0] : 0.0f);
            if (i1 != i0) a.y[t * a.ldy + r + i1] = s1 + (off == with_min ? mins[i1] : 0.0f);
        }
    }
};

// One token takes nibble_decode_tile, more the q8 tile (whose 4 x 2 tiles share
// each unpacked weight block between two tokens).
template <class U>
TACHYON_TILE_TARGET void gemm_nibbles(const gemm_args& a, int64_t r0, int64_t r1);

// ---- drivers ----------------------------------------------------------------

// The last n < K::rn tokens from t against rows r.. r + RM.
template <class K, int RM, int N = K::rn - 1>
TACHYON_TILE_TARGET void gemm_tail(const gemm_args& a, int64_t r, int64_t t, int64_t n) {
    if constexpr (N >= 1) {
        if (n == N) return K::template run<RM, N>(a, r, t);
        gemm_tail<K, RM, N - 1>(a, r, t, n);
    }
}

// Tokens [t0, t1) against rows r.. r + RM.
template <class K, int RM>
TACHYON_TILE_TARGET void gemm_rows(const gemm_args& a, int64_t r, int64_t t0, int64_t t1) {
    int64_t t = t0;
    for (; t + K::rn <= t1; t += K::rn) K::template run<RM, K::rn>(a, r, t);
    gemm_tail<K, RM>(a, r, t, t1 - t);
}

// The tokens go in panels whose activations fit in L1 (~32 KiB): every row
// tile of the range streams past one panel before the next, so activations
// come from L1 and each weight row from L2 once per panel. A kernel whose
// weights cost more to stream again than its activations cost to read from
// L2 sets a larger K::panel_bytes.
template <class K>
constexpr int64_t panel_bytes() {
    if constexpr (requires { K::panel_bytes; }) return K::panel_bytes;
    else return int64_t{32} << 10;
}

template <class K>
TACHYON_TILE_TARGET void gemm(const gemm_args& a, int64_t r0, int64_t r1) {
    const int64_t panel = std::max<int64_t>(K::rn, static_cast<int64_t>(panel_bytes<K>() / a.x_row_bytes) / K::rn * K::rn);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += panel) {
        const int64_t t1 = std::min(a.n_tokens, t0 + panel);
        int64_t r = r0;
        for (; r + rows_per_tile <= r1; r += rows_per_tile) gemm_rows<K, rows_per_tile>(a, r, t0, t1);
        for (; r < r1; ++r) gemm_rows<K, 1>(a, r, t0, t1);
    }
}

// One token against q8_0 rows [r0, r1) in place, as S stretches of the
// matrix read at once: the rows split into S runs of consecutive rows, and
// a tile takes the next row of every run, block by block. One stretch
// at a time leaves the core's requests to one hardware stream
// (kernels_packed16.cpp says the same of the AVX-512 packed q8_0). The rows
// left over go through the 4-row tiles; a row's sum is the same either way.
// Zen 5, `TACHYON_KERNELS=avx2 tachyon bench matmul --type q8_0 --tokens 1
// --mib 512 -t 1`, GB/s, the 4-row tile on one stretch against S stretches
// of one row: 20.9-24.4 against S = 2: 27.0-28.4, 3: 33.6-34.8, 4:
// 29.1-33.7, 5: 27.5-30.1, 6: 24.6-25.2, 8 (8 sums): 25.9-26.2; S stretches
// of 2 or 4 rows a tile, 4 x 2: 25.3-25.7, 2 x 4: 26.4-26.7. At avx_vnni,
// 1 / 2 threads: 21.0-22.5 / 35.1-42.5 against 4 x 1's 31.9-33.4 /
// 50.9-66.5. The 220M Q8_0 model at avx2, tg64, seven alternating rounds,
// mean: 1 thread 97 -> 108 t/s, 2 threads 149 -> 181. The AVX-512 level's
// decode tile (gemm_vnni_decode: q8_0 in place where the AMX level keeps
// it so) takes the same path; here it read 29.8-34.6 / 52.9-64.2 GB/s, not
// measured on a CPU with AMX.
constexpr int q8_streams = 4;

template <class U, int S>
TACHYON_TILE_TARGET void one_token_streams(const gemm_args& a, int64_t r0, int64_t r1) {
    const int64_t run = (r1 - r0) / S;  // rows of each stretch
    const int64_t ahead = std::max(q8_tile<U>::prefetch_base(), static_cast<int64_t>(a.w_row_bytes));
    for (int64_t i = 0; i < run; ++i) {
        int64_t rows[S];
        for (int k = 0; k < S; ++k) rows[k] = r0 + k * run + i;
        q8_tile<U>::template run_rows<S, 1>(a, rows, 0, ahead);
    }
    gemm<q8_tile<U>>(a, r0 + S * run, r1);
}

// q8_0 and iq4_nl (signed values) in place, batches too small for the
// prompt tiles: q8_0's one-token passes as several stretches.
template <class U>
TACHYON_TILE_TARGET void gemm_signed(const gemm_args& a, int64_t r0, int64_t r1) {
    if constexpr (std::is_same_v<U, unpack_q8_0>) {
        if (a.n_tokens == 1) return one_token_streams<U, q8_streams>(a, r0, r1);
    }
    gemm<q8_tile<U>>(a, r0, r1);
}

template <class U>
TACHYON_TILE_TARGET void gemm_nibbles(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens == 1) gemm<nibble_decode_tile<U>>(a, r0, r1);
    else gemm<q8_tile<U>>(a, r0, r1);
}

#if TACHYON_TILE_VNNI
// Decode (one or two tokens) with dpbusd: q8_0 the q8 tile, the others
// gemm_nibbles (iq4_nl's nibbles looked up as levels + 128: on a Xeon, in
// cache, 96 us against the q8 tile's 114-125 per 2816 x 1024 matmul).
// Out of line: inlined into the callers' gemm_by_tokens, q4_0 one-token
// decode measured 2-4 % slower.
template <class U>
__attribute__((noinline)) TACHYON_TILE_TARGET void gemm_vnni_decode(const gemm_args& a, int64_t r0, int64_t r1) {
    if constexpr (std::is_same_v<U, unpack_q8_0>) gemm_signed<U>(a, r0, r1);
    else gemm_nibbles<U>(a, r0, r1);
}
#endif

template <class K>
TACHYON_TILE_TARGET float dot(int64_t n, const void* w, const void* x) {
    float y = 0.0f;
    gemm_args a{static_cast<const std::byte*>(w), 0, static_cast<const std::byte*>(x), 0, n, 1, &y, 1};
    K::template run<1, 1>(a, 0, 0);
    return y;
}

}  // namespace
}  // namespace tachyon::detail
