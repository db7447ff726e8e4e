// AVX2/FMA/F16C kernels. Every function carries its own target attribute so
// the file builds for plain x86-64; kernels.cpp only calls in here after
// checking the CPU (default_isa).
//
// matmul works on tiles of RM weight rows x RN tokens: each weight block is
// loaded (and unpacked) once per tile and multiplied with RN activation rows,
// each activation block once and multiplied with RM weight rows. For one
// token (decode) RM = 4 independent rows keep four accumulator chains in
// flight while the weights stream from memory; the horizontal sum happens
// once per (row, token), never per block.
#include <immintrin.h>

#include <cstring>

#include "inference/gguf/fp16.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/gguf/quant.h"

#define TACHYON_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TACHYON_TILE_TARGET TACHYON_AVX2
#define TACHYON_TILE_VNNI 0
#include "inference/kernels/rows/kernels_q8_tile.h"

namespace tachyon::detail {
namespace {

TACHYON_AVX2 inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

// ---- f32 / f16 / bf16 weights against f32 activations ------------------------

struct load_f32 {
    using elem = float;
    TACHYON_AVX2 static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
    static float one(const float* p) { return *p; }
};

struct load_f16 {
    using elem = uint16_t;
    TACHYON_AVX2 static __m256 load8(const uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static float one(const uint16_t* p) { return fp16_to_fp32(*p); }
};

struct load_bf16 {
    using elem = uint16_t;
    TACHYON_AVX2 static __m256 load8(const uint16_t* p) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
    static float one(const uint16_t* p) { return bf16_to_fp32(*p); }
};

template <class L>
struct float_tile {
    static constexpr int rn = 2;

    template <int RM, int RN>
    TACHYON_AVX2 static void run(const gemm_args& a, int64_t r, int64_t t) {
        using elem = typename L::elem;
        const elem* w[RM];
        const float* x[RN];
        for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const elem*>(a.w + (r + i) * a.w_row_bytes);
        for (int j = 0; j < RN; ++j) x[j] = reinterpret_cast<const float*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[RM][RN];
#pragma GCC unroll 16
        for (int i = 0; i < RM; ++i)
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
        const int64_t n = a.n_cols;
        const bool stream = a.n_tokens <= max_stream_tokens;
        const int64_t ahead = prefetch_distance(a, float_prefetch_bytes);
        int64_t k = 0;
        for (; k + 8 <= n; k += 8) {
            __m256 xv[RN];
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) xv[j] = _mm256_loadu_ps(x[j] + k);
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                if (stream && ((k * static_cast<int64_t>(sizeof(elem))) & 63) == 0) prefetch_l2(w[i] + k, ahead);
                const __m256 wv = L::load8(w[i] + k);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
            }
        }
        for (int i = 0; i < RM; ++i) {
            for (int j = 0; j < RN; ++j) {
                float s = hsum(acc[i][j]);
                for (int64_t kk = k; kk < n; ++kk) s += L::one(w[i] + kk) * x[j][kk];
                a.y[(t + j) * a.ldy + r + i] = s;
            }
        }
    }
};

// Many tokens against float weights: rows_by_broadcast in kernels_avx512.cpp
// at 256 bits. 16 weight rows are converted to f32 and transposed once per
// panel of tokens into a buffer, [kc][16] floats, a chunk of kc columns at a
// time (16 KiB, in L1 on any x86 core); each column k of it is then two
// registers that x[k] of a token, broadcast from memory, scales into the 16
// row sums, 6 tokens sharing each column load: 12 accumulators, the two
// column halves and the broadcast fill 15 of the 16 ymm registers. Per 12
// FMAs 2 loads and 6 broadcasts, no conversion (float_tile converts each
// weight vector once per 2 tokens, the conversion's uops competing with the
// FMAs for the same ports) and no horizontal sums. The sums of the chunks
// after the first add onto y; every row sums its columns in order, whatever
// group it falls in, so threads splitting the rows anywhere agree.
// Measured on the Xeon (Sapphire Rapids class) forced to AVX2, f16,
// `TACHYON_KERNELS=avx2 tachyon bench matmul --type f16 --tokens 16,64,256
// -t 1 --mib 64 --no-bandwidth`, us: chunks of 512 columns 1442 / 4329 /
// 17917 against 1384 / 4138 / 15246 for 256.
template <class L>
struct columns_tile {
    static constexpr int rm = 16, nt = 6;
    static constexpr int64_t kc = 256;
    // A chunk reads kc columns of each token of a panel: 1 KiB a token, 256
    // KiB for the panel, in L2 (512 KiB on Zen 3). Each panel transposes
    // the weights again (panels of 256 KiB of whole activation rows, 64
    // tokens of 1024 columns: 256 tokens 17038 us against 15306).
    static constexpr int64_t panel_tokens = 256;

    // Columns [k0, k0 + kn) of rows r.. r + 15 (rows past n repeat row r):
    // wt[(k - k0) * 16 + i] = W[r + i, k].
    TACHYON_AVX2 static void transpose_rows(const gemm_args& a, int64_t r, int n, int64_t k0, int64_t kn, float* wt) {
        using elem = typename L::elem;
        const elem* row[rm];
        for (int i = 0; i < rm; ++i) row[i] = reinterpret_cast<const elem*>(a.w + (r + (i < n ? i : 0)) * a.w_row_bytes) + k0;
        // the same columns of the next group's rows, into L2 for its turn
        // (without: 3 tokens 656 us against 492, 256 tokens 18914 / 17038)
        const int64_t next = rm * static_cast<int64_t>(a.w_row_bytes);
        int64_t k = 0;
        for (; k + 8 <= kn; k += 8) {
            const bool new_line = (((k0 + k) * static_cast<int64_t>(sizeof(elem))) & 63) == 0;
#pragma GCC unroll 2
            for (int h = 0; h < rm; h += 8) {
                __m256 m[8];
#pragma GCC unroll 8
                for (int i = 0; i < 8; ++i) {
                    if (new_line) prefetch_l2(row[h + i] + k, next);
                    m[i] = L::load8(row[h + i] + k);
                }
                // 8 x 8 transpose: pairs of rows, then quads, then the 128-bit halves
                const __m256 t0 = _mm256_unpacklo_ps(m[0], m[1]), t1 = _mm256_unpackhi_ps(m[0], m[1]);
                const __m256 t2 = _mm256_unpacklo_ps(m[2], m[3]), t3 = _mm256_unpackhi_ps(m[2], m[3]);
                const __m256 t4 = _mm256_unpacklo_ps(m[4], m[5]), t5 = _mm256_unpackhi_ps(m[4], m[5]);
                const __m256 t6 = _mm256_unpacklo_ps(m[6], m[7]), t7 = _mm256_unpackhi_ps(m[6], m[7]);
                const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
                const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
                const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
                const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
                // column c (of k .. k + 7) of the 8 rows: u_c's low half with u_{c+4}'s low half, ...
                const __m256 c[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                                     _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                                     _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                                     _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
#pragma GCC unroll 8
                for (int j = 0; j < 8; ++j) _mm256_store_ps(wt + (k + j) * rm + h, c[j]);
            }
        }
        for (; k < kn; ++k)
            for (int i = 0; i < rm; ++i) wt[k * rm + i] = L::one(row[i] + k);
    }

    // The same columns from weights packed ahead (pack_panels: group g of
    // 32 rows at a.panels + g * n_cols * 32 elements, column k of it 32
    // elements; r a multiple of 16 in a whole group): a copy, converted.
    TACHYON_AVX2 static void from_panels(const gemm_args& a, int64_t r, int64_t k0, int64_t kn, float* wt) {
        using elem = typename L::elem;
        const elem* p = reinterpret_cast<const elem*>(a.panels) + (r / 32) * a.n_cols * 32 + r % 32;
        for (int64_t k = 0; k < kn; ++k) {
            _mm256_store_ps(wt + k * rm, L::load8(p + (k0 + k) * 32));
            _mm256_store_ps(wt + k * rm + 8, L::load8(p + (k0 + k) * 32 + 8));
        }
    }

    // Tokens t.. t + NT - 1 against the columns [k0, k0 + kn) at wt, onto y
    // when `add` (lanes outside keep_lo / keep_hi not stored). Fewer than 4
    // tokens split the columns over KS sets of sums, so that 8 FMA chains
    // are in flight.
    template <int NT>
    TACHYON_AVX2 static void tokens(const gemm_args& a, const float* wt, int64_t r, int64_t t, int64_t k0, int64_t kn, bool add,
                                    __m256i keep_lo, __m256i keep_hi) {
        constexpr int KS = NT >= 4 ? 1 : 4 / NT;
        const float* x[NT];
        for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const float*>(a.x + (t + j) * a.x_row_bytes) + k0;
        __m256 lo[KS][NT], hi[KS][NT];
#pragma GCC unroll 16
        for (int s = 0; s < KS; ++s)
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) lo[s][j] = hi[s][j] = _mm256_setzero_ps();
        int64_t k = 0;
        for (; k + KS <= kn; k += KS) {
#pragma GCC unroll 4
            for (int s = 0; s < KS; ++s) {
                const __m256 w0 = _mm256_load_ps(wt + (k + s) * rm), w1 = _mm256_load_ps(wt + (k + s) * rm + 8);
#pragma GCC unroll 16
                for (int j = 0; j < NT; ++j) {
                    const __m256 xk = _mm256_broadcast_ss(x[j] + k + s);
                    lo[s][j] = _mm256_fmadd_ps(xk, w0, lo[s][j]);
                    hi[s][j] = _mm256_fmadd_ps(xk, w1, hi[s][j]);
                }
            }
        }
        for (; k < kn; ++k) {
            const __m256 w0 = _mm256_load_ps(wt + k * rm), w1 = _mm256_load_ps(wt + k * rm + 8);
#pragma GCC unroll 16
            for (int j = 0; j < NT; ++j) {
                const __m256 xk = _mm256_broadcast_ss(x[j] + k);
                lo[0][j] = _mm256_fmadd_ps(xk, w0, lo[0][j]);
                hi[0][j] = _mm256_fmadd_ps(xk, w1, hi[0][j]);
            }
        }
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) {
#pragma GCC unroll 4
            for (int s = 1; s < KS; ++s) {
                lo[0][j] = _mm256_add_ps(lo[0][j], lo[s][j]);
                hi[0][j] = _mm256_add_ps(hi[0][j], hi[s][j]);
            }
            float* y = a.y + (t + j) * a.ldy + r;
            if (add) {
                lo[0][j] = _mm256_add_ps(lo[0][j], _mm256_maskload_ps(y, keep_lo));
                hi[0][j] = _mm256_add_ps(hi[0][j], _mm256_maskload_ps(y + 8, keep_hi));
            }
            _mm256_maskstore_ps(y, keep_lo, lo[0][j]);
            _mm256_maskstore_ps(y + 8, keep_hi, hi[0][j]);
        }
    }

    template <int NT = nt - 1>
    TACHYON_AVX2 static void tail(const gemm_args& a, const float* wt, int64_t r, int64_t t, int64_t k0, int64_t kn, bool add,
                                  __m256i keep_lo, __m256i keep_hi, int64_t n) {
        if constexpr (NT >= 1) {
            if (n == NT) return tokens<NT>(a, wt, r, t, k0, kn, add, keep_lo, keep_hi);
            tail<NT - 1>(a, wt, r, t, k0, kn, add, keep_lo, keep_hi, n);
        }
    }

    TACHYON_AVX2 static void run(const gemm_args& a, int64_t r0, int64_t r1) {
        alignas(32) static thread_local float wt[kc * rm];
        for (int64_t t0 = 0; t0 < a.n_tokens; t0 += panel_tokens) {
            const int64_t t1 = std::min(a.n_tokens, t0 + panel_tokens);
            for (int64_t r = r0; r < r1; r += rm) {
                const int n = static_cast<int>(std::min<int64_t>(rm, r1 - r));
                const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
                const __m256i keep_lo = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes);
                const __m256i keep_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8), lanes);
                for (int64_t k0 = 0; k0 < a.n_cols; k0 += kc) {
                    const int64_t kn = std::min(kc, a.n_cols - k0);
                    if (a.panels != nullptr) from_panels(a, r, k0, kn, wt);
                    else transpose_rows(a, r, n, k0, kn, wt);
                    int64_t t = t0;
                    for (; t + nt <= t1; t += nt) tokens<nt>(a, wt, r, t, k0, kn, k0 > 0, keep_lo, keep_hi);
                    tail(a, wt, r, t, k0, kn, k0 > 0, keep_lo, keep_hi, t1 - t);
                }
            }
        }
    }
};

// Few tokens against float weights packed ahead (pack_panels, [n_rows /
// 32][n_cols][32], in place of the file's pages from the AVX2 level on):
// column k of 32 rows is four registers that x[k] of a token, broadcast,
// scales into the 32 row sums, with no horizontal sums, one stream of
// weights from huge pages (rows in place are 4 streams, each crossing a 4
// KiB page every 2048 f16 values) prefetched ahead. One token splits the
// columns over two sets of sums, so that 8 multiply-add chains are in
// flight; 2 tokens fill 8 sums, 4 weights and a broadcast of the 16
// registers.
// Groups one token reads at once from the panels (panels_tile::
// one_token_tiles): Zen 5, TACHYON_KERNELS=avx2, the 220M shape in F16,
// tg32, four alternating rounds: one group 56.6-59.6 t/s, two 67.1-70.5,
// three 64.4-77.6, four 59.2-75.6 (16 sums spill); two threads, one group
// 96.7-97.1, three 111.5-116.0.
constexpr int one_token_panels = 3;

template <class L>
struct panels_tile {
    static constexpr int rm = 32;
    static constexpr int64_t prefetch_bytes = 8 << 10;

    template <int NT>
    TACHYON_AVX2 static void tokens(const gemm_args& a, const typename L::elem* p, int64_t r, int64_t t, bool prefetch) {
        using elem = typename L::elem;
        constexpr int KS = NT == 1 ? 2 : 1;
        constexpr int64_t lines = 32 * sizeof(elem) / 64;  // a column's cache lines
        const float* x[NT];
        for (int j = 0; j < NT; ++j) x[j] = reinterpret_cast<const float*>(a.x + (t + j) * a.x_row_bytes);
        __m256 acc[KS][NT][4];
#pragma GCC unroll 2
        for (int s = 0; s < KS; ++s)
#pragma GCC unroll 2
            for (int j = 0; j < NT; ++j)
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) acc[s][j][c] = _mm256_setzero_ps();
        int64_t k = 0;
        for (; k + KS <= a.n_cols; k += KS) {
#pragma GCC unroll 2
            for (int s = 0; s < KS; ++s) {
                const elem* col = p + (k + s) * 32;
                if (prefetch)
                    for (int64_t l = 0; l < lines; ++l) _mm_prefetch(reinterpret_cast<const char*>(col) + prefetch_bytes + 64 * l, _MM_HINT_T1);
                __m256 w[4];
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) w[c] = L::load8(col + 8 * c);
#pragma GCC unroll 2
                for (int j = 0; j < NT; ++j) {
                    const __m256 xk = _mm256_broadcast_ss(x[j] + k + s);
#pragma GCC unroll 4
                    for (int c = 0; c < 4; ++c) acc[s][j][c] = _mm256_fmadd_ps(xk, w[c], acc[s][j][c]);
                }
            }
        }
        for (; k < a.n_cols; ++k) {
            const elem* col = p + k * 32;
#pragma GCC unroll 2
            for (int j = 0; j < NT; ++j) {
                const __m256 xk = _mm256_broadcast_ss(x[j] + k);
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) acc[0][j][c] = _mm256_fmadd_ps(xk, L::load8(col + 8 * c), acc[0][j][c]);
            }
        }
#pragma GCC unroll 2
        for (int j = 0; j < NT; ++j)
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                __m256 v = acc[0][j][c];
                if constexpr (KS == 2) v = _mm256_add_ps(v, acc[1][j][c]);
                _mm256_storeu_ps(a.y + (t + j) * a.ldy + r + 8 * c, v);
            }
    }

    // One token against S groups at once (rows r[s].. at p[s]), a column of
    // each in turn: S stretches of the panels read at once (as the AVX-512
    // level's one_token_tiles); the S * 4 sums are the multiply-add chains.
    template <int S>
    TACHYON_AVX2 static void one_token_tiles(const gemm_args& a, const typename L::elem* const (&p)[S], const int64_t (&r)[S]) {
        constexpr int64_t lines = 32 * sizeof(typename L::elem) / 64;
        const float* x = reinterpret_cast<const float*>(a.x);
        __m256 acc[S][4];
#pragma GCC unroll 4
        for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) acc[s][c] = _mm256_setzero_ps();
        for (int64_t k = 0; k < a.n_cols; ++k) {
            const __m256 xk = _mm256_broadcast_ss(x + k);
#pragma GCC unroll 4
            for (int s = 0; s < S; ++s) {
                const auto* col = p[s] + k * 32;
                for (int64_t l = 0; l < lines; ++l) _mm_prefetch(reinterpret_cast<const char*>(col) + prefetch_bytes + 64 * l, _MM_HINT_T1);
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) acc[s][c] = _mm256_fmadd_ps(xk, L::load8(col + 8 * c), acc[s][c]);
            }
        }
#pragma GCC unroll 4
        for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) _mm256_storeu_ps(a.y + r[s] + 8 * c, acc[s][c]);
    }

    // Rows [r0, r_end), whole groups of 32 (r0 a multiple of 32), every token.
    TACHYON_AVX2 static void run(const gemm_args& a, int64_t r0, int64_t r_end) {
        const auto* panels = reinterpret_cast<const typename L::elem*>(a.panels);
        if (a.n_tokens == 1) {
            constexpr int S = one_token_panels;
            const int64_t run = (r_end - r0) / rm / S;
            for (int64_t i = 0; i < run; ++i) {
                const typename L::elem* p[S];
                int64_t rs[S];
                for (int s = 0; s < S; ++s) {
                    rs[s] = r0 + rm * (s * run + i);
                    p[s] = panels + rs[s] * a.n_cols;
                }
                one_token_tiles<S>(a, p, rs);
            }
            // the rest one group at a time, its sums in the same order (two threads give what one does)
            for (int64_t r = r0 + rm * S * run; r < r_end; r += rm) one_token_tiles<1>(a, {panels + r * a.n_cols}, {r});
            return;
        }
        for (int64_t r = r0; r < r_end; r += rm) {
            const auto* p = panels + r * a.n_cols;
            int64_t t = 0;
            for (; t + 2 <= a.n_tokens; t += 2) tokens<2>(a, p, r, t, t == 0);
            if (t < a.n_tokens) tokens<1>(a, p, r, t, t == 0);
        }
    }
};

// Float batches of this many tokens and more take columns_tile, whose
// transpose (shuffles, 0.4 cycles a weight) pays from here on (the bench
// command above, f16, us against float_tile: 8 tokens 938 / 739, 12 1143 /
// 1176, 16 1407 / 1789, 64 4148 / 7355, 256 15306 / 26005; prompts of 512
// on the 220M f16 model 133 -> 190 tokens/s).
constexpr int64_t min_tokens_columns = 12;

// With panels (r0 a multiple of 32), their whole groups: columns_tile
// fills its buffer from them for batches of min_tokens_columns and more,
// panels_tile reads them as they are below; rows past the last whole group
// (no panel) and weights without panels take the row tiles, columns_tile
// (f16) as before.
template <class L, bool Columns>
TACHYON_AVX2 void gemm_float(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.panels != nullptr && r0 % 32 == 0) {
        const int64_t r_end = r0 + (r1 - r0) / 32 * 32;
        if (a.n_tokens >= min_tokens_columns) columns_tile<L>::run(a, r0, r_end);
        else panels_tile<L>::run(a, r0, r_end);
        r0 = r_end;
        if (r0 >= r1) return;
    }
    gemm_args in_place = a;
    in_place.panels = nullptr;
    if (Columns && a.n_tokens >= min_tokens_columns) return columns_tile<L>::run(in_place, r0, r1);
    gemm<float_tile<L>>(in_place, r0, r1);
}

// ---- activation quantizers ----------------------------------------------------

// 32 floats -> 32 int8 (round to nearest even) scaled by `id`.
TACHYON_AVX2 inline __m256i quantize32(const float* x, __m256 id) {
    const __m256i q0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), id));
    const __m256i q1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), id));
    const __m256i q2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), id));
    const __m256i q3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), id));
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
    // The packs work per 128-bit lane; restore element order.
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// n a multiple of 32: four chains of maxima, not one (a block of 256 is 32
// maxima, which one chain waits out at their latency).
TACHYON_AVX2 inline float max_abs(const float* x, int n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m4[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int k = 0; k < n; k += 32)
        for (int i = 0; i < 4; ++i) m4[i] = _mm256_max_ps(m4[i], _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k + 8 * i)));
    const __m256 m = _mm256_max_ps(_mm256_max_ps(m4[0], m4[1]), _mm256_max_ps(m4[2], m4[3]));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TACHYON_AVX2 void quantize_q8_0(const float* x, void* dst, int64_t n) {
    auto* out = static_cast<block_q8_0*>(dst);
    for (int64_t b = 0; b < n / qk_32; ++b) {
        const float* xb = x + b * qk_32;
        const float d = max_abs(xb, qk_32) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].d = fp32_to_fp16(d);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), quantize32(xb, _mm256_set1_ps(id)));
    }
}

TACHYON_AVX2 void quantize_q8_1(const float* x, void* dst, int64_t n) {
    auto* out = static_cast<block_q8_1*>(dst);
    const __m256i ones8 = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < n / qk_32; ++b) {
        const float* xb = x + b * qk_32;
        const float d = max_abs(xb, qk_32) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const __m256i q = quantize32(xb, _mm256_set1_ps(id));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), q);
        const int sum = hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), _mm256_set1_epi16(1)));
        out[b].d = fp32_to_fp16(d);
        out[b].s = fp32_to_fp16(d * static_cast<float>(sum));
    }
}

TACHYON_AVX2 void quantize_q8_k(const float* x, void* dst, int64_t n) {
    auto* out = static_cast<block_q8_k*>(dst);
    const __m256i ones8 = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < n / qk_k; ++b) {
        const float* xb = x + b * qk_k;
        const float d = max_abs(xb, qk_k) / 127.0f;
        const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
        out[b].d = d;
        for (int c0 = 0; c0 < qk_k / 32; c0 += 4) {
            // Four chunks of 32: each one's sums of 4 bytes (8 dwords), then
            // two horizontal adds leave in each 128-bit lane the four
            // chunks' sums of 16, low halves in lane 0 and high in lane 1,
            // interleaved into bsums order and narrowed (|sum| <= 2032).
            __m256i s4[4];
            for (int i = 0; i < 4; ++i) {
                const __m256i q = quantize32(xb + 32 * (c0 + i), id);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs + 32 * (c0 + i)), q);
                s4[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), _mm256_set1_epi16(1));
            }
            const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s4[0], s4[1]), _mm256_hadd_epi32(s4[2], s4[3]));
            const __m128i lo = _mm256_castsi256_si128(h), hi = _mm256_extracti128_si256(h, 1);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].bsums + 2 * c0),
                             _mm_packs_epi32(_mm_unpacklo_epi32(lo, hi), _mm_unpackhi_epi32(lo, hi)));
        }
    }
}

// q4_0, q4_1, q5_0 and q5_1 batches of this many tokens and more take the
// rows-in-lanes tiles of kernels_prompt.cpp (q4_0 measured on Zen 5, one
// thread, 2816 x 1024 weights from DRAM, `tachyon bench matmul --type q4_0
// --mib 64`, us per matmul against the 4 x 2 q8 tile: 4 tokens 123 against
// 236, 8 208 / 477, 32 745 / 2240, 128 2930 / 8300; 2 tokens even, 124
// against 122; on a Xeon (Sapphire Rapids, `TACHYON_KERNELS=avx2 ...
// --tokens 4,8,32,128 -t 1 --no-bandwidth`) q5_0 436 / 604, 607 / 1200,
// 1589 / 4996, 5784 / 19316; q4_1 357 / 512, 556 / 971, 1651 / 3935, 6044 /
// 16015; q5_1 444 / 624, 679 / 1219, 1812 / 5212, 6517 / 19227; 3 tokens
// q4_0 222-234 / 347-356, q4_1 277 / 401, q5_0 368 / 481). q8_0 and
// iq4_nl, whose bytes + 128 overflow maddubs, take tiles of their signed
// values (tokens8 and, from 16 tokens, tokens8_split in kernels_prompt.cpp;
// the same Xeon and command, us against the q8 tile: 3 / 4 / 16 tokens
// q8_0 255 / 312, 316 / 448, 1040 / 1547, iq4_nl 241 / 340, 305 / 421, 958
// / 1602; 256 tokens q8_0 12286-12775 / 23637, iq4_nl 12843 / 25767).
constexpr int64_t min_tokens_prompt = 3;

template <class U, tensor_type T>
TACHYON_AVX2 void gemm_by_tokens(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens >= min_tokens_prompt) return prompt_gemm_avx2(T)(a, r0, r1);
    // q8_0 and iq4_nl (signed values) have no AVX2 nibble_decode_tile
    if constexpr (U::offset == 0) gemm_signed<U>(a, r0, r1);
    else gemm_nibbles<U>(a, r0, r1);
}

constexpr type_kernels avx2_f32{gemm_float<load_f32, false>, dot<float_tile<load_f32>>, nullptr};
constexpr type_kernels avx2_f16{gemm_float<load_f16, true>, dot<float_tile<load_f16>>, nullptr};
constexpr type_kernels avx2_bf16{gemm_float<load_bf16, false>, dot<float_tile<load_bf16>>, nullptr};
constexpr type_kernels avx2_q8_0{gemm_by_tokens<unpack_q8_0, tensor_type::q8_0>, dot<q8_tile<unpack_q8_0>>, quantize_q8_0};
constexpr type_kernels avx2_q4_0{gemm_by_tokens<unpack_q4_0, tensor_type::q4_0>, dot<q8_tile<unpack_q4_0>>, quantize_q8_0};
constexpr type_kernels avx2_q4_1{gemm_by_tokens<unpack_q4_1, tensor_type::q4_1>, dot<q8_tile<unpack_q4_1>>, quantize_q8_1};
constexpr type_kernels avx2_q5_0{gemm_by_tokens<unpack_q5_0, tensor_type::q5_0>, dot<q8_tile<unpack_q5_0>>, quantize_q8_0};
constexpr type_kernels avx2_q5_1{gemm_by_tokens<unpack_q5_1, tensor_type::q5_1>, dot<q8_tile<unpack_q5_1>>, quantize_q8_1};
constexpr type_kernels avx2_iq4_nl{gemm_by_tokens<unpack_iq4_nl, tensor_type::iq4_nl>, dot<q8_tile<unpack_iq4_nl>>, quantize_q8_0};

}  // namespace

const type_kernels* avx2_kernels(tensor_type weight) {
    switch (weight) {
        case tensor_type::f32: return &avx2_f32;
        case tensor_type::f16: return &avx2_f16;
        case tensor_type::bf16: return &avx2_bf16;
        case tensor_type::q8_0: return &avx2_q8_0;
        case tensor_type::q4_0: return &avx2_q4_0;
        case tensor_type::q4_1: return &avx2_q4_1;
        case tensor_type::q5_0: return &avx2_q5_0;
        case tensor_type::q5_1: return &avx2_q5_1;
        case tensor_type::iq4_nl: return &avx2_iq4_nl;
        default: return avx2_kquant_kernels(weight, quantize_q8_k);
    }
}

}  // namespace tachyon::detail
