// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "inference/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/assert.h"
#include "inference/kernels/amx/amx_tiles.h"
#include "inference/kernels/ops.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TACHYON_ATTENTION_AVX2 1
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TACHYON_ATTENTION_AVX512 1
// AVX-512 functions carry the target themselves: the rest of the binary
// stays at the build's baseline, and they run only where the CPU has it.
#define TACHYON_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c")))
#endif

namespace tachyon {
namespace {

#if TACHYON_ATTENTION_AVX2 || TACHYON_ATTENTION_AVX512
// How many blocks ahead the row kernels ask for K and V. A sequence's
// blocks lie anywhere in the cache's arena (a layer's block of 16
// positions is 4 KiB a KV head at head_dim 64), which the hardware
// prefetchers, trained within a page, do not follow: each block was a
// fresh wait on memory. Fewer rows spend less time on a block, so they ask
// further ahead.
template <int R>
constexpr int blocks_ahead = R >= 4 ? 4 : 8;

// One K or V row of HD floats into L2.
template <int HD>
inline void prefetch_row(const float* p) {
    for (int l = 0; l < HD * 4 / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(p) + 64 * l, _MM_HINT_T1);
    if constexpr (HD * 4 % 64 != 0) _mm_prefetch(reinterpret_cast<const char*>(p + HD - 1), _MM_HINT_T1);
}
#endif

// HD: head dimension, BS: block size; 0 = known only at run time.
template <int HD, int BS>
void attend_fixed(const attention_args& a, int head_dim, kernel_isa isa) {
    const int hd = HD > 0 ? HD : head_dim;
    const int bs = BS > 0 ? BS : a.block_size;
    // Scores, a block at a time: s[p] = Σ_d q[d] · K^T[d][p], all positions of the block together.
    int j = 0;
    for (int b = 0; j < a.n_pos; ++b) {
        const float* kt = a.k[b];
        const int n = std::min(bs, a.n_pos - j);
        float s[BS > 0 ? BS : 256];
        if (BS > 0 || bs <= 256) {
            for (int p = 0; p < bs; ++p) s[p] = 0.0f;
            for (int d = 0; d < hd; ++d) {
                const float qd = a.q[d] * a.scale;
                const float* row = kt + static_cast<int64_t>(d) * bs;
                for (int p = 0; p < bs; ++p) s[p] += qd * row[p];
            }
            for (int p = 0; p < n; ++p) a.scores[j + p] = s[p];
        } else {
            for (int p = 0; p < n; ++p) {
                float acc = 0.0f;
                for (int d = 0; d < hd; ++d) acc += a.q[d] * kt[static_cast<int64_t>(d) * bs + p];
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
        const float* vb = a.v[b];
        const int n = std::min(bs, a.n_pos - j);
        for (int i = 0; i < n; ++i, ++j) {
            const float* v = vb + static_cast<int64_t>(i) * a.stride;
            const float p = a.scores[j];
            for (int d = 0; d < hd; ++d) acc[d] += p * v[d];
        }
    }
    for (int d = 0; d < hd; ++d) a.out[d] = acc[d];
}

#if TACHYON_ATTENTION_AVX2
// The same with AVX2 intrinsics, for block size 16 and head dimensions that
// are multiples of 8: a block's 16 scores live in two registers, the output
// accumulates in HD / 8 registers.
template <int HD>
void attend_avx2(const attention_args& a, kernel_isa isa) {
    constexpr int BS = 16, NV = HD / 8;
    alignas(32) float q[HD];
    for (int d = 0; d < HD; ++d) q[d] = a.q[d] * a.scale;
    int j = 0;
    for (int b = 0; j < a.n_pos; ++b) {
        const float* kt = a.k[b];
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        for (int d = 0; d < HD; ++d) {
            const __m256 qd = _mm256_broadcast_ss(&q[d]);
            s0 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kt + d * BS), s0);
            s1 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kt + d * BS + 8), s1);
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
        const float* vb = a.v[b];
        const int n = std::min(BS, a.n_pos - j);
        for (int i = 0; i < n; ++i, ++j) {
            const float* v = vb + static_cast<int64_t>(i) * a.stride;
            const __m256 p = _mm256_broadcast_ss(a.scores + j);
            for (int k = 0; k < NV; ++k) acc[k] = _mm256_fmadd_ps(p, _mm256_loadu_ps(v + 8 * k), acc[k]);
        }
    }
    for (int k = 0; k < NV; ++k) _mm256_storeu_ps(a.out + 8 * k, acc[k]);
}
#endif

#if TACHYON_ATTENTION_AVX2
// R rows at once, block size 16, HD a multiple of 8.
template <int HD, int R>
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
        const float* kt = a.k[b];
        const float* ahead = a.k[std::min(b + blocks_ahead<R>, n_blocks - 1)];
        __m256 s0[R], s1[R];
        for (int r = 0; r < R; ++r) s0[r] = s1[r] = _mm256_setzero_ps();
        for (int d = 0; d < HD; ++d) {
            if (a.stream) _mm_prefetch(reinterpret_cast<const char*>(ahead + d * BS), _MM_HINT_T1);
            const __m256 k0 = _mm256_loadu_ps(kt + d * BS), k1 = _mm256_loadu_ps(kt + d * BS + 8);
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
    // out_r = Σ_j p_r[j] v_j, two rows per pass so the accumulators stay in registers.
    for (int r0 = 0; r0 < R; r0 += 2) {
        const int nr = std::min(2, R - r0);
        __m256 acc[2][NV];
        for (int r = 0; r < 2; ++r)
            for (int k = 0; k < NV; ++k) acc[r][k] = _mm256_setzero_ps();
        const int n_pass = nr == 2 ? std::max(rows[r0].n_pos, rows[r0 + 1].n_pos) : rows[r0].n_pos;
        j = 0;
        const int n_pass_blocks = (n_pass + BS - 1) / BS;
        for (int b = 0; j < n_pass; ++b) {
            const float* vb = a.v[b];
            const float* ahead = a.v[std::min(b + blocks_ahead<R>, n_pass_blocks - 1)];
            const int n = std::min(BS, n_pass - j);
            for (int i = 0; i < n; ++i, ++j) {
                const float* v = vb + static_cast<int64_t>(i) * a.stride;
                if (a.stream) prefetch_row<HD>(ahead + static_cast<int64_t>(i) * a.stride);
                const __m256 p0 = _mm256_broadcast_ss(rows[r0].scores + j);
                if (nr == 2) {
                    const __m256 p1 = _mm256_broadcast_ss(rows[r0 + 1].scores + j);
                    for (int k = 0; k < NV; ++k) {
                        const __m256 vk = _mm256_loadu_ps(v + 8 * k);
                        acc[0][k] = _mm256_fmadd_ps(p0, vk, acc[0][k]);
                        acc[1][k] = _mm256_fmadd_ps(p1, vk, acc[1][k]);
                    }
                } else {
                    for (int k = 0; k < NV; ++k) acc[0][k] = _mm256_fmadd_ps(p0, _mm256_loadu_ps(v + 8 * k), acc[0][k]);
                }
            }
        }
        for (int r = 0; r < nr; ++r)
            for (int k = 0; k < NV; ++k) _mm256_storeu_ps(rows[r0 + r].out + 8 * k, acc[r][k]);
    }
}

template <int HD>
bool attend_rows_hd(const attention_args& a, const attention_row* rows, int n_rows, kernel_isa isa) {
    switch (n_rows) {
        case 2: attend_rows_avx2<HD, 2>(a, rows, isa); return true;
        case 3: attend_rows_avx2<HD, 3>(a, rows, isa); return true;
        case 4: attend_rows_avx2<HD, 4>(a, rows, isa); return true;
        default: return false;
    }
}
#endif

#if TACHYON_ATTENTION_AVX512
// e^x for finite x <= 0 (a score minus the row's maximum), sixteen lanes at
// a time: x = n ln2 + r with |r| <= ln2/2, e^r by its degree-6 Taylor
// polynomial (as exp256 in ops.cpp), and scalef for the 2^n, which also
// takes very negative x to 0 without a clamp.
TACHYON_AVX512 inline __m512 exp512_nonpositive(__m512 x) {
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);  // ln2 split: exact high part
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

// Sum and maximum of the 16 lanes.
TACHYON_AVX512 inline float hsum16(__m512 v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
TACHYON_AVX512 inline float hmax16(__m512 v) {
    __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

// R rows (1..8) at once with AVX-512: a block of 16 positions is one
// register, so a row's scores for a block take HD multiply-adds with the
// query value broadcast from memory, and each K^T row loaded serves all R
// rows; the rows' maxima are kept on the way. Each row's scores then become
// e^(s - max) in one pass that also sums them. The weighted sum of V runs PR
// rows per pass, their HD / 16 accumulators each in registers (at most 16 of
// the 32), and is divided by the row's sum at the end (HD divisions, not
// one per position).
template <int HD, int R>
TACHYON_AVX512 void attend_rows_avx512(const attention_args& a, const attention_row* rows) {
    constexpr int BS = 16, NV = HD / 16, PR = (16 / NV) < R ? (16 / NV) : R;
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
        const float* kt0 = a.k[b];
        const float* kt1 = a.k[b + 1];
        const float* ahead0 = a.k[std::min(b + blocks_ahead<R>, n_blocks - 1)];
        const float* ahead1 = a.k[std::min(b + 1 + blocks_ahead<R>, n_blocks - 1)];
        __m512 s0[R], s1[R];
        for (int r = 0; r < R; ++r) s0[r] = s1[r] = _mm512_setzero_ps();
        for (int d = 0; d < HD; ++d) {
            if (a.stream) {
                _mm_prefetch(reinterpret_cast<const char*>(ahead0 + d * BS), _MM_HINT_T1);
                _mm_prefetch(reinterpret_cast<const char*>(ahead1 + d * BS), _MM_HINT_T1);
            }
            const __m512 k0 = _mm512_loadu_ps(kt0 + d * BS);
            const __m512 k1 = _mm512_loadu_ps(kt1 + d * BS);
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
        const float* kt = a.k[b];
        __m512 s[R];
        for (int r = 0; r < R; ++r) s[r] = _mm512_setzero_ps();
        for (int d = 0; d < HD; ++d) {
            const __m512 k = _mm512_loadu_ps(kt + d * BS);
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
    for (int r0 = 0; r0 < R; r0 += PR) {
        const int nr = std::min(PR, R - r0);
        int n_pass = 0;
        for (int r = r0; r < r0 + nr; ++r) n_pass = std::max(n_pass, rows[r].n_pos);
        __m512 acc[PR][NV];
        for (int r = 0; r < PR; ++r)
            for (int k = 0; k < NV; ++k) acc[r][k] = _mm512_setzero_ps();
        j = 0;
        const int n_pass_blocks = (n_pass + BS - 1) / BS;
        for (int b = 0; j < n_pass; ++b) {
            const float* vb = a.v[b];
            const float* ahead = a.v[std::min(b + blocks_ahead<R>, n_pass_blocks - 1)];
            const int n = std::min(BS, n_pass - j);
            for (int i = 0; i < n; ++i, ++j) {
                const float* v = vb + static_cast<int64_t>(i) * a.stride;
                if (a.stream) prefetch_row<HD>(ahead + static_cast<int64_t>(i) * a.stride);
                __m512 vk[NV];
                for (int k = 0; k < NV; ++k) vk[k] = _mm512_loadu_ps(v + 16 * k);
                for (int r = 0; r < PR; ++r) {
                    if (r >= nr) break;
                    const __m512 p = _mm512_set1_ps(rows[r0 + r].scores[j]);
                    for (int k = 0; k < NV; ++k) acc[r][k] = _mm512_fmadd_ps(p, vk[k], acc[r][k]);
                }
            }
        }
        for (int r = 0; r < nr; ++r) {
            const __m512 inv = _mm512_set1_ps(inv_sum[r0 + r]);
            for (int k = 0; k < NV; ++k) _mm512_storeu_ps(rows[r0 + r].out + 16 * k, _mm512_mul_ps(acc[r][k], inv));
        }
    }
}

template <int HD>
bool attend_rows_avx512_hd(const attention_args& a, const attention_row* rows, int n_rows) {
    switch (n_rows) {
        case 1: attend_rows_avx512<HD, 1>(a, rows); return true;
        case 2: attend_rows_avx512<HD, 2>(a, rows); return true;
        case 3: attend_rows_avx512<HD, 3>(a, rows); return true;
        case 4: attend_rows_avx512<HD, 4>(a, rows); return true;
        case 5: attend_rows_avx512<HD, 5>(a, rows); return true;
        case 6: attend_rows_avx512<HD, 6>(a, rows); return true;
        case 7: attend_rows_avx512<HD, 7>(a, rows); return true;
        case 8: attend_rows_avx512<HD, 8>(a, rows); return true;
        default: return false;
    }
}

bool attend_rows_avx512_any(const attention_args& a, const attention_row* rows, int n_rows, int head_dim) {
    switch (head_dim) {
        case 16: return attend_rows_avx512_hd<16>(a, rows, n_rows);
        case 32: return attend_rows_avx512_hd<32>(a, rows, n_rows);
        case 64: return attend_rows_avx512_hd<64>(a, rows, n_rows);
        case 128: return attend_rows_avx512_hd<128>(a, rows, n_rows);
        default: return false;
    }
}
#endif

#if TACHYON_ATTENTION_AVX512
// ---- AMX-BF16: prompt rows on tiles (attention.h) ---------------------------

#define TACHYON_AMX_BF16 \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16,avx2,fma,f16c,amx-tile,amx-bf16")))

constexpr int tile_elems = 512;  // bf16 values of one tile: 16 rows x 64 bytes

// x = hi + lo with hi and lo bf16 (hi is x rounded half away from zero,
// lo what that left out, itself rounded), for two vectors at once, paired
// lane by lane as a tile row pairs its values: dword n of `hi` holds
// hi(x0[n]) in its low half and hi(x1[n]) in its high half, and so for lo.
TACHYON_AMX_BF16 inline void split_pair(__m512 x0, __m512 x1, __m512i& hi, __m512i& lo) {
    const __m512i half = _mm512_set1_epi32(0x8000), top = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    const __m512i t0 = _mm512_add_epi32(_mm512_castps_si512(x0), half);
    const __m512i t1 = _mm512_add_epi32(_mm512_castps_si512(x1), half);
    const __m512 r0 = _mm512_sub_ps(x0, _mm512_castsi512_ps(_mm512_and_si512(t0, top)));
    const __m512 r1 = _mm512_sub_ps(x1, _mm512_castsi512_ps(_mm512_and_si512(t1, top)));
    // (a & top) | b: ternary-logic table 0xEA
    hi = _mm512_ternarylogic_epi32(t1, top, _mm512_srli_epi32(t0, 16), 0xEA);
    const __m512i u0 = _mm512_add_epi32(_mm512_castps_si512(r0), half);
    const __m512i u1 = _mm512_add_epi32(_mm512_castps_si512(r1), half);
    lo = _mm512_ternarylogic_epi32(u1, top, _mm512_srli_epi32(u0, 16), 0xEA);
}

TACHYON_AMX_BF16 inline void store_pair(uint16_t* hi, uint16_t* lo, __m512 x0, __m512 x1) {
    __m512i h, l;
    split_pair(x0, x1, h, l);
    _mm512_storeu_si512(hi, h);
    _mm512_storeu_si512(lo, l);
}

TACHYON_AMX_BF16 void convert_kv_bf16_avx512(const attention_args& a, int hd, int n_pos, attention_kv_bf16& out, int first_chunk) {
    const int n_chunks = (n_pos + 31) / 32;
    const int kc = hd / 32, vh = hd / 16;
    out.head_dim = hd;
    out.n_pos = n_pos;
    out.k.resize(static_cast<size_t>(2 * n_chunks) * kc * 2 * tile_elems);
    out.v.resize(static_cast<size_t>(n_chunks) * vh * 2 * tile_elems);
    out.chunk_norm.resize(static_cast<size_t>(n_chunks));
    for (int ch = first_chunk; ch < n_chunks; ++ch) {
        // K^T rows d and d + 16 of a block (16 positions each) make one B tile row.
        __m512 norm[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
        for (int b = 2 * ch; b < 2 * ch + 2; ++b) {
            const int valid = std::clamp(n_pos - 16 * b, 0, 16);
            const auto m = static_cast<__mmask16>(valid >= 16 ? 0xffffu : (1u << valid) - 1u);
            const float* kt = valid > 0 ? a.k[b] : nullptr;  // a block past the sequence reads as zero
            for (int c = 0; c < kc; ++c) {
                uint16_t* hi = out.k.data() + static_cast<size_t>(b * kc + c) * 2 * tile_elems;
                for (int i = 0; i < 16; ++i) {
                    const int d = 32 * c + i;
                    const __m512 x0 = kt ? _mm512_maskz_loadu_ps(m, kt + d * 16) : _mm512_setzero_ps();
                    const __m512 x1 = kt ? _mm512_maskz_loadu_ps(m, kt + (d + 16) * 16) : _mm512_setzero_ps();
                    norm[b & 1] = _mm512_fmadd_ps(x0, x0, _mm512_fmadd_ps(x1, x1, norm[b & 1]));
                    store_pair(hi + 32 * i, hi + tile_elems + 32 * i, x0, x1);
                }
            }
        }
        out.chunk_norm[static_cast<size_t>(ch)] = std::sqrt(hmax16(_mm512_max_ps(norm[0], norm[1])));
        // V rows of positions p and p + 16 (16 dimensions each) make one B tile row.
        for (int i = 0; i < 16; ++i) {
            const int p0 = 32 * ch + i, p1 = p0 + 16;
            const float* v0 = p0 < n_pos ? a.v[p0 / 16] + static_cast<int64_t>(p0 % 16) * a.stride : nullptr;
            const float* v1 = p1 < n_pos ? a.v[p1 / 16] + static_cast<int64_t>(p1 % 16) * a.stride : nullptr;
            for (int h = 0; h < vh; ++h) {
                uint16_t* hi = out.v.data() + static_cast<size_t>(ch * vh + h) * 2 * tile_elems;
                store_pair(hi + 32 * i, hi + tile_elems + 32 * i, v0 ? _mm512_loadu_ps(v0 + 16 * h) : _mm512_setzero_ps(),
                           v1 ? _mm512_loadu_ps(v1 + 16 * h) : _mm512_setzero_ps());
            }
        }
    }
}

// Three tile products of hi/lo pairs into C: A_hi·B_hi + A_hi·B_lo + A_lo·B_hi.
#define TACHYON_DP3(C, AH, AL, BH, BL) \
    _tile_dpbf16ps(C, AH, BH);         \
    _tile_dpbf16ps(C, AH, BL);         \
    _tile_dpbf16ps(C, AL, BH)

// Scores whose bound |q| |k| stays under this need no maximum: e^s neither
// overflows nor underflows a sum in f32 (e^64 ~ 6e27), and softmax does not
// depend on what is subtracted.
constexpr float max_unshifted_score = 64.0f;

// Per 32 positions (a chunk): the scores on tiles (two blocks of 16), the
// softmax weights from them with AVX-512, and their product with V on
// tiles. The three run a chunk apart, so that the vector work overlaps the
// tile multiplies and no tile load waits on the vector stores it reads.
// Where a row's scores may be large, a first pass takes each row's maximum
// and the weights are e^(s - max).
template <int HD>
TACHYON_AMX_BF16 void attend_bf16(const attention_kv_bf16& kv, const attention_row* rows, int n_rows, float scale) {
    constexpr int R = max_attention_rows_bf16;
    int n_max = 0, n_min = rows[0].n_pos;
    for (int r = 0; r < n_rows; ++r) {
        n_max = std::max(n_max, rows[r].n_pos);
        n_min = std::min(n_min, rows[r].n_pos);
    }
    const int n_chunks = (n_max + 31) / 32;
    alignas(64) uint16_t qh[R][HD], ql[R][HD];
    float q_norm_max = 0.0f;
    for (int r = 0; r < R; ++r)
        for (int d = 0; d < HD; d += 32) {
            __m512 x0 = _mm512_setzero_ps(), x1 = x0;
            if (r < n_rows) {
                x0 = _mm512_mul_ps(_mm512_loadu_ps(rows[r].q + d), _mm512_set1_ps(scale));
                x1 = _mm512_mul_ps(_mm512_loadu_ps(rows[r].q + d + 16), _mm512_set1_ps(scale));
                q_norm_max = std::max(q_norm_max, hsum16(_mm512_fmadd_ps(x0, x0, _mm512_mul_ps(x1, x1))));
            }
            __m512i h, l;
            split_pair(x0, x1, h, l);
            _mm512_store_si512(&qh[r][d], h);
            _mm512_store_si512(&ql[r][d], l);
        }
    // HD 64 and 128 need every tile for their products and run the scores first.
    float k_norm_max = 0.0f;
    for (int ch = 0; ch < n_chunks; ++ch) k_norm_max = std::max(k_norm_max, kv.chunk_norm[static_cast<size_t>(ch)]);
    const bool shift = HD != 32 || !(std::sqrt(q_norm_max) * k_norm_max <= max_unshifted_score);
    // Scores: every chunk [16][n_chunks * 32] with a maximum pass, else a ring of four chunks.
    thread_local line_vector<float> s_buf;
    const int s_row = shift ? n_chunks * 32 : 32;
    s_buf.resize(static_cast<size_t>(shift ? R * s_row : 4 * R * 32));
    float* const S = s_buf.data();
    const auto chunk_scores = [&](int ch) { return shift ? S + 32 * ch : S + (ch & 3) * R * 32; };

    detail::configure_tiles_16x64();
    detail::memory_barrier(qh);

    // Tiles. Scores: tmm2, tmm3 q (hi, lo), tmm5, tmm6 K (hi, lo), tmm4 the
    // scores. Weighted sum: tmm4, tmm5 weights (hi, lo), tmm6, tmm7 V (hi,
    // lo), accumulators tmm0, tmm1 (dimensions 0-15, 16-31) and for HD 64
    // tmm2, tmm3 (32-47, 48-63), which the scores have done with by then;
    // HD 128 takes tmm0-3 for 64 dimensions at a time (below).
    const uint16_t* K = kv.k.data();
    const int n_blocks = (n_max + 15) / 16;
    const auto scores_of = [&](int ch) TACHYON_AMX_BF16 {
        float* out = chunk_scores(ch);
        for (int b = 2 * ch; b < std::min(2 * ch + 2, n_blocks); ++b) {
            const uint16_t* k0 = K + static_cast<size_t>(b) * (HD / 32) * 2 * tile_elems;
            _tile_zero(4);
#pragma GCC unroll 4
            for (int c = 0; c < HD / 32; ++c) {
                if constexpr (HD >= 64) {
                    _tile_loadd(2, &qh[0][32 * c], HD * 2);
                    _tile_loadd(3, &ql[0][32 * c], HD * 2);
                }
                _tile_loadd(5, k0 + 2 * c * tile_elems, 64);
                _tile_loadd(6, k0 + (2 * c + 1) * tile_elems, 64);
                TACHYON_DP3(4, 2, 3, 5, 6);
            }
            _tile_stored(4, out + 16 * (b - 2 * ch), static_cast<long>(s_row) * 4);
        }
    };
    // Lanes j.. j + 15 that row r sees.
    const auto seen = [&](int r, int j) {
        const int valid = std::clamp(rows[r].n_pos - j, 0, 16);
        return static_cast<__mmask16>(valid >= 16 ? 0xffffu : (1u << valid) - 1u);
    };
    if constexpr (HD == 32) {
        _tile_loadd(2, &qh[0][0], HD * 2);
        _tile_loadd(3, &ql[0][0], HD * 2);
    }
    float mx[R] = {};
    if (shift) {
        for (int ch = 0; ch < n_chunks; ++ch) scores_of(ch);
        detail::memory_barrier(S);
        for (int r = 0; r < n_rows; ++r) {
            __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
            for (int j = 0; j < rows[r].n_pos; j += 16) {
                const __mmask16 m = seen(r, j);
                vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, S + static_cast<size_t>(r) * s_row + j));
            }
            mx[r] = hmax16(vmax);
        }
    }

    // Weights of chunk ch into buffer ch % 2 (the tiles may still read the
    // other); rows past n_rows stay zero.
    alignas(64) uint16_t pbuf[2][2][R][32];  // [buffer][hi, lo][row][position pair]
    if (n_rows < R) std::fill(&pbuf[0][0][0][0], &pbuf[0][0][0][0] + sizeof pbuf / sizeof(uint16_t), uint16_t{0});
    __m512 sum[R];
    for (int r = 0; r < R; ++r) sum[r] = _mm512_setzero_ps();
    // Weights of chunk ch into hi and lo ([row][32] each).
    const auto weights_to = [&](int ch, uint16_t (*hi)[32], uint16_t (*lo)[32]) TACHYON_AMX_BF16 {
        const float* s = chunk_scores(ch);
        const int j = 32 * ch;
        const bool whole = j + 32 <= n_min;
        for (int r = 0; r < n_rows; ++r) {
            const __m512 m = _mm512_set1_ps(mx[r]);
            const float* sr = s + static_cast<size_t>(r) * s_row;
            __m512 e0, e1;
            if (whole) {
                e0 = exp512_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(sr), m));
                e1 = exp512_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(sr + 16), m));
            } else {
                const __mmask16 m0 = seen(r, j), m1 = seen(r, j + 16);
                e0 = _mm512_maskz_mov_ps(m0, exp512_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(m0, sr), m)));
                e1 = _mm512_maskz_mov_ps(m1, exp512_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(m1, sr + 16), m)));
            }
            sum[r] = _mm512_add_ps(sum[r], _mm512_add_ps(e0, e1));
            store_pair(hi[r], lo[r], e0, e1);
        }
    };
    const auto weights = [&](int ch) TACHYON_AMX_BF16 { weights_to(ch, pbuf[ch & 1][0], pbuf[ch & 1][1]); };
    const uint16_t* V = kv.v.data();
    // Weights (hi, lo) times the V tiles of `groups` (2 or 4) groups of 16
    // dimensions from v0, into tmm0.. tmm(groups - 1).
    const auto weighted = [&](const void* w_hi, const void* w_lo, const uint16_t* v0, int groups) TACHYON_AMX_BF16 {
        _tile_loadd(4, w_hi, 64);
        _tile_loadd(5, w_lo, 64);
        _tile_loadd(6, v0, 64);
        _tile_loadd(7, v0 + tile_elems, 64);
        TACHYON_DP3(0, 4, 5, 6, 7);
        _tile_loadd(6, v0 + 2 * tile_elems, 64);
        _tile_loadd(7, v0 + 3 * tile_elems, 64);
        TACHYON_DP3(1, 4, 5, 6, 7);
        if (groups == 4) {
            _tile_loadd(6, v0 + 4 * tile_elems, 64);
            _tile_loadd(7, v0 + 5 * tile_elems, 64);
            TACHYON_DP3(2, 4, 5, 6, 7);
            _tile_loadd(6, v0 + 6 * tile_elems, 64);
            _tile_loadd(7, v0 + 7 * tile_elems, 64);
            TACHYON_DP3(3, 4, 5, 6, 7);
        }
    };
    const auto weighted_sum = [&](int ch) TACHYON_AMX_BF16 {
        weighted(&pbuf[ch & 1][0][0][0], &pbuf[ch & 1][1][0][0], V + static_cast<size_t>(ch) * (HD / 16) * 2 * tile_elems, HD == 64 ? 4 : 2);
    };
    alignas(64) float o[R][HD];
    if constexpr (HD == 128) {
        // Eight accumulator tiles would leave none for the weights and V:
        // the weights of every chunk first, then the weighted sum in two
        // halves of 64 dimensions (tmm0-3 each).
        thread_local line_vector<uint16_t> w_all;  // [chunk][hi, lo][row][32]
        w_all.assign(static_cast<size_t>(n_chunks) * 2 * R * 32, uint16_t{0});
        const auto w_of = [&](int ch, int part) { return reinterpret_cast<uint16_t(*)[32]>(w_all.data() + (static_cast<size_t>(ch) * 2 + part) * R * 32); };
        for (int ch = 0; ch < n_chunks; ++ch) weights_to(ch, w_of(ch, 0), w_of(ch, 1));
        detail::memory_barrier(w_all.data());
#pragma GCC unroll 1
        for (int half = 0; half < 2; ++half) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int ch = 0; ch < n_chunks; ++ch)
                weighted(w_of(ch, 0), w_of(ch, 1), V + (static_cast<size_t>(ch) * (HD / 16) + 4 * half) * 2 * tile_elems, 4);
            _tile_stored(0, &o[0][64 * half], HD * 4);
            _tile_stored(1, &o[0][64 * half + 16], HD * 4);
            _tile_stored(2, &o[0][64 * half + 32], HD * 4);
            _tile_stored(3, &o[0][64 * half + 48], HD * 4);
        }
    } else {
    if (!shift) scores_of(0);
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (HD == 64) {
        _tile_zero(2);
        _tile_zero(3);
    }
    detail::memory_barrier(S);
    for (int ch = 0; ch <= n_chunks; ++ch) {
        if (!shift && ch + 1 < n_chunks) scores_of(ch + 1);
        if (ch < n_chunks) weights(ch);
        detail::memory_barrier(pbuf);
        if (ch >= 1) weighted_sum(ch - 1);
    }
    _tile_stored(0, &o[0][0], HD * 4);
    _tile_stored(1, &o[0][16], HD * 4);
    if constexpr (HD == 64) {
        _tile_stored(2, &o[0][32], HD * 4);
        _tile_stored(3, &o[0][48], HD * 4);
    }
    }
    _tile_release();
    detail::memory_barrier(o);
    for (int r = 0; r < n_rows; ++r) {
        const __m512 inv = _mm512_set1_ps(1.0f / hsum16(sum[r]));
        for (int d = 0; d < HD; d += 16) _mm512_storeu_ps(rows[r].out + d, _mm512_mul_ps(_mm512_load_ps(&o[r][d]), inv));
    }
}
#undef TACHYON_DP3
#endif

// One row with the features the fast kernels lack (softcap, sliding
// window), in f32 over the paged blocks; positions outside the window are
// neither scored nor summed.
void attend_features(const attention_args& a, int head_dim, kernel_isa isa) {
    const int first = a.window > 0 ? std::max(0, a.n_pos - a.window) : 0;
    const int bs = a.block_size;
    for (int j = first; j < a.n_pos; ++j) {
        const float* kt = a.k[j / bs] + j % bs;
        float s = 0.0f;
        for (int d = 0; d < head_dim; ++d) s += a.q[d] * kt[static_cast<int64_t>(d) * bs];
        s *= a.scale;
        if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
        a.scores[j] = s;
    }
    softmax(a.scores + first, a.n_pos - first, isa);
    float acc[256];
    float* out = head_dim <= 256 ? acc : a.out;
    for (int d = 0; d < head_dim; ++d) out[d] = 0.0f;
    for (int j = first; j < a.n_pos; ++j) {
        const float* v = a.v[j / bs] + static_cast<int64_t>(j % bs) * a.stride;
        const float p = a.scores[j];
        for (int d = 0; d < head_dim; ++d) out[d] += p * v[d];
    }
    if (out != a.out) std::copy(out, out + head_dim, a.out);
}

template <int HD>
void attend_hd(const attention_args& a, int head_dim, kernel_isa isa) {
#if TACHYON_ATTENTION_AVX2
    if constexpr (HD > 0 && HD % 8 == 0) {
        if (a.block_size == 16 && isa != kernel_isa::scalar) return attend_avx2<HD>(a, isa);
    }
#endif
    if (a.block_size == 16) return attend_fixed<HD, 16>(a, head_dim, isa);
    return attend_fixed<HD, 0>(a, head_dim, isa);
}

}  // namespace

void attend(const attention_args& a, int head_dim, kernel_isa isa) {
    if (a.softcap > 0.0f || a.window > 0) return attend_features(a, head_dim, isa);
#if TACHYON_ATTENTION_AVX512
    if (isa >= kernel_isa::avx512 && a.block_size == 16) {
        const attention_row row{a.q, a.n_pos, a.scores, a.out};
        if (attend_rows_avx512_any(a, &row, 1, head_dim)) return;
    }
#endif
    switch (head_dim) {
        case 8: return attend_hd<8>(a, head_dim, isa);
        case 16: return attend_hd<16>(a, head_dim, isa);
        case 32: return attend_hd<32>(a, head_dim, isa);
        case 64: return attend_hd<64>(a, head_dim, isa);
        case 128: return attend_hd<128>(a, head_dim, isa);
        default: return attend_hd<0>(a, head_dim, isa);
    }
}

bool attention_bf16_supported(int head_dim, int block_size) {
#if TACHYON_ATTENTION_AVX512
    return block_size == 16 && (head_dim == 32 || head_dim == 64 || head_dim == 128) && cpu_has_amx_bf16();
#else
    (void)head_dim;
    (void)block_size;
    return false;
#endif
}

void convert_kv_bf16(const attention_args& a, int head_dim, int n_pos, attention_kv_bf16& out, int first_chunk) {
    TACHYON_ASSERT(attention_bf16_supported(head_dim, a.block_size), "convert_kv_bf16: no AMX-BF16 path for this shape or CPU");
    TACHYON_ASSERT(first_chunk >= 0 && first_chunk <= static_cast<int>(out.chunk_norm.size()) && (first_chunk == 0 || out.head_dim == head_dim),
                   "convert_kv_bf16: chunks kept that were never converted");
#if TACHYON_ATTENTION_AVX512
    convert_kv_bf16_avx512(a, head_dim, n_pos, out, first_chunk);
#else
    (void)n_pos;
    (void)out;
#endif
}

void attend_rows_bf16(const attention_kv_bf16& kv, const attention_row* rows, int n_rows, float scale) {
    TACHYON_ASSERT(n_rows >= 1 && n_rows <= max_attention_rows_bf16, "attend_rows_bf16: 1 to 16 rows");
    for (int r = 0; r < n_rows; ++r)
        TACHYON_ASSERT(rows[r].n_pos >= 1 && rows[r].n_pos <= kv.n_pos, "attend_rows_bf16: a row sees positions that were not converted");
#if TACHYON_ATTENTION_AVX512
    if (kv.head_dim == 32) return attend_bf16<32>(kv, rows, n_rows, scale);
    if (kv.head_dim == 64) return attend_bf16<64>(kv, rows, n_rows, scale);
    if (kv.head_dim == 128) return attend_bf16<128>(kv, rows, n_rows, scale);
#else
    (void)rows;
    (void)scale;
#endif
    TACHYON_ASSERT(false, "attend_rows_bf16: head_dim must be 32, 64 or 128");
}

void attend_rows(const attention_args& shared, const attention_row* rows, int n_rows, int head_dim, kernel_isa isa) {
    // Softcap and sliding window: row by row on the kernel that has them.
    if (shared.softcap > 0.0f || shared.window > 0) {
        for (int r = 0; r < n_rows; ++r) {
            attention_args a = shared;
            a.q = rows[r].q;
            a.n_pos = rows[r].n_pos;
            a.scores = rows[r].scores;
            a.out = rows[r].out;
            attend_features(a, head_dim, isa);
        }
        return;
    }
#if TACHYON_ATTENTION_AVX512
    if (isa >= kernel_isa::avx512 && shared.block_size == 16 && attend_rows_avx512_any(shared, rows, n_rows, head_dim))
        return;
#endif
#if TACHYON_ATTENTION_AVX2
    if (shared.block_size == 16 && isa != kernel_isa::scalar && n_rows > 4) {
        // at most 4 rows keep the AVX2 accumulators in registers
        for (int r0 = 0; r0 < n_rows; r0 += 4) attend_rows(shared, rows + r0, std::min(4, n_rows - r0), head_dim, isa);
        return;
    }
    if (shared.block_size == 16 && isa != kernel_isa::scalar && n_rows >= 2) {
        bool done = false;
        switch (head_dim) {
            case 8: done = attend_rows_hd<8>(shared, rows, n_rows, isa); break;
            case 16: done = attend_rows_hd<16>(shared, rows, n_rows, isa); break;
            case 32: done = attend_rows_hd<32>(shared, rows, n_rows, isa); break;
            case 64: done = attend_rows_hd<64>(shared, rows, n_rows, isa); break;
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
        attend(a, head_dim, isa);
    }
}

}  // namespace tachyon
