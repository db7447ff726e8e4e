// Prompt attention on AMX-BF16 tiles (attention.h: attention_bf16_supported,
// convert_kv_bf16, attend_rows_bf16): K and V of a sequence converted once
// into tile order as bf16 hi/lo pairs, then up to 16 query rows a call.
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "base/assert.h"
#include "inference/kernels/amx/amx_tiles.h"
#include "inference/kernels/attention.h"
#include "inference/kernels/attention_avx512.h"

namespace tachyon {
namespace {

#if TACHYON_ATTENTION_AVX512
using detail::exp512_nonpositive;
using detail::hmax16;
using detail::hsum16;

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

// Sixteen f32 or fp16 K or V values at p as f32, the lanes outside m zero.
TACHYON_AMX_BF16 inline __m512 load16(const float* p, __mmask16 m = 0xffff) { return _mm512_maskz_loadu_ps(m, p); }
TACHYON_AMX_BF16 inline __m512 load16(const uint16_t* p, __mmask16 m = 0xffff) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

template <class T>
TACHYON_AMX_BF16 void convert_kv_bf16_avx512(const T* const* k_blocks, const T* const* v_blocks, const attention_args& a, int hd, int n_pos,
                                             attention_kv_bf16& out, int first_chunk) {
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
            const T* kt = valid > 0 ? k_blocks[b] : nullptr;  // a block past the sequence reads as zero
            for (int c = 0; c < kc; ++c) {
                uint16_t* hi = out.k.data() + static_cast<size_t>(b * kc + c) * 2 * tile_elems;
                for (int i = 0; i < 16; ++i) {
                    const int d = 32 * c + i;
                    const __m512 x0 = kt ? load16(kt + d * 16, m) : _mm512_setzero_ps();
                    const __m512 x1 = kt ? load16(kt + (d + 16) * 16, m) : _mm512_setzero_ps();
                    norm[b & 1] = _mm512_fmadd_ps(x0, x0, _mm512_fmadd_ps(x1, x1, norm[b & 1]));
                    store_pair(hi + 32 * i, hi + tile_elems + 32 * i, x0, x1);
                }
            }
        }
        out.chunk_norm[static_cast<size_t>(ch)] = std::sqrt(hmax16(_mm512_max_ps(norm[0], norm[1])));
        // V rows of positions p and p + 16 (16 dimensions each) make one B tile row.
        for (int i = 0; i < 16; ++i) {
            const int p0 = 32 * ch + i, p1 = p0 + 16;
            const T* v0 = p0 < n_pos ? v_blocks[p0 / 16] + static_cast<int64_t>(p0 % 16) * a.stride : nullptr;
            const T* v1 = p1 < n_pos ? v_blocks[p1 / 16] + static_cast<int64_t>(p1 % 16) * a.stride : nullptr;
            for (int h = 0; h < vh; ++h) {
                uint16_t* hi = out.v.data() + static_cast<size_t>(ch * vh + h) * 2 * tile_elems;
                store_pair(hi + 32 * i, hi + tile_elems + 32 * i, v0 ? load16(v0 + 16 * h) : _mm512_setzero_ps(),
                           v1 ? load16(v1 + 16 * h) : _mm512_setzero_ps());
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

}  // namespace

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
    if (a.k16) return convert_kv_bf16_avx512(a.k16, a.v16, a, head_dim, n_pos, out, first_chunk);
    convert_kv_bf16_avx512(a.k, a.v, a, head_dim, n_pos, out, first_chunk);
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

}  // namespace tachyon
