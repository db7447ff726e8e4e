// The q8_0 / q4_0 matmul tile and the tile drivers, compiled once per
// instruction set: the including file defines TACHYON_TILE_TARGET (a target
// attribute) and TACHYON_TILE_VNNI (0: AVX2 maddubs, 1: AVX-VNNI dpbusd)
// before including it. Everything lands in that file's anonymous namespace.
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

#include "inference/kernels/kernels_internal.h"
#include "inference/gguf/quant.h"

namespace tachyon::detail {
namespace {

constexpr int rows_per_tile = 4;

// Decode streams each weight once per token, straight from L3 or DRAM, and
// the hardware prefetcher alone leaves the loads waiting: each row of a
// decode tile asks for its line this far ahead into L2 (measured on the 40M
// models, tg128: f16 2.2x, q8_0 1.15-1.2x, f32 1.05x on one thread; q4_0
// 1.06-1.14x on one thread and 1.04-1.2x on two with AVX-512's four-block
// kernel, nothing with two blocks per step, which go without). Float
// weights prefetch for batches of up to max_stream_tokens too (batched
// decode of 8 sequences: f16 2.0-2.2x, f32 1.5x); the AMX tiles of larger
// batches measured nothing.
constexpr int64_t max_stream_tokens = 16;
constexpr int64_t float_prefetch_bytes = 16 << 10;
constexpr int64_t q8_prefetch_bytes = 4 << 10;
constexpr int64_t q4_prefetch_bytes = 2 << 10;

TACHYON_TILE_TARGET inline void prefetch_l2(const void* p, int64_t ahead) {
    _mm_prefetch(static_cast<const char*>(p) + ahead, _MM_HINT_T1);
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
// by signed bytes).
struct unpack_q8_0 {
    using block = block_q8_0;
    static constexpr int offset = 0;
    TACHYON_TILE_TARGET static __m256i quants(const block_q8_0& b) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    }
};

struct unpack_q4_0 {
    using block = block_q4_0;
    static constexpr int offset = 8;
    // Element j is the low nibble of byte j, element j + 16 the high nibble:
    // low nibbles fill the lower 128-bit lane, high nibbles the upper one.
    TACHYON_TILE_TARGET static __m256i quants(const block_q4_0& b) {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
        const __m256i both = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
        return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
    }
};

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
    // -k * (sum of each group of 4 x), the starting value of every pair's sum.
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i prepare_x(__m256i x) {
        const __m256i s = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(k<Offset>)), x);
        return _mm256_sub_epi32(_mm256_setzero_si256(), s);
    }
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i dot(__m256i w, __m256i x, __m256i x_off) {
        return _mm256_dpbusd_avx_epi32(x_off, w, x);
    }
};
#else
// Unsigned weights: maddubs pairs stay within 2*15*127, and the offset term
// is subtracted in int16 (x_off = maddubs(offset, x), |pairs| <= 2*8*128).
// Signed weights (q8_0): move w's sign onto x and use |w|; pairs stay below
// 2*128*127 < 2^15.
struct int_dot {
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i prepare_w(__m256i w) {
        return w;
    }
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i prepare_x(__m256i x) {
        if constexpr (Offset == 0) return x;
        else return _mm256_maddubs_epi16(_mm256_set1_epi8(Offset), x);
    }
    template <int Offset>
    TACHYON_TILE_TARGET static __m256i dot(__m256i w, __m256i x, __m256i x_off) {
        const __m256i ones = _mm256_set1_epi16(1);
        if constexpr (Offset == 0) {
            return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), ones);
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

    template <int RM, int RN>
    TACHYON_TILE_TARGET static void run(const gemm_args& a, int64_t r, int64_t t) {
        static_assert(RM <= 4 && RN <= 4);
        using block = typename U::block;
        constexpr int off = U::offset;
        const block* w[RM];
        const block_q8_0* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const block*>(a.w + (r + i) * a.w_row_bytes);
        for (int j = 0; j < RN; ++j) x[j] = reinterpret_cast<const block_q8_0*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[RM][RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
        const int64_t nb = a.n_cols / qk_32;
        for (int64_t b = 0; b < nb; ++b) {
            // The RM x RN products of the fp16 block scales, four at a time;
            // the pairs read them back with a broadcast load (no ALU work).
            const __m128 dw = _mm_cvtph_ps(_mm_setr_epi16(
                static_cast<short>(w[0][b].d), static_cast<short>(RM > 1 ? w[1 % RM][b].d : 0),
                static_cast<short>(RM > 2 ? w[2 % RM][b].d : 0), static_cast<short>(RM > 3 ? w[3 % RM][b].d : 0), 0, 0, 0, 0));
            alignas(16) float dx[4];
            _mm_store_ps(dx, _mm_cvtph_ps(_mm_setr_epi16(
                static_cast<short>(x[0][b].d), static_cast<short>(RN > 1 ? x[1 % RN][b].d : 0),
                static_cast<short>(RN > 2 ? x[2 % RN][b].d : 0), static_cast<short>(RN > 3 ? x[3 % RN][b].d : 0), 0, 0, 0, 0)));
            alignas(16) float d[RN][4];  // d[j][i] = dw_i * dx_j
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) _mm_store_ps(d[j], _mm_mul_ps(dw, _mm_broadcast_ss(&dx[j])));
            __m256i xq[RN], x_off[RN];
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) {
                xq[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[j][b].qs));
                x_off[j] = int_dot::prepare_x<off>(xq[j]);
            }
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                if constexpr (off == 0 && RN == 1) prefetch_l2(&w[i][b], q8_prefetch_bytes);
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
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) a.y[(t + j) * a.ldy + r + i] = hsum(acc[i][j]);
    }
};

// ---- drivers ----------------------------------------------------------------

// Tokens [t0, t1) against rows r.. r + RM.
template <class K, int RM>
TACHYON_TILE_TARGET void gemm_rows(const gemm_args& a, int64_t r, int64_t t0, int64_t t1) {
    int64_t t = t0;
    for (; t + K::rn <= t1; t += K::rn) K::template run<RM, K::rn>(a, r, t);
    switch (t1 - t) {
        case 1: K::template run<RM, 1>(a, r, t); break;
        case 2: if constexpr (K::rn > 2) K::template run<RM, 2>(a, r, t); break;
        case 3: if constexpr (K::rn > 3) K::template run<RM, 3>(a, r, t); break;
        default: break;
    }
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

template <class K>
TACHYON_TILE_TARGET float dot(int64_t n, const void* w, const void* x) {
    float y = 0.0f;
    gemm_args a{static_cast<const std::byte*>(w), 0, static_cast<const std::byte*>(x), 0, n, 1, &y, 1};
    K::template run<1, 1>(a, 0, 0);
    return y;
}

}  // namespace
}  // namespace tachyon::detail
