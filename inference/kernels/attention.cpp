// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "inference/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/assert.h"
#include "inference/gguf/fp16.h"
#include "inference/kernels/attention_avx512.h"
#include "inference/kernels/ops.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define TACHYON_ATTENTION_AVX2 1
#endif

namespace tachyon {
namespace {

// One K or V value (f32 or fp16) as f32.
inline float widen(float x) { return x; }
inline float widen(uint16_t h) {
#if TACHYON_ATTENTION_AVX2
    return _cvtsh_ss(h);
#else
    return fp16_to_fp32(h);
#endif
}

// The K or V blocks of a call, as the cache holds them.
template <class T>
const T* const* k_blocks(const attention_args& a) {
    if constexpr (std::is_same_v<T, uint16_t>) return a.k16;
    else return a.k;
}
template <class T>
const T* const* v_blocks(const attention_args& a) {
    if constexpr (std::is_same_v<T, uint16_t>) return a.v16;
    else return a.v;
}

#if TACHYON_ATTENTION_AVX2
// Eight f32 or fp16 values at p as f32.
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
#endif
#if TACHYON_ATTENTION_AVX512
// Sixteen f32 or fp16 values at p as f32.
TACHYON_AVX512 inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
TACHYON_AVX512 inline __m512 load16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
#endif

#if TACHYON_ATTENTION_AVX2 || TACHYON_ATTENTION_AVX512
// How many blocks ahead the row kernels ask for K and V. A sequence's
// blocks lie anywhere in the cache's arena (a layer's block of 16
// positions is 4 KiB a KV head at head_dim 64), which the hardware
// prefetchers, trained within a page, do not follow: each block was a
// fresh wait on memory (fp16: 2 KiB). Fewer rows spend less time on a block, so they ask
// further ahead.
template <int R>
constexpr int blocks_ahead = R >= 4 ? 4 : 8;

// Registers of a row's sums in a chunk of V's dimensions when R rows share
// `budget` registers: the largest power of two (at most 8) within both
// budget / R and nv, a row's registers for all HD dimensions.
constexpr int sums_per_chunk(int budget, int rows, int nv) {
    const int most = std::min(budget / rows, nv);
    return most >= 8 ? 8 : most >= 4 ? 4 : most >= 2 ? 2 : 1;
}

// One V row of HD values into L2.
template <int HD, class T>
inline void prefetch_row(const T* p) {
    constexpr int bytes = HD * static_cast<int>(sizeof(T));
    for (int l = 0; l < bytes / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(p) + 64 * l, _MM_HINT_T1);
    if constexpr (bytes % 64 != 0) _mm_prefetch(reinterpret_cast<const char*>(p + HD - 1), _MM_HINT_T1);
}
#endif

// HD: head dimension, BS: block size; 0 = known only at run time.
template <class T, int HD, int BS>
void attend_fixed(const attention_args& a, int head_dim, kernel_isa isa) {
    const int hd = HD > 0 ? HD : head_dim;
    const int bs = BS > 0 ? BS : a.block_size;
    // Scores, a block at a time: s[p] = Σ_d q[d] · K^T[d][p], all positions of the block together.
    int j = 0;
    for (int b = 0; j < a.n_pos; ++b) {
        const T* kt = k_blocks<T>(a)[b];
        const int n = std::min(bs, a.n_pos - j);
        float s[BS > 0 ? BS : 256];
        if (BS > 0 || bs <= 256) {
            for (int p = 0; p < bs; ++p) s[p] = 0.0f;
            for (int d = 0; d < hd; ++d) {
                const float qd = a.q[d] * a.scale;
                const T* row = kt + static_cast<int64_t>(d) * bs;
                for (int p = 0; p < bs; ++p) s[p] += qd * widen(row[p]);
            }
            for (int p = 0; p < n; ++p) a.scores[j + p] = s[p];
        } else {
            for (int p = 0; p < n; ++p) {
                float acc = 0.0f;
                for (int d = 0; d < hd; ++d) acc += a.q[d] * widen(kt[static_cast<int64_t>(d) * bs + p]);
                a.scores[j + p] = acc * a.scale;
            }
        }
        j += n;
    }
    softmax(a.scores, a.n_pos, isa);
    // out = Σ p_j v_j, accumulated in a local array the compiler keeps in registers.
    float acc[HD > 0 ? HD : 256] = {};
    j = 0;
    for (int b = 0; j < a.n_pos; ++b) {
        const T* vb = v_blocks<T>(a)[b];
        const int n = std::min(bs, a.n_pos - j);
        for (int i = 0; i < n; ++i, ++j) {
            const T* v = vb + static_cast<int64_t>(i) * a.stride;
            const float p = a.scores[j];
            for (int d = 0; d < hd; ++d) acc[d] += p * widen(v[d]);
        }
    }
    for (int d = 0; d < hd; ++d) a.out[d] = acc[d];
}

#if TACHYON_ATTENTION_AVX2
// The same with AVX2 intrinsics, for block size 16 and head dimensions that
// are multiples of 8: a block's 16 scores live in two registers, the output
// accumulates in HD / 8 registers.
template <class T, int HD>
void attend_avx2(const attention_args& a, kernel_isa isa) {
    constexpr int BS = 16, NV = HD / 8;
    alignas(32) float q[HD];
    for (int d = 0; d < HD; ++d) q[d] = a.q[d] * a.scale;
    int j = 0;
    for (int b = 0; j < a.n_pos; ++b) {
        const T* kt = k_blocks<T>(a)[b];
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        for (int d = 0; d < HD; ++d) {
            const __m256 qd = _mm256_broadcast_ss(&q[d]);
            s0 = _mm256_fmadd_ps(qd, load8(kt + d * BS), s0);
            s1 = _mm256_fmadd_ps(qd, load8(kt + d * BS + 8), s1);
        }
        const int n = std::min(BS, a.n_pos - j);
        if (n == BS) {
            _mm256_storeu_ps(a.scores + j, s0);
            _mm256_storeu_ps(a.scores + j + 8, s1);
        } else {
            alignas(32) float tmp[BS];
            _mm256_store_ps(tmp, s0);
            _mm256_store_ps(tmp + 8, s1);
            for (int p = 0; p < n; ++p) a.scores[j + p] = tmp[p];
        }
        j += n;
    }
    softmax(a.scores, a.n_pos, isa);
    __m256 acc[NV];
    for (int k = 0; k < NV; ++k) acc[k] = _mm256_setzero_ps();
    j = 0;
    for (int b = 0; j < a.n_pos; ++b) {
        const T* vb = v_blocks<T>(a)[b];
        const int n = std::min(BS, a.n_pos - j);
        for (int i = 0; i < n; ++i, ++j) {
            const T* v = vb + static_cast<int64_t>(i) * a.stride;
            const __m256 p = _mm256_broadcast_ss(a.scores + j);
            for (int k = 0; k < NV; ++k) acc[k] = _mm256_fmadd_ps(p, load8(v + 8 * k), acc[k]);
        }
    }
    for (int k = 0; k < NV; ++k) _mm256_storeu_ps(a.out + 8 * k, acc[k]);
}
#endif

#if TACHYON_ATTENTION_AVX2
// R rows at once, block size 16, HD a multiple of 8.
template <class T, int HD, int R>
void attend_rows_avx2(const attention_args& a, const attention_row* rows, kernel_isa isa) {
    constexpr int BS = 16, NV = HD / 8;
    alignas(32) float q[R][HD];
    int n_max = 0;
    for (int r = 0; r < R; ++r) {
        for (int d = 0; d < HD; ++d) q[r][d] = rows[r].q[d] * a.scale;
        n_max = std::max(n_max, rows[r].n_pos);
    }
    // Scores of every row, a block at a time; each K row feeds R rows.
    const int n_blocks = (n_max + BS - 1) / BS;
    int j = 0;
    for (int b = 0; j < n_max; ++b) {
        const T* kt = k_blocks<T>(a)[b];
        const T* ahead = k_blocks<T>(a)[std::min(b + blocks_ahead<R>, n_blocks - 1)];
        __m256 s0[R], s1[R];
        for (int r = 0; r < R; ++r) s0[r] = s1[r] = _mm256_setzero_ps();
        for (int d = 0; d < HD; ++d) {
            // fp16: a line holds two dimensions' 16 positions
            if (a.stream && d % (sizeof(T) == 2 ? 2 : 1) == 0) _mm_prefetch(reinterpret_cast<const char*>(ahead + d * BS), _MM_HINT_T1);
            const __m256 k0 = load8(kt + d * BS), k1 = load8(kt + d * BS + 8);
            for (int r = 0; r < R; ++r) {
                const __m256 qd = _mm256_broadcast_ss(&q[r][d]);
                s0[r] = _mm256_fmadd_ps(qd, k0, s0[r]);
                s1[r] = _mm256_fmadd_ps(qd, k1, s1[r]);
            }
        }
        for (int r = 0; r < R; ++r) {
            const int n = std::min(BS, rows[r].n_pos - j);
            if (n <= 0) continue;
            if (n == BS) {
                _mm256_storeu_ps(rows[r].scores + j, s0[r]);
                _mm256_storeu_ps(rows[r].scores + j + 8, s1[r]);
            } else {
                alignas(32) float tmp[BS];
                _mm256_store_ps(tmp, s0[r]);
                _mm256_store_ps(tmp + 8, s1[r]);
                for (int p = 0; p < n; ++p) rows[r].scores[j + p] = tmp[p];
            }
        }
        j += BS;
    }
    // Softmax per row; positions a row does not see weigh 0 in the sum below.
    for (int r = 0; r < R; ++r) {
        softmax(rows[r].scores, rows[r].n_pos, isa);
        std::fill(rows[r].scores + rows[r].n_pos, rows[r].scores + n_max, 0.0f);
    }
    // out_r = Σ_j p_r[j] v_j a chunk of 8 NC dimensions at a time, every
    // row's sums of the chunk in registers (at most 8 of the 16) and each V
    // value widened once for all rows. Passes of two rows over whole V rows
    // kept 2 HD / 8 sums, which at head size 64 and up no longer fit the
    // registers, and widened each V row again in every pass.
    constexpr int NC = sums_per_chunk(8, R, NV);
    for (int c0 = 0; c0 < NV; c0 += NC) {
        __m256 acc[R][NC];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int k = 0; k < NC; ++k) acc[r][k] = _mm256_setzero_ps();
        j = 0;
        for (int b = 0; j < n_max; ++b) {
            const T* vb = v_blocks<T>(a)[b] + 8 * c0;
            const T* ahead = v_blocks<T>(a)[std::min(b + blocks_ahead<R>, n_blocks - 1)];
            const int n = std::min(BS, n_max - j);
            for (int i = 0; i < n; ++i, ++j) {
                const T* v = vb + static_cast<int64_t>(i) * a.stride;
                if (a.stream && c0 == 0) prefetch_row<HD>(ahead + static_cast<int64_t>(i) * a.stride);
                __m256 vk[NC];
#pragma GCC unroll 4
                for (int k = 0; k < NC; ++k) vk[k] = load8(v + 8 * k);
#pragma GCC unroll 4
                for (int r = 0; r < R; ++r) {
                    const __m256 p = _mm256_broadcast_ss(rows[r].scores + j);
#pragma GCC unroll 4
                    for (int k = 0; k < NC; ++k) acc[r][k] = _mm256_fmadd_ps(p, vk[k], acc[r][k]);
                }
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int k = 0; k < NC; ++k) _mm256_storeu_ps(rows[r].out + 8 * (c0 + k), acc[r][k]);
    }
}

template <class T, int HD>
bool attend_rows_hd(const attention_args& a, const attention_row* rows, int n_rows, kernel_isa isa) {
    switch (n_rows) {
        case 2: attend_rows_avx2<T, HD, 2>(a, rows, isa); return true;
        case 3: attend_rows_avx2<T, HD, 3>(a, rows, isa); return true;
        case 4: attend_rows_avx2<T, HD, 4>(a, rows, isa); return true;
        default: return false;
    }
}
#endif

#if TACHYON_ATTENTION_AVX512
using detail::exp512_nonpositive;
using detail::hmax16;
using detail::hsum16;

// R rows (1..8) at once with AVX-512: a block of 16 positions is one
// register, so a row's scores for a block take HD multiply-adds with the
// query value broadcast from memory, and each K^T row loaded serves all R
// rows; the rows' maxima are kept on the way. Each row's scores then become
// e^(s - max) in one pass that also sums them. The weighted sum of V runs
// over the dimensions in chunks of 16 NC, all R rows' sums of a chunk in
// registers (at most 24 of the 32), and is divided by the row's sum at the
// end (HD divisions, not one per position).
template <class T, int HD, int R>
TACHYON_AVX512 void attend_rows_avx512(const attention_args& a, const attention_row* rows) {
    constexpr int BS = 16, NV = HD / 16, NC = sums_per_chunk(24, R, NV);
    alignas(64) float q[R][HD];
    int n_max = 0;
    for (int r = 0; r < R; ++r) {
        for (int d = 0; d < HD; ++d) q[r][d] = rows[r].q[d] * a.scale;
        n_max = std::max(n_max, rows[r].n_pos);
    }
    __m512 vmax[R];
    for (int r = 0; r < R; ++r) vmax[r] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    // The scores of positions j.. j + 15, kept where each row reaches.
    const auto keep = [&](const __m512(&s)[R], int j) TACHYON_AVX512 {
        for (int r = 0; r < R; ++r) {
            const int n = std::min(BS, rows[r].n_pos - j);
            if (n <= 0) continue;
            const auto m = static_cast<__mmask16>(n >= BS ? 0xffffu : (1u << n) - 1u);
            _mm512_mask_storeu_ps(rows[r].scores + j, m, s[r]);
            vmax[r] = _mm512_mask_max_ps(vmax[r], m, vmax[r], s[r]);
        }
    };
    // Two K blocks per pass: each q broadcast serves both, and the 2R
    // accumulator chains keep both FMA units busy (one block's R chains
    // stall on the FMA latency).
    const int n_blocks = (n_max + BS - 1) / BS;
    int j = 0, b = 0;
    for (; j + BS < n_max; b += 2, j += 2 * BS) {
        const T* kt0 = k_blocks<T>(a)[b];
        const T* kt1 = k_blocks<T>(a)[b + 1];
        const T* ahead0 = k_blocks<T>(a)[std::min(b + blocks_ahead<R>, n_blocks - 1)];
        const T* ahead1 = k_blocks<T>(a)[std::min(b + 1 + blocks_ahead<R>, n_blocks - 1)];
        __m512 s0[R], s1[R];
        for (int r = 0; r < R; ++r) s0[r] = s1[r] = _mm512_setzero_ps();
        for (int d = 0; d < HD; ++d) {
            if (a.stream && d % (sizeof(T) == 2 ? 2 : 1) == 0) {  // fp16: a line holds two dimensions' 16 positions
                _mm_prefetch(reinterpret_cast<const char*>(ahead0 + d * BS), _MM_HINT_T1);
                _mm_prefetch(reinterpret_cast<const char*>(ahead1 + d * BS), _MM_HINT_T1);
            }
            const __m512 k0 = load16(kt0 + d * BS);
            const __m512 k1 = load16(kt1 + d * BS);
            for (int r = 0; r < R; ++r) {
                const __m512 qd = _mm512_set1_ps(q[r][d]);
                s0[r] = _mm512_fmadd_ps(qd, k0, s0[r]);
                s1[r] = _mm512_fmadd_ps(qd, k1, s1[r]);
            }
        }
        keep(s0, j);
        keep(s1, j + BS);
    }
    if (j < n_max) {
        const T* kt = k_blocks<T>(a)[b];
        __m512 s[R];
        for (int r = 0; r < R; ++r) s[r] = _mm512_setzero_ps();
        for (int d = 0; d < HD; ++d) {
            const __m512 k = load16(kt + d * BS);
            for (int r = 0; r < R; ++r) s[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r][d]), k, s[r]);
        }
        keep(s, j);
    }
    float inv_sum[R];
    for (int r = 0; r < R; ++r) {
        float* x = rows[r].scores;
        const int n = rows[r].n_pos;
        const __m512 max = _mm512_set1_ps(hmax16(vmax[r]));
        __m512 sum = _mm512_setzero_ps();
        int i = 0;
        for (; i + 16 <= n; i += 16) {
            const __m512 e = exp512_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(x + i), max));
            _mm512_storeu_ps(x + i, e);
            sum = _mm512_add_ps(sum, e);
        }
        if (i < n) {
            const auto m = static_cast<__mmask16>((1u << (n - i)) - 1u);
            const __m512 e = exp512_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), max));
            _mm512_mask_storeu_ps(x + i, m, e);
            sum = _mm512_mask_add_ps(sum, m, sum, e);
        }
        inv_sum[r] = 1.0f / hsum16(sum);
        std::fill(x + n, x + n_max, 0.0f);
    }
    // The weighted sum of V a chunk of dimensions at a time, every row's
    // sums of the chunk in registers: each V value is widened once for all
    // R rows. Passes of a few rows over whole V rows widened each row again
    // in every pass, a conversion for every two multiply-adds at head size
    // 128 and 8 rows.
    for (int c0 = 0; c0 < NV; c0 += NC) {
        __m512 acc[R][NC];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int k = 0; k < NC; ++k) acc[r][k] = _mm512_setzero_ps();
        j = 0;
        for (int b = 0; j < n_max; ++b) {
            const T* vb = v_blocks<T>(a)[b] + 16 * c0;
            const T* ahead = v_blocks<T>(a)[std::min(b + blocks_ahead<R>, n_blocks - 1)];
            const int n = std::min(BS, n_max - j);
            for (int i = 0; i < n; ++i, ++j) {
                const T* v = vb + static_cast<int64_t>(i) * a.stride;
                if (a.stream && c0 == 0) prefetch_row<HD>(ahead + static_cast<int64_t>(i) * a.stride);
                __m512 vk[NC];
#pragma GCC unroll 8
                for (int k = 0; k < NC; ++k) vk[k] = load16(v + 16 * k);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    const __m512 p = _mm512_set1_ps(rows[r].scores[j]);
#pragma GCC unroll 8
                    for (int k = 0; k < NC; ++k) acc[r][k] = _mm512_fmadd_ps(p, vk[k], acc[r][k]);
                }
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m512 inv = _mm512_set1_ps(inv_sum[r]);
#pragma GCC unroll 8
            for (int k = 0; k < NC; ++k) _mm512_storeu_ps(rows[r].out + 16 * (c0 + k), _mm512_mul_ps(acc[r][k], inv));
        }
    }
}

template <class T, int HD>
bool attend_rows_avx512_hd(const attention_args& a, const attention_row* rows, int n_rows) {
    switch (n_rows) {
        case 1: attend_rows_avx512<T, HD, 1>(a, rows); return true;
        case 2: attend_rows_avx512<T, HD, 2>(a, rows); return true;
        case 3: attend_rows_avx512<T, HD, 3>(a, rows); return true;
        case 4: attend_rows_avx512<T, HD, 4>(a, rows); return true;
        case 5: attend_rows_avx512<T, HD, 5>(a, rows); return true;
        case 6: attend_rows_avx512<T, HD, 6>(a, rows); return true;
        case 7: attend_rows_avx512<T, HD, 7>(a, rows); return true;
        case 8: attend_rows_avx512<T, HD, 8>(a, rows); return true;
        default: return false;
    }
}

template <class T>
bool attend_rows_avx512_any(const attention_args& a, const attention_row* rows, int n_rows, int head_dim) {
    switch (head_dim) {
        case 16: return attend_rows_avx512_hd<T, 16>(a, rows, n_rows);
        case 32: return attend_rows_avx512_hd<T, 32>(a, rows, n_rows);
        case 64: return attend_rows_avx512_hd<T, 64>(a, rows, n_rows);
        case 128: return attend_rows_avx512_hd<T, 128>(a, rows, n_rows);
        default: return false;
    }
}
#endif

// One row with the features the fast kernels lack (softcap, sliding
// window), in f32 from the paged fp16 blocks; positions outside the window are
// neither scored nor summed.
template <class T>
void attend_features(const attention_args& a, int head_dim, kernel_isa isa) {
    const int first = a.window > 0 ? std::max(0, a.n_pos - a.window) : 0;
    const int bs = a.block_size;
    for (int j = first; j < a.n_pos; ++j) {
        const T* kt = k_blocks<T>(a)[j / bs] + j % bs;
        float s = 0.0f;
        for (int d = 0; d < head_dim; ++d) s += a.q[d] * widen(kt[static_cast<int64_t>(d) * bs]);
        s *= a.scale;
        if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
        a.scores[j] = s;
    }
    softmax(a.scores + first, a.n_pos - first, isa);
    float acc[256];
    float* out = head_dim <= 256 ? acc : a.out;
    for (int d = 0; d < head_dim; ++d) out[d] = 0.0f;
    for (int j = first; j < a.n_pos; ++j) {
        const T* v = v_blocks<T>(a)[j / bs] + static_cast<int64_t>(j % bs) * a.stride;
        const float p = a.scores[j];
        for (int d = 0; d < head_dim; ++d) out[d] += p * widen(v[d]);
    }
    if (out != a.out) std::copy(out, out + head_dim, a.out);
}

template <class T, int HD>
void attend_hd(const attention_args& a, int head_dim, kernel_isa isa) {
#if TACHYON_ATTENTION_AVX2
    if constexpr (HD > 0 && HD % 8 == 0) {
        if (a.block_size == 16 && isa != kernel_isa::scalar) return attend_avx2<T, HD>(a, isa);
    }
#endif
    if (a.block_size == 16) return attend_fixed<T, HD, 16>(a, head_dim, isa);
    return attend_fixed<T, HD, 0>(a, head_dim, isa);
}

template <class T>
void attend_t(const attention_args& a, int head_dim, kernel_isa isa) {
    if (a.softcap > 0.0f || a.window > 0) return attend_features<T>(a, head_dim, isa);
#if TACHYON_ATTENTION_AVX512
    if (isa >= kernel_isa::avx512 && a.block_size == 16) {
        const attention_row row{a.q, a.n_pos, a.scores, a.out};
        if (attend_rows_avx512_any<T>(a, &row, 1, head_dim)) return;
    }
#endif
    switch (head_dim) {
        case 8: return attend_hd<T, 8>(a, head_dim, isa);
        case 16: return attend_hd<T, 16>(a, head_dim, isa);
        case 32: return attend_hd<T, 32>(a, head_dim, isa);
        case 64: return attend_hd<T, 64>(a, head_dim, isa);
        case 128: return attend_hd<T, 128>(a, head_dim, isa);
        default: return attend_hd<T, 0>(a, head_dim, isa);
    }
}

template <class T>
void attend_rows_t(const attention_args& shared, const attention_row* rows, int n_rows, int head_dim, kernel_isa isa) {
    // Softcap and sliding window: row by row on the kernel that has them.
    if (shared.softcap > 0.0f || shared.window > 0) {
        for (int r = 0; r < n_rows; ++r) {
            attention_args a = shared;
            a.q = rows[r].q;
            a.n_pos = rows[r].n_pos;
            a.scores = rows[r].scores;
            a.out = rows[r].out;
            attend_features<T>(a, head_dim, isa);
        }
        return;
    }
#if TACHYON_ATTENTION_AVX512
    if (isa >= kernel_isa::avx512 && shared.block_size == 16 && attend_rows_avx512_any<T>(shared, rows, n_rows, head_dim))
        return;
#endif
#if TACHYON_ATTENTION_AVX2
    if (shared.block_size == 16 && isa != kernel_isa::scalar && n_rows > 4) {
        // at most 4 rows keep the AVX2 accumulators in registers
        for (int r0 = 0; r0 < n_rows; r0 += 4) attend_rows_t<T>(shared, rows + r0, std::min(4, n_rows - r0), head_dim, isa);
        return;
    }
    if (shared.block_size == 16 && isa != kernel_isa::scalar && n_rows >= 2) {
        bool done = false;
        switch (head_dim) {
            case 8: done = attend_rows_hd<T, 8>(shared, rows, n_rows, isa); break;
            case 16: done = attend_rows_hd<T, 16>(shared, rows, n_rows, isa); break;
            case 32: done = attend_rows_hd<T, 32>(shared, rows, n_rows, isa); break;
            case 64: done = attend_rows_hd<T, 64>(shared, rows, n_rows, isa); break;
            case 128: done = attend_rows_hd<T, 128>(shared, rows, n_rows, isa); break;
            default: break;
        }
        if (done) return;
    }
#endif
    for (int r = 0; r < n_rows; ++r) {
        attention_args a = shared;
        a.q = rows[r].q;
        a.n_pos = rows[r].n_pos;
        a.scores = rows[r].scores;
        a.out = rows[r].out;
        attend_t<T>(a, head_dim, isa);
    }
}

}  // namespace

void attend(const attention_args& a, int head_dim, kernel_isa isa) {
    if (a.k16) return attend_t<uint16_t>(a, head_dim, isa);
    attend_t<float>(a, head_dim, isa);
}

void attend_rows(const attention_args& shared, const attention_row* rows, int n_rows, int head_dim, kernel_isa isa) {
    if (shared.k16) return attend_rows_t<uint16_t>(shared, rows, n_rows, head_dim, isa);
    attend_rows_t<float>(shared, rows, n_rows, head_dim, isa);
}

}  // namespace tachyon
