// q4_0, q4_1, iq4_nl, q5_0, q5_1 and q8_0 weights packed at load from the
// AVX2 level to AVX-512 (pack_panels; kernels_prompt.h says the layout) and
// the kernels that multiply them: at AVX-512 one for every batch, 16 rows
// in the lanes of a register, a token's 4 activation bytes broadcast
// against them, as the prompt tiles of kernels_prompt.cpp do from rows
// they lay out per call; at AVX2 and AVX-VNNI one for batches of up to 11
// tokens, 2 a pass, the 16 rows in two registers of 8 (larger batches take
// the 8-row tiles of kernels_prompt.cpp, which lay their rows out from the
// panels). q4_1's and q5_1's mins multiply their q8_1 activations' block
// sums, one FMA per block and token.
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "inference/gguf/quant.h"
#include "inference/kernels/kernels_internal.h"
#include "inference/kernels/rows/kernels_prompt.h"

namespace tachyon::detail {
namespace {

// Asks for what lies packed16_prefetch_bytes ahead of block b of a group
// into L2: block b's share of the group (main + 32 bytes) as whole lines,
// so the requests run as one stream through the group's quants, its scales
// and on into the next group. Quants and scales asked for as two streams
// left 1 KiB of every next group's quants to the demand
// loads (Zen 5, one thread, 2816 x 1024 q4_0 from 256 MiB, one token,
// alternating: AVX-512 19-21 -> 23-25 GB/s, AVX2 21-22 -> 24-26).
template <class B>
TACHYON_PROMPT_AVX2 inline void prefetch_packed16(const char* group, int64_t b) {
    constexpr int64_t stride = static_cast<int64_t>(packed16<B>::main + packed16<B>::scale_bytes);
    const char* p = group + packed16_prefetch_bytes + b * stride;
#pragma GCC unroll 16
    for (int64_t l = 0; l < (stride + 63) / 64; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T1);
}

// As tokens16, from a packed group: the quants as they are (q8_0), their
// nibbles (q4_0; q5_0 with its fifth bits or-ed in) or the
// nibbles looked up as the levels + 128 (iq4_nl); the scales as fp16.
// G groups (rows r[g].. of group[g]) a pass: each line of a block in turn
// from every group.
template <class B, int NT, int G = 1>
TACHYON_PROMPT_AVX512 void packed_tokens16(const gemm_args& a, const std::byte* const (&group)[G], int64_t nb, const act_sums& s,
                                           const int64_t (&r)[G], int64_t t, const __mmask16 (&keep)[G], bool prefetch) {
    using P = packed16<B>;
    using XB = typename prompt_type<B>::act;
    const int8_t* xq[NT];  // token j's quants of block 0; block b is b * sizeof(XB) bytes on
    for (int j = 0; j < NT; ++j) xq[j] = reinterpret_cast<const XB*>(a.x + (t + j) * a.x_row_bytes)->qs;
    const float* dx = s.d.data() + t;  // block b, token j: dx[b * n_tokens + j]
    const int32_t* start = s.start.data() + t;
    [[maybe_unused]] const float* xs = P::min ? s.s.data() + t : nullptr;  // q8_1's d * sum of the quants
    const char* quants[G];
    const char* scales[G];
    for (int g = 0; g < G; ++g) {
        quants[g] = reinterpret_cast<const char*>(group[g]);
        scales[g] = quants[g] + static_cast<size_t>(nb) * P::main;
    }
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    [[maybe_unused]] const __m512i sixteen = _mm512_set1_epi8(0x10);
    [[maybe_unused]] const __m512i level_bytes = _mm512_xor_si512(
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values))), _mm512_set1_epi8(static_cast<char>(0x80)));
    __m512 acc[G][NT];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
        for (int j = 0; j < NT; ++j) acc[g][j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const size_t xo = static_cast<size_t>(b) * sizeof(XB);
        const char* q[G];
        __m512i sum[G][NT];
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            q[g] = quants[g] + b * static_cast<int64_t>(P::main);
            if (prefetch) prefetch_packed16<B>(quants[g], b);
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j) sum[g][j] = _mm512_set1_epi32(start[b * a.n_tokens + j]);
        }
        if constexpr (P::nibbles) {
#pragma GCC unroll 4
            for (int m = 0; m < 4; ++m) {
#pragma GCC unroll 4
                for (int g = 0; g < G; ++g) {
                    const __m512i v = _mm512_load_si512(q[g] + 64 * m);
                    __m512i lo = _mm512_and_si512(v, low4);
                    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
                    if constexpr (P::levels) {
                        lo = _mm512_shuffle_epi8(level_bytes, lo);
                        hi = _mm512_shuffle_epi8(level_bytes, hi);
                    }
                    if constexpr (P::fifth) {
                        // lo | (bits shifted & 0x10): the fifth bits of dword m's elements at bit 4 of each byte
                        const __m512i bits = _mm512_load_si512(q[g] + 256);
                        lo = _mm512_ternarylogic_epi32(lo, _mm512_slli_epi32(bits, 4 - m), sixteen, 0xf8);
                        hi = _mm512_ternarylogic_epi32(hi, _mm512_srli_epi32(bits, m), sixteen, 0xf8);
                    }
#pragma GCC unroll 8
                    for (int j = 0; j < NT; ++j) {
                        sum[g][j] = _mm512_dpbusd_epi32(sum[g][j], lo, _mm512_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m))));
                        sum[g][j] = _mm512_dpbusd_epi32(sum[g][j], hi, _mm512_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 16 + 4 * m))));
                    }
                }
            }
        } else {
#pragma GCC unroll 8
            for (int m = 0; m < 8; ++m) {
#pragma GCC unroll 4
                for (int g = 0; g < G; ++g) {
                    const __m512i v = _mm512_load_si512(q[g] + 64 * m);
#pragma GCC unroll 8
                    for (int j = 0; j < NT; ++j)
                        sum[g][j] = _mm512_dpbusd_epi32(sum[g][j], v, _mm512_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m))));
                }
            }
        }
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            const char* sc = scales[g] + b * static_cast<int64_t>(P::scale_bytes);
            const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(sc)));
#pragma GCC unroll 8
            for (int j = 0; j < NT; ++j)
                acc[g][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[g][j]), _mm512_mul_ps(dw, _mm512_set1_ps(dx[b * a.n_tokens + j])), acc[g][j]);
            if constexpr (P::min) {
                const __m512 mw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(sc + 32)));
#pragma GCC unroll 8
                for (int j = 0; j < NT; ++j) acc[g][j] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xs[b * a.n_tokens + j]), acc[g][j]);
            }
        }
    }
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
        for (int j = 0; j < NT; ++j) _mm512_mask_storeu_ps(a.y + (t + j) * a.ldy + r[g], keep[g], acc[g][j]);
}

template <class B, int NT = nt16 - 1>
TACHYON_PROMPT_AVX512 void packed_tail16(const gemm_args& a, const std::byte* group, int64_t nb, const act_sums& s, int64_t r, int64_t t,
                                         __mmask16 keep, int64_t n, bool prefetch) {
    if constexpr (NT >= 1) {
        if (n == NT) return packed_tokens16<B, NT>(a, {group}, nb, s, {r}, t, {keep}, prefetch);
        packed_tail16<B, NT - 1>(a, group, nb, s, r, t, keep, n, prefetch);
    }
}

// One token against rows [r0, r1) as S streams: the groups split into S
// runs of consecutive groups, and a pass takes the next group of every
// run, line by line in turn, so S stretches of memory are read at once. One
// stretch at a time leaves the core's requests to one hardware stream.
// How many pays depends on how much work a byte takes: q8_0 (512 bytes of
// quants a block, one dpbusd per line) four; the nibble types two, their
// unpacking taking registers and ports that four groups at once starve; q5_0
// (its fifth bits or-ed in, a load and two more operations a line) one.
// Zen 5, the 220M shape, `tachyon bench decode -m M -t T -p 0 -n 64 -r 2
// --no-bandwidth`, alternating rounds, mean t/s, 1 / 2 threads, one stretch
// -> S: q8_0 85-103 -> 112-132 (S = 4, 1 thread); q4_0 198 / 298 -> 239 /
// 346 (S = 2, seven rounds; S = 4 measured 239-257 -> 206-224); q4_1 168 /
// 262 -> 182 / 271; iq4_nl 217 / 335 -> 231 / 343; q5_1 132 / 207 -> 147 /
// 233; q5_0 175 / 268 -> 161 / 248 (so one). `tachyon bench matmul --type T
// --tokens 1 --mib 512 -t 1,2`, GB/s, one -> two stretches: q4_0 23.6-26.4
// / 41.0-45.9 -> 25.1-28.6 / 41.0-48.1, iq4_nl 22.6-24.5 / 40.2-42.8 ->
// 26.1-27.1 / 47.6-51.2. The last n_groups % S groups go one at a time.
template <class B>
constexpr int packed16_streams = std::is_same_v<B, block_q8_0> ? 4 : std::is_same_v<B, block_q5_0> ? 1 : 2;

// N packed groups read in one pass: their first rows, their bytes at
// a.panels and how many of their 16 rows lie in the range.
template <int N>
struct stream_pass {
    int64_t rows[N];
    const std::byte* groups[N];
    int n_rows[N];
};

// The groups of rows [r0, r1) (r0 a multiple of 16) as the one-token
// passes take them: pass(stream_pass<S>) with one group of each of S runs
// of consecutive groups, then pass(stream_pass<1>) with each group left
// over alone.
template <int S, class Pass>
void for_streams(const gemm_args& a, int64_t r0, int64_t r1, size_t group_bytes, const Pass& pass) {
    const auto run = [&]<int N>(const int64_t (&rs)[N]) {
        stream_pass<N> p;
        for (int k = 0; k < N; ++k) {
            p.rows[k] = rs[k];
            p.groups[k] = a.panels + static_cast<size_t>(rs[k] / 16) * group_bytes;
            p.n_rows[k] = static_cast<int>(std::min<int64_t>(16, r1 - rs[k]));
        }
        pass(p);
    };
    const int64_t per_run = (r1 - r0 + 15) / 16 / S;
    for (int64_t i = 0; i < per_run; ++i) {
        int64_t rs[S];
        for (int k = 0; k < S; ++k) rs[k] = r0 + 16 * (k * per_run + i);
        run(rs);
    }
    for (int64_t r = r0 + 16 * S * per_run; r < r1; r += 16) {
        const int64_t rs[1] = {r};
        run(rs);
    }
}

template <class B, int S>
void one_token_streams(const gemm_args& a, int64_t r0, int64_t r1, int64_t nb, const act_sums& s, size_t group_bytes) {
    for_streams<S>(a, r0, r1, group_bytes, [&]<int N>(const stream_pass<N>& p) {
        __mmask16 keeps[N];
        for (int k = 0; k < N; ++k) keeps[k] = static_cast<__mmask16>((1u << p.n_rows[k]) - 1);
        packed_tokens16<B, 1, N>(a, p.groups, nb, s, p.rows, 0, keeps, true);
    });
}

// Rows [r0, r1) (r0 a multiple of 16) from the packed groups at a.panels,
// every token: panels of tokens as by_row_groups, 8 tokens a pass.
template <class B>
void gemm_packed16(const gemm_args& a, int64_t r0, int64_t r1) {
    const int64_t nb = a.n_cols / qk_32;
    thread_local act_sums s;
    sum_activations<typename prompt_type<B>::act>(a, nb, prompt_type<B>::offset, s);
    const size_t group_bytes = packed16_group_bytes<B>(a.n_cols);
    if constexpr (packed16_streams<B> > 1)
        if (a.n_tokens == 1) return one_token_streams<B, packed16_streams<B>>(a, r0, r1, nb, s, group_bytes);
    const int64_t panel = std::max<int64_t>(nt16, prompt_panel_bytes / static_cast<int64_t>(a.x_row_bytes) / nt16 * nt16);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += panel) {
        const int64_t t1 = std::min(a.n_tokens, t0 + panel);
        for (int64_t r = r0; r < r1; r += 16) {
            const std::byte* group = a.panels + static_cast<size_t>(r / 16) * group_bytes;
            const auto keep = static_cast<__mmask16>((1u << std::min<int64_t>(16, r1 - r)) - 1);
            int64_t t = t0;
            // the first pass over the group brings it in; the rest find it in L1 or L2
            for (; t + nt16 <= t1; t += nt16) packed_tokens16<B, nt16>(a, {group}, nb, s, {r}, t, {keep}, t == t0);
            packed_tail16<B>(a, group, nb, s, r, t, keep, t1 - t, t == t0);
        }
    }
}

// 1 or 2 tokens from a packed group of q4_0, q5_0 or iq4_nl at AVX2 and
// AVX-VNNI (q8_0 stays in place there: kernels.cpp, rows16_level), the 16
// rows as two registers of 8. q4_0 and q5_0 (its fifth bits or-ed in):
// maddubs of the unsigned values against the token's bytes, pairs within
// 2 * 31 * 127: a q4_0 block's 16 products per int16 lane within 30480,
// half a q5_0 block's within 31496, so they add up in int16 before a madd
// widens them, and the dot starts at -offset * the activations' sum.
// iq4_nl: its levels (|w| <= 127) against x carrying w's sign, each pair
// (within 2 * 127 * 127) widened by its own madd; its dot starts at 0.
template <class B>
constexpr bool signed_packed8 = packed16<B>::levels;

// G groups (rows r[g].. of group[g], n_rows[g] of them) a pass: each line
// of a block in turn from every group.
template <class B, int NT, int G = 1>
TACHYON_PROMPT_AVX2 void packed_tokens8x2(const gemm_args& a, const std::byte* const (&group)[G], int64_t nb, const act_sums& s,
                                          const int64_t (&r)[G], int64_t t, const int (&n_rows)[G], bool prefetch) {
    using P = packed16<B>;
    using XB = typename prompt_type<B>::act;
    const int8_t* xq[NT];
    for (int j = 0; j < NT; ++j) xq[j] = reinterpret_cast<const XB*>(a.x + (t + j) * a.x_row_bytes)->qs;
    const float* dx = s.d.data() + t;
    const int32_t* start = s.start.data() + t;
    [[maybe_unused]] const float* xs = P::min ? s.s.data() + t : nullptr;
    const char* quants[G];
    const char* scales[G];
    for (int g = 0; g < G; ++g) {
        quants[g] = reinterpret_cast<const char*>(group[g]);
        scales[g] = quants[g] + static_cast<size_t>(nb) * P::main;
    }
    const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    [[maybe_unused]] const __m256i levels =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)));
    [[maybe_unused]] const __m256i abs_levels = _mm256_abs_epi8(levels);
    __m256 acc[G][2][NT];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
            for (int j = 0; j < NT; ++j) acc[g][h][j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const char* q[G];
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            q[g] = quants[g] + b * static_cast<int64_t>(P::main);
            if (prefetch) prefetch_packed16<B>(quants[g], b);
        }
        const size_t xo = static_cast<size_t>(b) * sizeof(XB);
        // Both halves of a line one after the other, each token's bytes
        // broadcast once for both (2 tokens of q4_0 in L2: 27 -> 32-35 GB/s).
        __m256i sum[G][2][NT];
        [[maybe_unused]] __m256i bits[G][2], s16[G][2][NT];
        if constexpr (P::fifth)
            for (int g = 0; g < G; ++g)
                for (int h = 0; h < 2; ++h) bits[g][h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(q[g] + 256 + 32 * h));
#pragma GCC unroll 4
        for (int m = 0; m < 4; ++m) {
            __m256i x_lo[NT], x_hi[NT];
#pragma GCC unroll 2
            for (int j = 0; j < NT; ++j) {
                x_lo[j] = _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 4 * m)));
                x_hi[j] = _mm256_set1_epi32(static_cast<int>(load_u32(xq[j] + xo + 16 + 4 * m)));
            }
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
#pragma GCC unroll 2
                for (int h = 0; h < 2; ++h) {
                    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(q[g] + 64 * m + 32 * h));
                    __m256i lo = _mm256_and_si256(v, low4);
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
                    if constexpr (!signed_packed8<B>) {
                        if constexpr (P::fifth) {
                            lo = _mm256_or_si256(lo, fifth_bits_lo8(bits[g][h], m));
                            hi = _mm256_or_si256(hi, fifth_bits_hi8(bits[g][h], m));
                        }
#pragma GCC unroll 2
                        for (int j = 0; j < NT; ++j) {
                            const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, x_lo[j]), _mm256_maddubs_epi16(hi, x_hi[j]));
                            s16[g][h][j] = m == 0 || (P::fifth && m == 2) ? p : _mm256_add_epi16(s16[g][h][j], p);
                            __asm__("" : "+x"(s16[g][h][j]));  // a chain, as in the prompt tiles
                            if (P::fifth && m == 1) sum[g][h][j] = _mm256_madd_epi16(s16[g][h][j], ones);
                        }
                    } else {
                        const __m256i w_lo = _mm256_shuffle_epi8(levels, lo), a_lo = _mm256_shuffle_epi8(abs_levels, lo);
                        const __m256i w_hi = _mm256_shuffle_epi8(levels, hi), a_hi = _mm256_shuffle_epi8(abs_levels, hi);
#pragma GCC unroll 2
                        for (int j = 0; j < NT; ++j) {
                            const __m256i p = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(a_lo, _mm256_sign_epi8(x_lo[j], w_lo)), ones),
                                                               _mm256_madd_epi16(_mm256_maddubs_epi16(a_hi, _mm256_sign_epi8(x_hi[j], w_hi)), ones));
                            sum[g][h][j] = m == 0 ? p : _mm256_add_epi32(sum[g][h][j], p);
                        }
                    }
                }
            }
        }
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
            if constexpr (!signed_packed8<B>) {
#pragma GCC unroll 2
                for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
                    for (int j = 0; j < NT; ++j) {
                        const __m256i d = _mm256_madd_epi16(s16[g][h][j], ones);
                        sum[g][h][j] = _mm256_add_epi32(P::fifth ? _mm256_add_epi32(sum[g][h][j], d) : d, _mm256_set1_epi32(start[b * a.n_tokens + j]));
                    }
            }
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                const char* sc = scales[g] + b * static_cast<int64_t>(P::scale_bytes) + 16 * h;
                const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
#pragma GCC unroll 2
                for (int j = 0; j < NT; ++j)
                    acc[g][h][j] =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[g][h][j]), _mm256_mul_ps(dw, _mm256_set1_ps(dx[b * a.n_tokens + j])), acc[g][h][j]);
                if constexpr (P::min) {
                    const __m256 mw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 32)));
#pragma GCC unroll 2
                    for (int j = 0; j < NT; ++j) acc[g][h][j] = _mm256_fmadd_ps(mw, _mm256_set1_ps(xs[b * a.n_tokens + j]), acc[g][h][j]);
                }
            }
        }
    }
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows[g] - 8 * h), lanes);
#pragma GCC unroll 2
            for (int j = 0; j < NT; ++j) _mm256_maskstore_ps(a.y + (t + j) * a.ldy + r[g] + 8 * h, keep, acc[g][h][j]);
        }
}

// One token at AVX2 and AVX-VNNI as S stretches, as one_token_streams: two
// for q4_0 and q4_1, whose two groups' sums and accumulators still fit the
// 16 registers; iq4_nl's level tables and q5_0's / q5_1's fifth bits leave
// no room, and their passes spilled. Zen 5, `TACHYON_KERNELS=avx2 tachyon
// bench matmul --type T --tokens 1 --mib 512 -t 1,2`, GB/s, 1 / 2 threads,
// one stretch -> two (three): q4_0 23.2-24.4 / 44.7-45.0 -> 28.0-34.0 /
// 60.8-62.4 (31.1-32.0 / 34.9-46.0), q4_1 20.1-23.9 / 43.3-43.7 ->
// 31.3-31.4 / 53.2-55.8, iq4_nl 24.5-25.0 / 42.4-43.8 -> 17.4-21.1 /
// 33.4-38.2, q5_1 20.0-21.5 / 37.8-39.3 -> 18.9-19.2 / 46.4; at avx_vnni q4_0
// 22.8-24.5 / 31.5-44.9 -> 26.3-31.7 / 52.8-59.3. The 220M shape at
// avx2, tg64, three alternating rounds, mean t/s: Q4_0 185 / 263 -> 255 /
// 278, Q4_1 160 / 215 -> 181 / 230.
template <class B>
constexpr int packed8x2_streams = std::is_same_v<B, block_q4_0> || std::is_same_v<B, block_q4_1> ? 2 : 1;

template <class B, int S>
void one_token_streams8x2(const gemm_args& a, int64_t r0, int64_t r1, int64_t nb, const act_sums& s, size_t group_bytes) {
    for_streams<S>(a, r0, r1, group_bytes, [&]<int N>(const stream_pass<N>& p) {
        packed_tokens8x2<B, 1, N>(a, p.groups, nb, s, p.rows, 0, p.n_rows, true);
    });
}

// Rows [r0, r1) (r0 a multiple of 16) from the packed groups at a.panels,
// every token, 2 a pass (AVX2 and AVX-VNNI, batches of up to 11 tokens).
template <class B>
void gemm_packed16_avx2(const gemm_args& a, int64_t r0, int64_t r1) {
    const int64_t nb = a.n_cols / qk_32;
    thread_local act_sums s;
    sum_activations<typename prompt_type<B>::act>(a, nb, signed_packed8<B> ? 0 : prompt_type<B>::offset, s);
    const size_t group_bytes = packed16_group_bytes<B>(a.n_cols);
    if constexpr (packed8x2_streams<B> > 1)
        if (a.n_tokens == 1) return one_token_streams8x2<B, packed8x2_streams<B>>(a, r0, r1, nb, s, group_bytes);
    for (int64_t r = r0; r < r1; r += 16) {
        const std::byte* group = a.panels + static_cast<size_t>(r / 16) * group_bytes;
        const int n = static_cast<int>(std::min<int64_t>(16, r1 - r));
        int64_t t = 0;
        for (; t + 2 <= a.n_tokens; t += 2) packed_tokens8x2<B, 2>(a, {group}, nb, s, {r}, t, {n}, t == 0);
        if (t < a.n_tokens) packed_tokens8x2<B, 1>(a, {group}, nb, s, {r}, t, {n}, t == 0);
    }
}

// Lays rows out as packed16 says.
template <class B>
void pack16(const void* w, int64_t n_rows, int64_t n_cols, std::byte* out) {
    using P = packed16<B>;
    const int64_t nb = n_cols / qk_32;
    const size_t row_bytes = static_cast<size_t>(nb) * sizeof(B);
    const size_t group_bytes = packed16_group_bytes<B>(n_cols);
    const int64_t n_groups = (n_rows + 15) / 16;
    std::memset(out, 0, static_cast<size_t>(n_groups) * group_bytes);
    for (int64_t g = 0; g < n_groups; ++g) {
        std::byte* group = out + static_cast<size_t>(g) * group_bytes;
        auto* scales = reinterpret_cast<uint16_t*>(group + static_cast<size_t>(nb) * P::main);  // [nb][16] (q4_1, q5_1: [nb][2][16])
        for (int i = 0; i < 16 && g * 16 + i < n_rows; ++i) {
            const B* row = reinterpret_cast<const B*>(static_cast<const std::byte*>(w) + static_cast<size_t>(g * 16 + i) * row_bytes);
            for (int64_t b = 0; b < nb; ++b) {
                std::byte* blk = group + static_cast<size_t>(b) * P::main;
                auto* quants = reinterpret_cast<uint32_t*>(blk);  // [dword][16]
                if constexpr (P::nibbles) {
                    for (int m = 0; m < 4; ++m) quants[m * 16 + i] = load_u32(row[b].qs + 4 * m);
                } else {
                    for (int m = 0; m < 8; ++m) quants[m * 16 + i] = load_u32(row[b].qs + 4 * m) ^ 0x80808080u;
                }
                if constexpr (P::fifth) {
                    // bit 8k + m of row i's dword: the fifth bit of element 4m + k
                    const uint32_t qh = load_u32(row[b].qh);
                    uint32_t bits = 0;
                    for (int m = 0; m < 8; ++m)
                        for (int k = 0; k < 4; ++k)
                            if ((qh >> (4 * m + k)) & 1u) bits |= uint32_t{1} << (8 * k + m);
                    reinterpret_cast<uint32_t*>(blk + 256)[i] = bits;
                }
                constexpr int64_t per_block = P::scale_bytes / 2;
                scales[b * per_block + i] = row[b].d;
                if constexpr (P::min) scales[b * per_block + 16 + i] = row[b].m;
            }
        }
    }
}

}  // namespace

size_t packed16_bytes(tensor_type weight, int64_t n_rows, int64_t n_cols) {
    const auto groups = static_cast<size_t>((n_rows + 15) / 16);
    switch (weight) {
        case tensor_type::q4_0: return groups * packed16_group_bytes<block_q4_0>(n_cols);
        case tensor_type::q4_1: return groups * packed16_group_bytes<block_q4_1>(n_cols);
        case tensor_type::q5_1: return groups * packed16_group_bytes<block_q5_1>(n_cols);
        case tensor_type::iq4_nl: return groups * packed16_group_bytes<block_iq4_nl>(n_cols);
        case tensor_type::q5_0: return groups * packed16_group_bytes<block_q5_0>(n_cols);
        case tensor_type::q8_0: return groups * packed16_group_bytes<block_q8_0>(n_cols);
        default: return 0;
    }
}

void pack_rows16(tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols, std::byte* out) {
    switch (weight) {
        case tensor_type::q4_0: return pack16<block_q4_0>(w, n_rows, n_cols, out);
        case tensor_type::q4_1: return pack16<block_q4_1>(w, n_rows, n_cols, out);
        case tensor_type::q5_1: return pack16<block_q5_1>(w, n_rows, n_cols, out);
        case tensor_type::iq4_nl: return pack16<block_iq4_nl>(w, n_rows, n_cols, out);
        case tensor_type::q5_0: return pack16<block_q5_0>(w, n_rows, n_cols, out);
        case tensor_type::q8_0: return pack16<block_q8_0>(w, n_rows, n_cols, out);
        default: return;
    }
}

gemm_fn packed16_gemm256(tensor_type weight) {
    switch (weight) {
        case tensor_type::q4_0: return gemm_packed16_avx2<block_q4_0>;
        case tensor_type::q4_1: return gemm_packed16_avx2<block_q4_1>;
        case tensor_type::q5_1: return gemm_packed16_avx2<block_q5_1>;
        case tensor_type::iq4_nl: return gemm_packed16_avx2<block_iq4_nl>;
        case tensor_type::q5_0: return gemm_packed16_avx2<block_q5_0>;
        default: return nullptr;
    }
}

gemm_fn packed16_gemm512(tensor_type weight) {
    switch (weight) {
        case tensor_type::q4_0: return gemm_packed16<block_q4_0>;
        case tensor_type::q4_1: return gemm_packed16<block_q4_1>;
        case tensor_type::q5_1: return gemm_packed16<block_q5_1>;
        case tensor_type::iq4_nl: return gemm_packed16<block_iq4_nl>;
        case tensor_type::q5_0: return gemm_packed16<block_q5_0>;
        case tensor_type::q8_0: return gemm_packed16<block_q8_0>;
        default: return nullptr;
    }
}

}  // namespace tachyon::detail
