// The float-weight (f32, f16, bf16) matmul again with AVX-512: sixteen
// columns per register, and tiles of 4 weight rows x 4 tokens whose sixteen
// accumulators stay in registers (AVX2 has room for 4 x 2), and the q8_0 /
// q4_0 / iq4_nl decode tile with two blocks per register and 512-bit dpbusd
// (AVX-512 VNNI; q4_0 and iq4_nl pack four blocks per register; q5_0 / q5_1
// decode adds the fifth bits under byte masks). Batches of 3 tokens and
// more of the 32-element block types take the tiles of kernels_prompt.cpp.
// Every function carries its own target attribute so the file builds for
// plain x86-64; kernels.cpp only calls in here after checking the CPU
// (default_isa).

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>
#include <type_traits>

#include "inference/gguf/fp16.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/rows/kernels_transpose16.h"
#include "inference/gguf/quant.h"

#define TACHYON_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c")))
#define TACHYON_TILE_TARGET TACHYON_AVX512
#define TACHYON_TILE_VNNI 2
#define TACHYON_TILE_MASKS 1
#include "inference/kernels/rows/kernels_q8_tile.h"

namespace tachyon::detail {
namespace {

// Sum of the 16 lanes (GCC 12's _mm512_reduce_add_ps warns of an undefined operand).
TACHYON_AVX512 inline float hsum512(__m512 v) {
    __m512 t = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4e));  // halves
    t = _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, 0xb1));          // quarters
    __m128 s = _mm512_castps512_ps128(t);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Four vectors to one whose 128-bit quarter q holds 4 partial sums of v[q].
TACHYON_AVX512 inline __m512 quarters_of(__m512 v0, __m512 v1, __m512 v2, __m512 v3) {
    // halves: [v0 lo+hi | v1 lo+hi], [v2 lo+hi | v3 lo+hi]
    const __m512 a = _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x44), _mm512_shuffle_f32x4(v0, v1, 0xee));
    const __m512 b = _mm512_add_ps(_mm512_shuffle_f32x4(v2, v3, 0x44), _mm512_shuffle_f32x4(v2, v3, 0xee));
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xdd));
}

// The 16 sums of a 4 x 4 tile of accumulators acc[i][j] (row i, token j),
// token j's four rows as quarter j: a transpose-and-add tree (about 50
// instructions) instead of 16 separate horizontal sums (about 130).
TACHYON_AVX512 inline __m512 tile_sums(const __m512 (&acc)[4][4]) {
    // q_i: quarter j = 4 partial sums of acc[i][j]
    const __m512 q0 = quarters_of(acc[0][0], acc[0][1], acc[0][2], acc[0][3]);
    const __m512 q1 = quarters_of(acc[1][0], acc[1][1], acc[1][2], acc[1][3]);
    const __m512 q2 = quarters_of(acc[2][0], acc[2][1], acc[2][2], acc[2][3]);
    const __m512 q3 = quarters_of(acc[3][0], acc[3][1], acc[3][2], acc[3][3]);
    // within each quarter: [p0 p1 p2 p3] of rows 0,1 -> [r0: p0+p2, r1: p0+p2, r0: p1+p3, r1: p1+p3]
    const __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(q0, q1), _mm512_unpackhi_ps(q0, q1));
    const __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(q2, q3), _mm512_unpackhi_ps(q2, q3));
    return _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
}

// Writes the 16 sums of a 4 x 4 tile (rows r.., tokens t..) to y.
TACHYON_AVX512 inline void store_tile_sums(const __m512 (&acc)[4][4], const gemm_args& a, int64_t r, int64_t t) {
    const __m512 s = tile_sums(acc);
    _mm_storeu_ps(a.y + (t + 0) * a.ldy + r, _mm512_castps512_ps128(s));
    _mm_storeu_ps(a.y + (t + 1) * a.ldy + r, _mm512_extractf32x4_ps(s, 1));
    _mm_storeu_ps(a.y + (t + 2) * a.ldy + r, _mm512_extractf32x4_ps(s, 2));
    _mm_storeu_ps(a.y + (t + 3) * a.ldy + r, _mm512_extractf32x4_ps(s, 3));
}

struct load16_f32 {
    using elem = float;
    TACHYON_AVX512 static __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
    static float one(const float* p) { return *p; }
};

struct load16_f16 {
    using elem = uint16_t;
    TACHYON_AVX512 static __m512 load16(const uint16_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static float one(const uint16_t* p) { return fp16_to_fp32(*p); }
};

struct load16_bf16 {
    using elem = uint16_t;
    TACHYON_AVX512 static __m512 load16(const uint16_t* p) {
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
    static float one(const uint16_t* p) { return bf16_to_fp32(*p); }
};

template <class L>
struct float_tile512 {
    static constexpr int rn = 4;
    // f32 weights: panels of activations sized for L2, so the weights stream
    // once per 1 MiB of tokens (measured on a 40M F32 model, prompt of 512:
    // 1.17x over L1-sized panels; f16 weights are faster with L1 panels).
    static constexpr int64_t panel_bytes = sizeof(typename L::elem) == 4 ? int64_t{1} << 20 : int64_t{32} << 10;

    template <int RM, int RN>
    TACHYON_AVX512 static void run(const gemm_args& a, int64_t r, int64_t t) {
        using elem = typename L::elem;
        const elem* w[RM];
        const float* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const elem*>(a.w + (r + i) * a.w_row_bytes);
        for (int j = 0; j < RN; ++j) x[j] = reinterpret_cast<const float*>(a.x + (t + j) * a.x_row_bytes);
        __m512 acc[RM][RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
        const int64_t n = a.n_cols;
        const bool stream = a.n_tokens <= max_stream_tokens;
        const int64_t ahead = prefetch_distance(a, float_prefetch_bytes);
        int64_t k = 0;
        for (; k + 16 <= n; k += 16) {
            __m512 xv[RN];
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) xv[j] = _mm512_loadu_ps(x[j] + k);
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                if (stream && ((k * static_cast<int64_t>(sizeof(elem))) & 63) == 0) prefetch_l2(w[i] + k, ahead);
                const __m512 wv = L::load16(w[i] + k);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
            }
        }
        if constexpr (RM == 4 && RN == 4) {
            if (k == n) {
                store_tile_sums(acc, a, r, t);
                return;
            }
        }
        for (int i = 0; i < RM; ++i) {
            for (int j = 0; j < RN; ++j) {
                float s = hsum512(acc[i][j]);
                for (int64_t kk = k; kk < n; ++kk) s += L::one(w[i] + kk) * x[j][kk];
                a.y[(t + j) * a.ldy + r + i] = s;
            }
        }
    }
};

// Many tokens against short rows, the other way round: 32 weight rows are
// converted and transposed once into a buffer, [n_cols][32] (16 KiB for
// rows of 128), and then each column k of them is two registers that a
// token's x[k] scales into 32 row sums at once; 8 tokens share each column
// load. No horizontal sums and no conversion per use, which with rows of 128
// cost the 4 x 4 tile about as much as its multiply-adds.
// Tiles one token reads at once from the panels (rows_by_broadcast::
// one_token_tiles): Zen 5, one thread, the 220M shape in F16, tg32, four
// alternating rounds: one tile 55.9-62.3 t/s, two 58.3-74.0, four
// 66.4-77.1.
constexpr int one_token_panels = 4;

template <class L>
struct rows_by_broadcast {
    static constexpr int rm = 32, nt = 8;
    static constexpr int64_t min_tokens_convert = 16;
    static constexpr int64_t panel_bytes = int64_t{1} << 20;

    // Rows r.. r + 31 as columns: wt[k * 32 + i] = W[r + i, k].
    TACHYON_AVX512 static void transpose_rows(const gemm_args& a, int64_t r, float* wt) {
        using elem = typename L::elem;
        for (int h = 0; h < rm; h += 16) {
            for (int64_t k0 = 0; k0 < a.n_cols; k0 += 16) {
                __m512 m[16];
#pragma GCC unroll 16
                for (int i = 0; i < 16; ++i) {
                    const elem* row = reinterpret_cast<const elem*>(a.w + (r + h + i) * a.w_row_bytes) + k0;
                    // the same place of the next tile's rows, so that it is in L2 when its turn comes
                    if (((k0 * static_cast<int64_t>(sizeof(elem))) & 63) == 0) prefetch_l2(row, rm * static_cast<int64_t>(a.w_row_bytes));
                    m[i] = L::load16(row);
                }
                transpose16(m);
#pragma GCC unroll 16
                for (int c = 0; c < 16; ++c) _mm512_store_ps(wt + (k0 + c) * rm + h, m[c]);
            }
        }
    }

    // Tokens t.. t + NT - 1 against the 32 rows whose columns are at wt
    // (wt[k * 32 + i] = W[r + i, k], elements that P converts).
    // Fewer than 4 tokens split the columns over KS sets of sums, so that
    // at least 8 multiply-add chains are in flight (n_cols is a multiple
    // of 16).
    // Stream: the weights are packed panels read once for these tokens
    // (decode of a few sequences), and each column's lines are asked for
    // float_prefetch_bytes ahead into L2. With 4 and 8 tokens the hardware
    // prefetcher alone left the loads waiting (Zen 5, one thread, the 220M
    // shape's f16 matrices in layer order, 422 MiB, five alternating rounds:
    // 4 tokens 22.2-24.9 -> 33.5-35.4 GB/s, 8 tokens 14.2-14.9 -> 22.8-24.0,
    // 2 tokens within noise); one token streamed faster without (`tachyon
    // bench matmul --type f16 --tokens 1 --mib 256`: 40-42 against 28-29
    // GB/s), so all_tokens does not ask for it there.
    template <int NT, class P, bool Stream = false>
    TACHYON_AVX512 static void tokens(const gemm_args& a, const typename P::elem* wt, int64_t r, int64_t t) {
        constexpr int KS = NT >= 4 ? 1 : 4 / NT;
        constexpr int64_t lines = rm * static_cast<int64_t>(sizeof(typename P::elem)) / 64;  // a column's cache lines
        const float* x[NT];
        for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const float*>(a.x + (t + j) * a.x_row_bytes);
        __m512 lo[KS][NT], hi[KS][NT];
#pragma GCC unroll 16
        for (int s = 0; s < KS; ++s)
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) lo[s][j] = hi[s][j] = _mm512_setzero_ps();
        for (int64_t k = 0; k < a.n_cols; k += KS) {
#pragma GCC unroll 4
            for (int s = 0; s < KS; ++s) {
                if constexpr (Stream)
                    for (int64_t l = 0; l < lines; ++l) prefetch_l2(reinterpret_cast<const char*>(wt + (k + s) * rm) + 64 * l, float_prefetch_bytes);
                const __m512 w0 = P::load16(wt + (k + s) * rm), w1 = P::load16(wt + (k + s) * rm + 16);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const __m512 xk = _mm512_set1_ps(x[j][k + s]);
                    lo[s][j] = _mm512_fmadd_ps(xk, w0, lo[s][j]);
                    hi[s][j] = _mm512_fmadd_ps(xk, w1, hi[s][j]);
                }
            }
        }
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) {
#pragma GCC unroll 4
            for (int s = 1; s < KS; ++s) {
                lo[0][j] = _mm512_add_ps(lo[0][j], lo[s][j]);
                hi[0][j] = _mm512_add_ps(hi[0][j], hi[s][j]);
            }
            _mm512_storeu_ps(a.y + (t + j) * a.ldy + r, lo[0][j]);
            _mm512_storeu_ps(a.y + (t + j) * a.ldy + r + 16, hi[0][j]);
        }
    }

    // One token against S tiles of 32 rows at once (rows r[s].. at wt[s]),
    // a column of every tile in turn: S stretches of the panels read at
    // once, where one tile at a time left the core's requests to one
    // hardware stream (one_token_streams in kernels_packed16.cpp).
    template <int S, class P>
    TACHYON_AVX512 static void one_token_tiles(const gemm_args& a, const typename P::elem* const (&wt)[S], const int64_t (&r)[S]) {
        const float* x = reinterpret_cast<const float*>(a.x);
        __m512 lo[S], hi[S];
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s) lo[s] = hi[s] = _mm512_setzero_ps();
        for (int64_t k = 0; k < a.n_cols; ++k) {
            const __m512 xk = _mm512_set1_ps(x[k]);
#pragma GCC unroll 8
            for (int s = 0; s < S; ++s) {
                lo[s] = _mm512_fmadd_ps(xk, P::load16(wt[s] + k * rm), lo[s]);
                hi[s] = _mm512_fmadd_ps(xk, P::load16(wt[s] + k * rm + 16), hi[s]);
            }
        }
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s) {
            _mm512_storeu_ps(a.y + r[s], lo[s]);
            _mm512_storeu_ps(a.y + r[s] + 16, hi[s]);
        }
    }

    // Tokens [t0, t1) against the 32 rows at wt.
    template <class P, bool Stream = false>
    TACHYON_AVX512 static void all_tokens(const gemm_args& a, const typename P::elem* wt, int64_t r, int64_t t0, int64_t t1) {
        int64_t t = t0;
        for (; t + nt <= t1; t += nt) tokens<nt, P, Stream>(a, wt, r, t);
        switch (t1 - t) {
            case 1: tokens<1, P, false>(a, wt, r, t); break;  // Stream: see tokens
            case 2: tokens<2, P, Stream>(a, wt, r, t); break;
            case 3: tokens<3, P, Stream>(a, wt, r, t); break;
            case 4: tokens<4, P, Stream>(a, wt, r, t); break;
            case 5: tokens<5, P, Stream>(a, wt, r, t); break;
            case 6: tokens<6, P, Stream>(a, wt, r, t); break;
            case 7: tokens<7, P, Stream>(a, wt, r, t); break;
            default: break;
        }
    }

    // Rows [r0, r_end) in tiles of 32 against every token, each tile's
    // columns first put as f32 into an L1/L2 buffer by fill(r, wt). Tokens
    // go in panels whose activations stay in L2 while every row tile passes
    // (each tile is filled again for each panel).
    template <class Fill>
    TACHYON_AVX512 static void through_buffer(const gemm_args& a, int64_t r0, int64_t r_end, const Fill& fill) {
        thread_local std::vector<float> buffer;
        buffer.resize(static_cast<size_t>(a.n_cols * rm + 16));
        // 64-byte aligned within the buffer: every column load is one line
        float* wt = buffer.data() + (16 - reinterpret_cast<uintptr_t>(buffer.data()) / sizeof(float) % 16) % 16;
        const int64_t panel = std::max<int64_t>(nt, panel_bytes / static_cast<int64_t>(a.x_row_bytes) / nt * nt);
        for (int64_t t0 = 0; t0 < a.n_tokens; t0 += panel) {
            const int64_t t1 = std::min(a.n_tokens, t0 + panel);
            for (int64_t r = r0; r < r_end; r += rm) {
                fill(r, wt);
                all_tokens<load16_f32>(a, wt, r, t0, t1);
            }
        }
    }

    // Rows [r0, r1) in tiles of 32 against every token, transposed into the
    // buffer; returns where the whole tiles end.
    TACHYON_AVX512 static int64_t run(const gemm_args& a, int64_t r0, int64_t r1) {
        const int64_t r_end = r0 + (r1 - r0) / rm * rm;
        through_buffer(a, r0, r_end, [&](int64_t r, float* wt) TACHYON_AVX512 { transpose_rows(a, r, wt); });
        return r_end;
    }

    // The same from weights packed ahead (pack_panels): group g of 32 rows
    // is at a.panels + g * n_cols * 32 elements; r0 is a multiple of 32. A
    // few tokens read the panels as they are. Many tokens convert a group
    // to f32 first, once for all of them (with the conversion in the inner
    // loop, f16 and bf16 measured 10 % slower).
    TACHYON_AVX512 static int64_t run_packed(const gemm_args& a, int64_t r0, int64_t r1) {
        using elem = typename L::elem;
        const auto* panels = reinterpret_cast<const elem*>(a.panels);
        const int64_t r_end = r0 + (r1 - r0) / rm * rm;
        if (a.n_tokens == 1) {
            constexpr int S = one_token_panels;
            const int64_t run = (r_end - r0) / rm / S;
            for (int64_t i = 0; i < run; ++i) {
                const elem* wt[S];
                int64_t rs[S];
                for (int s = 0; s < S; ++s) {
                    rs[s] = r0 + rm * (s * run + i);
                    wt[s] = panels + rs[s] * a.n_cols;
                }
                one_token_tiles<S, L>(a, wt, rs);
            }
            // the rest one tile at a time, its sums in the same order (two threads give what one does)
            for (int64_t r = r0 + rm * S * run; r < r_end; r += rm) one_token_tiles<1, L>(a, {panels + r * a.n_cols}, {r});
            return r_end;
        }
        if (std::is_same_v<L, load16_f32> || a.n_tokens < min_tokens_convert) {
            const bool stream = a.n_tokens <= max_stream_tokens;
            for (int64_t r = r0; r < r_end; r += rm) {
                if (stream) all_tokens<L, true>(a, panels + r * a.n_cols, r, 0, a.n_tokens);
                else all_tokens<L>(a, panels + r * a.n_cols, r, 0, a.n_tokens);
            }
            return r_end;
        }
        through_buffer(a, r0, r_end, [&](int64_t r, float* wt) TACHYON_AVX512 {
            const elem* p = panels + r * a.n_cols;
            for (int64_t i = 0; i < a.n_cols * rm; i += 16) _mm512_store_ps(wt + i, L::load16(p + i));
        });
        return r_end;
    }
};

// Batches of at least this many tokens, over rows of at most this many
// columns (a buffer of up to 512 KiB, in L2), take rows_by_broadcast.
// Measured one thread, f16 unless said, 64 tokens: rows of 128 1.9x the
// 4 x 4 tile (f32 1.7x), of 512 1.4x, of 1408 1.3x (f32 1.5x), of 4096
// 1.65x; prompts of 512 on the 40M models: f16 1.3x, f32 1.4-1.5x. Batches
// of 16 and fewer are decode, whose weights stream from memory once per
// step: there the 4 x 4 tile, which prefetches, measured 1.1-1.6x faster.
constexpr int64_t max_cols_broadcast = 4096;
constexpr int64_t min_tokens_broadcast = 32;

// One token against rows shorter than this runs the AVX2 tile: a 16-wide
// loop of a few steps does not pay for its wider horizontal sums (measured
// on a model with 128-wide rows: decode 6 % slower). On AMD every one-token
// float matmul does (Zen 5, f16 from DRAM, `tachyon bench matmul --type f16
// --tokens 1 --mib 256`: 33 against 29 GB/s). Several tokens take
// the 4 x 4 tile whatever the width: each weight vector loaded and
// converted serves 4 tokens instead of 2.
constexpr int64_t min_cols_512 = 256;

// Weights packed ahead (pack_panels) take rows_by_broadcast from this many
// tokens: with no transpose to pay for, it beats the 4 x 4 tile's
// horizontal sums from two tokens on.
constexpr int64_t min_tokens_packed = 1;

template <class L, tensor_type T>
void gemm_by_width(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.panels != nullptr && a.n_tokens >= min_tokens_packed && r0 % rows_by_broadcast<L>::rm == 0)
        r0 = rows_by_broadcast<L>::run_packed(a, r0, r1);
    else if (a.n_tokens >= min_tokens_broadcast && a.n_cols <= max_cols_broadcast && a.n_cols % 16 == 0)
        r0 = rows_by_broadcast<L>::run(a, r0, r1);
    if (r0 >= r1) return;
    if (a.n_cols < min_cols_512 && a.n_tokens < 4) return avx2_kernels(T)->gemm(a, r0, r1);
    if (a.n_tokens == 1 && cpu_is_amd()) return avx2_kernels(T)->gemm(a, r0, r1);
    gemm<float_tile512<L>>(a, r0, r1);
}

// ---- q8_0 / q4_0 / iq4_nl decode, two or four blocks per 512-bit register ----

TACHYON_AVX512 inline __m512i pair_of(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// The nibbles of two 32-element blocks (16 bytes at q0 and at q1) as 64
// bytes: [low nibbles of q0 | high | low of q1 | high]. Without q1 the upper
// half holds `fill` (a value whose products the caller cancels).
TACHYON_AVX512 inline __m512i nibble_pair(const uint8_t* q0, const uint8_t* q1, int fill) {
    const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0)));
    const __m256i hi = q1 != nullptr ? _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)))
                                     : _mm256_set1_epi8(static_cast<char>(fill | (fill << 4)));
    const __m512i q = _mm512_srlv_epi64(pair_of(lo, hi), _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0));
    return _mm512_and_si512(q, _mm512_set1_epi8(0x0f));
}

// Decode (a token or two): blocks b and b + 1 share a register (lanes 0-7
// and 8-15; an odd last block runs with an empty upper half), with the
// scale products dw * dx of 32 blocks at a time computed up front (the fp16
// scales of 16 blocks fetched by one gather and converted together), so a
// pair costs one dpbusd, one conversion, one broadcast of two products and
// one FMA per (row, token), besides loading and unpacking the row's quants.
template <class U>
struct q8_decode512 {
    static constexpr int rn = 4;
    static constexpr int chunk = 32;  // blocks per batch of scale products
    // iq4_nl: q4_0's nibbles, which index the levels + 128 (unsigned bytes)
    static constexpr bool levels = std::is_same_v<U, unpack_iq4_nl>;
    static constexpr bool nibbles = levels || std::is_same_v<U, unpack_q4_0>;
    static constexpr int bias = levels ? 128 : U::offset == 0 ? 128 : U::offset;  // weights read as unsigned bytes w + bias

    // iq4_nl's levels + 128 in every 128-bit lane; nibbles looked up there.
    TACHYON_AVX512 static __m512i level_bytes(__m512i nibbles) {
        const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)));
        return _mm512_shuffle_epi8(_mm512_xor_si512(table, _mm512_set1_epi8(static_cast<char>(0x80))), nibbles);
    }

    // The 16 fp16 block scales from `first` on (every `step` bytes) as
    // floats; lanes `m` leaves out are 0.
    TACHYON_AVX512 static __m512 scales16(const std::byte* first, __m512i step, __mmask16 m) {
        const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, step, first, 1);
        return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
    }

    // Blocks b and b + 1 (zero when absent) of a weight row as unsigned bytes.
    TACHYON_AVX512 static __m512i weight_pair(const std::byte* row, int64_t b, bool two) {
        using block = typename U::block;
        const auto* blocks = reinterpret_cast<const block*>(row);
        if constexpr (levels) {
            // x is 0 past an odd last block, whatever level the fill picks
            return level_bytes(nibble_pair(blocks[b].qs, two ? blocks[b + 1].qs : nullptr, 0));
        } else if constexpr (U::offset == 0) {
            const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b].qs));
            const __m256i hi = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b + 1].qs)) : _mm256_setzero_si256();
            return _mm512_xor_si512(pair_of(lo, hi), _mm512_set1_epi8(static_cast<char>(0x80)));
        } else {
            // [qs(b) | qs(b) | qs(b+1) | qs(b+1)] -> low nibbles, high nibbles, low, high
            return nibble_pair(blocks[b].qs, two ? blocks[b + 1].qs : nullptr, U::offset);
        }
    }

    // q4_0 and iq4_nl: the chunk's blocks [c0, c0 + n_c) four at a time, one
    // register of quants per four blocks of a row instead of two. The four
    // blocks' 16-byte quants come out of two loads and one dword permute
    // (they sit 2 bytes into every other 4-byte group of the 72-byte run);
    // low nibbles and high nibbles take two dpbusd against the activations
    // rearranged to match, once per (row tile, chunk). Returns the blocks
    // done; the rest (fewer than 4) take the pairs. iq4_nl looks its nibbles
    // up as levels + 128 (two shuffles per four blocks of a row).
    template <int RM, int RN>
    TACHYON_AVX512 static int64_t quads(const std::byte* const (&w)[RM], const std::byte* const (&x)[RN], int64_t c0, int64_t n_c,
                                        const float (&prod)[RM][RN][chunk], __m512 (&acc)[RM][RN]) {
        static_assert(nibbles && sizeof(typename U::block) == sizeof(block_q4_0));
        constexpr int64_t n_quads_max = chunk / 4;
        const int64_t n_quads = n_c / 4;
        // Per token and quad: the low-nibble activations (elements 0-15 of
        // each block), the high-nibble ones (16-31), and -bias * their sums
        // per 4-byte group, where every block's integer dot starts.
        __m512i x_lo[RN][n_quads_max], x_hi[RN][n_quads_max], x_off[RN][n_quads_max];
        const __m512i bias_bytes = _mm512_set1_epi8(static_cast<char>(bias));
        for (int j = 0; j < RN; ++j) {
            const auto* xb = reinterpret_cast<const block_q8_0*>(x[j]) + c0;
            for (int64_t q = 0; q < n_quads; ++q) {
                const block_q8_0* xq = xb + 4 * q;
                const __m512i a01 = pair_of(unpack_q8_0::quants(xq[0]), unpack_q8_0::quants(xq[1]));  // 128-bit lanes: 0 lo, 0 hi, 1 lo, 1 hi
                const __m512i a23 = pair_of(unpack_q8_0::quants(xq[2]), unpack_q8_0::quants(xq[3]));
                x_lo[j][q] = _mm512_shuffle_i32x4(a01, a23, _MM_SHUFFLE(2, 0, 2, 0));
                x_hi[j][q] = _mm512_shuffle_i32x4(a01, a23, _MM_SHUFFLE(3, 1, 3, 1));
                const __m512i sums = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), bias_bytes, x_lo[j][q]), bias_bytes, x_hi[j][q]);
                x_off[j][q] = _mm512_sub_epi32(_mm512_setzero_si512(), sums);
            }
        }
        // Block k of a quad: quants at byte 18k + 2. Loaded from byte 2,
        // blocks 0 and 2 are dwords 0-3 and 9-12; from byte 8, blocks 1 and 3
        // are dwords 3-6 and 12-15 (indices 16+ pick the second register).
        const __m512i pick = _mm512_set_epi32(31, 30, 29, 28, 12, 11, 10, 9, 22, 21, 20, 19, 3, 2, 1, 0);
        const __m512i nibble = _mm512_set1_epi8(0x0f);
        const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
        for (int64_t q = 0; q < n_quads; ++q) {
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                const std::byte* run = w[i] + (c0 + 4 * q) * sizeof(block_q4_0);
                prefetch_l2(run, q4_prefetch_bytes);
                const __m512i v0 = _mm512_loadu_si512(run + 2);
                const __m512i v1 = _mm512_loadu_si512(run + 8);
                const __m512i packed = _mm512_permutex2var_epi32(v0, pick, v1);
                __m512i lo = _mm512_and_si512(packed, nibble);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
                if constexpr (levels) {
                    lo = level_bytes(lo);
                    hi = level_bytes(hi);
                }
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const __m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(x_off[j][q], lo, x_lo[j][q]), hi, x_hi[j][q]);
                    // each block's dw * dx over its four lanes
                    const __m512 s = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(_mm_load_ps(prod[i][j] + 4 * q)));
                    acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc[i][j]);
                }
            }
        }
        return 4 * n_quads;
    }

    template <int RM, int RN>
    TACHYON_AVX512 static void run(const gemm_args& a, int64_t r, int64_t t) {
        using block = typename U::block;
        const std::byte* w[RM];
        const std::byte* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = a.w + (r + i) * a.w_row_bytes;
        for (int j = 0; j < RN; ++j) x[j] = a.x + (t + j) * a.x_row_bytes;
        __m512 acc[RM][RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
        const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        const __m512i w_step = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(sizeof(block)));
        const __m512i x_step = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(sizeof(block_q8_0)));
        const __m512i biases = _mm512_set1_epi8(static_cast<char>(bias));
        const int64_t nb = a.n_cols / qk_32;
        alignas(64) float prod[RM][RN][chunk];  // dw * dx per block of the chunk, 0 past the row's end
        for (int64_t c0 = 0; c0 < nb; c0 += chunk) {
            const int64_t n_c = std::min<int64_t>(chunk, nb - c0);
            for (int64_t h = 0; h < n_c; h += 16) {
                const int64_t left = n_c - h;
                const auto m = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
                __m512 dx[RN];
                for (int j = 0; j < RN; ++j) dx[j] = scales16(x[j] + (c0 + h) * sizeof(block_q8_0), x_step, m);
                for (int i = 0; i < RM; ++i) {
                    const __m512 dw = scales16(w[i] + (c0 + h) * sizeof(block), w_step, m);
                    for (int j = 0; j < RN; ++j) _mm512_store_ps(prod[i][j] + h, _mm512_mul_ps(dw, dx[j]));
                }
            }
            int64_t p = 0;
            if constexpr (nibbles) p = quads(w, x, c0, n_c, prod, acc);
            for (; p < n_c; p += 2) {
                const int64_t b = c0 + p;
                const bool two = p + 1 < n_c;
                __m512i xq[RN], x_off[RN];
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) {
                    const auto* xb = reinterpret_cast<const block_q8_0*>(x[j]);
                    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b].qs));
                    const __m256i hi = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[b + 1].qs)) : _mm256_setzero_si256();
                    xq[j] = pair_of(lo, hi);
                    x_off[j] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), biases, xq[j]));
                }
#pragma GCC unroll 16
                for (int i = 0; i < RM; ++i) {
                    if constexpr (!nibbles) prefetch_l2(w[i] + b * sizeof(block), prefetch_distance(a, q8_prefetch_bytes));
                    const __m512i wq = weight_pair(w[i], b, two);
#pragma GCC unroll 16
                    for (int j = 0; j < RN; ++j) {
                        // An absent second block has x = 0, so its product (0) is never used.
                        const float* d = prod[i][j] + p;
                        const __m512 s = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_broadcast_ss(d)),
                                                            _mm256_broadcast_ss(two ? d + 1 : d), 1);
                        const __m512 q = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(x_off[j], wq, xq[j]));
                        acc[i][j] = _mm512_fmadd_ps(q, s, acc[i][j]);
                    }
                }
            }
        }
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) a.y[(t + j) * a.ldy + r + i] = hsum512(acc[i][j]);
    }
};

// Batches of this many tokens and more take the rows-in-lanes tiles of
// kernels_prompt.cpp. Measured on Zen 5 (one thread, 2816 x 1024 weights
// from DRAM, `tachyon bench matmul --type T --mib 64`, us per matmul
// against q8_tile512, since removed): q4_0 4 tokens 80 against 121, 8 112
// / 241, 32 355 / 1290, 128 1195 / 4600; q8_0 4 tokens 112-122 / 130, 8
// 160 / 303, 32 400 / 1222, 128 1260 / 3970; 2 tokens even. iq4_nl and the
// q5 types laid out as bytes, q4_1 as nibbles, on a Xeon (Sapphire Rapids,
// `tachyon bench matmul --type T --tokens 4,8,32,128 -t 1 --mib 64
// --no-bandwidth`, against q8_tile512 for iq4_nl and q5_0, the AVX-VNNI
// tiles for q4_1 and q5_1): iq4_nl 213 / 330, 289 / 652, 730 / 2988, 2500
// / 11046; q5_0 284 / 403, 381 / 785, 803 / 3330, 2543 / 13547; q4_1 329 /
// 476, 404 / 936, 924 / 3685, 2851 / 14489; q5_1 383 / 571, 431 / 1104,
// 885 / 4781, 2804 / 17782. On the 220M model (dim 1024, 16 layers, ffn
// 2816) with IQ4_NL weights, `tachyon bench decode -t 1 -p 512`: pp512
// 180 -> 624 tokens/s, above its Q4_0 twin's 540 (AMX or these tiles).
// From 3 tokens, not 4 (the Xeon only): at 3 the tiles took q4_0 137-148
// us against q8_decode512's 286-299, iq4_nl 196 / 301, q5_0 304 / 440,
// q4_1 306 / 395, q8_0 188 / 251; at 2 they were even (q4_1 292 / 258,
// iq4_nl 208 / 231).
constexpr int64_t min_tokens_prompt = 3;

// Decode (1 or 2 tokens) of q8_0, q4_0 and iq4_nl runs q8_decode512.
// On AMD (measured on Zen 5, one token, one thread,
// `tachyon bench matmul --tokens 1`) q8_decode512 lost to the AVX-VNNI
// tiles in cache (2 MiB of weights: q8_0 29.5 against 48.2 GB/s, q4_0 18.0
// against 33.7) and from DRAM (256 MiB: q8_0 16.0 against 39.0, q4_0 9.3
// against 25.0), its scale gathers and 512-bit shuffles costing more there:
// decode takes those tiles. iq4_nl looks its nibbles up as levels + 128,
// two shuffles per four blocks of a row: on the Xeon, in cache (`bench
// matmul --type iq4_nl --tokens 1,2 -t 1 --mib 2`, us) 2 tokens took 139
// against the AVX-VNNI q8 tile's 197, but one token 100 against the
// AVX-VNNI nibble_decode_tile's 96 (the shuffles share the one 512-bit
// shuffle port with the permutes): one token takes that tile (IQ4_NL 220M
// model, tg128 62-66 -> 67-73 tokens/s over four rounds; its Q4_0 twin
// 71-75).
// q5_0 and q5_1 one-token decode: nibble_decode_tile with the fifth bits
// added under byte masks (measured on Zen 5, `tachyon bench matmul --tokens
// 1 -t 1`: 2 MiB of weights in cache q5_0 1.16x, q5_1 1.07x the AVX-VNNI
// tile with its shuffles and compares; from DRAM the same, about 17 and 21
// GB/s). The rest of decode takes the 256-bit dpbusd tiles of
// kernels_q8_tile.h (gemm_vnni_decode), EVEX-encoded in this file so that
// the CPUs with AVX-512 and no AVX-VNNI (Zen 4, Ice Lake) run them too.
template <class U, tensor_type T>
void gemm_by_tokens(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens >= min_tokens_prompt) return prompt_gemm_avx512(T)(a, r0, r1);
    if constexpr (T == tensor_type::q8_0 || T == tensor_type::q4_0 || T == tensor_type::iq4_nl) {
        const bool vnni_tile = cpu_is_amd() || (T == tensor_type::iq4_nl && a.n_tokens == 1);
        if (!vnni_tile) return gemm<q8_decode512<U>>(a, r0, r1);
    } else if constexpr (T == tensor_type::q5_0 || T == tensor_type::q5_1) {
        if (a.n_tokens == 1) return gemm<nibble_decode_tile<U>>(a, r0, r1);
    }
    gemm_vnni_decode<U>(a, r0, r1);
}

}  // namespace

const type_kernels* avx512_kernels(tensor_type weight) {
    static const type_kernels f32{gemm_by_width<load16_f32, tensor_type::f32>, dot<float_tile512<load16_f32>>, nullptr};
    static const type_kernels f16{gemm_by_width<load16_f16, tensor_type::f16>, dot<float_tile512<load16_f16>>, nullptr};
    static const type_kernels bf16{gemm_by_width<load16_bf16, tensor_type::bf16>, dot<float_tile512<load16_bf16>>, nullptr};
    // Activations are quantized as under AVX2 (same q8_0 format).
    static const type_kernels q8_0{gemm_by_tokens<unpack_q8_0, tensor_type::q8_0>, dot<q8_tile<unpack_q8_0>>,
                                   avx2_kernels(tensor_type::q8_0)->quantize};
    static const type_kernels q4_0{gemm_by_tokens<unpack_q4_0, tensor_type::q4_0>, dot<q8_tile<unpack_q4_0>>,
                                   avx2_kernels(tensor_type::q4_0)->quantize};
    static const type_kernels q5_0{gemm_by_tokens<unpack_q5_0, tensor_type::q5_0>, dot<q8_tile<unpack_q5_0>>,
                                   avx2_kernels(tensor_type::q5_0)->quantize};
    static const type_kernels iq4_nl{gemm_by_tokens<unpack_iq4_nl, tensor_type::iq4_nl>, dot<q8_tile<unpack_iq4_nl>>,
                                     avx2_kernels(tensor_type::iq4_nl)->quantize};
    static const type_kernels q5_1{gemm_by_tokens<unpack_q5_1, tensor_type::q5_1>, dot<q8_tile<unpack_q5_1>>,
                                   avx2_kernels(tensor_type::q5_1)->quantize};
    static const type_kernels q4_1{gemm_by_tokens<unpack_q4_1, tensor_type::q4_1>, dot<q8_tile<unpack_q4_1>>,
                                   avx2_kernels(tensor_type::q4_1)->quantize};
    switch (weight) {
        case tensor_type::f32: return &f32;
        case tensor_type::f16: return &f16;
        case tensor_type::bf16: return &bf16;
        case tensor_type::q8_0: return &q8_0;
        case tensor_type::q4_0: return &q4_0;
        case tensor_type::q5_0: return &q5_0;
        case tensor_type::q5_1: return &q5_1;
        case tensor_type::q4_1: return &q4_1;
        case tensor_type::iq4_nl: return &iq4_nl;
        default: {
            const type_kernels* k = avx512_kquant_kernels(weight);
            return k != nullptr ? k : avx2_kernels(weight);
        }
    }
}

}  // namespace tachyon::detail
