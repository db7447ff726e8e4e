// What the 16- and 8-row prompt tiles (kernels_prompt.cpp) and the kernels
// of the weights packed in groups of 16 rows (kernels_packed16.cpp) share:
// how a block type is read, the activations' per-block scales and sums, and
// the target attributes. Internal to the kernels.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "inference/gguf/quant.h"
#include "inference/kernels/kernels_internal.h"

#define TACHYON_PROMPT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TACHYON_PROMPT_AVX_VNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define TACHYON_PROMPT_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c")))

namespace tachyon::detail {

// How the tiles read a weight type: `nibbles` keeps the block's 16 bytes of
// nibbles (elements 4m..4m+3 in the low nibbles of dword m, 16+4m..16+4m+3
// in the high ones), else 8 dwords of bytes; stored q + offset; `min` adds
// m * s per block (q8_1 activations, act).
template <class B>
struct prompt_type;
template <>
struct prompt_type<block_q4_0> {
    static constexpr bool nibbles = true, min = false;
    static constexpr int offset = 8;
    using act = block_q8_0;
};
template <>
struct prompt_type<block_q4_1> {
    static constexpr bool nibbles = true, min = true;
    static constexpr int offset = 0;
    using act = block_q8_1;
};
template <>
struct prompt_type<block_q8_0> {
    static constexpr bool nibbles = false, min = false;
    static constexpr int offset = 128;
    using act = block_q8_0;
};
template <>
struct prompt_type<block_iq4_nl> {
    static constexpr bool nibbles = false, min = false;
    static constexpr int offset = 128;
    using act = block_q8_0;
};
template <>
struct prompt_type<block_q5_0> {
    static constexpr bool nibbles = false, min = false;
    static constexpr int offset = 16;
    using act = block_q8_0;
};
template <>
struct prompt_type<block_q5_1> {
    static constexpr bool nibbles = false, min = true;
    static constexpr int offset = 0;
    using act = block_q8_1;
};

// Per block and token of the activations: the scale and -offset * the sum
// of the quants (where the integer dot of weights stored q + offset starts);
// with q8_1 activations the block's fp16 sum s instead (the start is 0).
// Block major, so that a tile reaches its tokens' values from one pointer.
struct act_sums {
    std::vector<float> d;        // [nb, n_tokens]
    std::vector<int32_t> start;  // [nb, n_tokens]
    std::vector<float> s;        // [nb, n_tokens], q8_1 only
};

template <class XB>
TACHYON_PROMPT_AVX2 void sum_activations(const gemm_args& a, int64_t nb, int offset, act_sums& s) {
    constexpr bool q8_1 = std::is_same_v<XB, block_q8_1>;
    const size_t n = static_cast<size_t>(a.n_tokens * nb);
    if (s.d.size() < n) {
        s.d.resize(n);
        s.start.resize(n);
    }
    if (q8_1 && s.s.size() < n) s.s.resize(n);
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    // 16 tokens at a time, so that each block's values fill a line of the
    // outputs (token by token over every block, each store missed L1: 5 %
    // of a prompt of 512)
    constexpr int64_t chunk = 16;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += chunk) {
        const int64_t t1 = std::min(a.n_tokens, t0 + chunk);
        for (int64_t b = 0; b < nb; ++b) {
            for (int64_t t = t0; t < t1; ++t) {
                const XB& x = reinterpret_cast<const XB*>(a.x + t * a.x_row_bytes)[b];
                s.d[b * a.n_tokens + t] = _cvtsh_ss(x.d);
                if constexpr (q8_1) {
                    s.s[b * a.n_tokens + t] = _cvtsh_ss(x.s);
                    s.start[b * a.n_tokens + t] = 0;
                } else {
                    // sum of signed bytes = sum of (byte + 128) - 32 * 128, in four sad sums of 8
                    const __m256i q = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs)), flip);
                    const __m256i sad = _mm256_sad_epu8(q, _mm256_setzero_si256());
                    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(sad), _mm256_extracti128_si256(sad, 1));
                    const int sum = static_cast<int>(_mm_cvtsi128_si64(_mm_add_epi64(h, _mm_unpackhi_epi64(h, h)))) - 32 * 128;
                    s.start[b * a.n_tokens + t] = -offset * sum;
                }
            }
        }
    }
}

inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// How q4_0, q4_1, iq4_nl, q5_0, q5_1 and q8_0 lie in the panels pack_panels
// makes from AVX2 up to AVX-512 (kernels_packed16.cpp packs them and runs
// 1-2 tokens at AVX2, any batch at AVX-512; the AVX2 tiles here lay the
// rows of all but q8_0 out from them for more): groups of 16 rows, `main`
// bytes a block (the quants' dwords [m][row]: q4_0 / q4_1 / iq4_nl / q5_0
// / q5_1 4 of nibbles as stored, q8_0 8 of bytes as value + 128; q5_0 and
// q5_1 then a dword of fifth bits a row, bit 8k + m the fifth bit of
// element 4m + k, so that a shift and an and line up those of dword m's
// low nibbles (m < 4) or of dword m - 4's high ones with the nibbles' bit
// 4), every block's then one after another, then the rows' fp16 scales, 32
// bytes a block (q4_1 and q5_1: 64, the scales then the mins); the group
// padded to a cache line. A 64-byte line of quants is 16 rows: one AVX-512
// register, or two AVX2 ones of 8 rows each.
template <class B>
struct packed16 {
    static constexpr bool nibbles = !std::is_same_v<B, block_q8_0>;
    static constexpr bool fifth = std::is_same_v<B, block_q5_0> || std::is_same_v<B, block_q5_1>;
    static constexpr bool levels = std::is_same_v<B, block_iq4_nl>;
    static constexpr bool min = prompt_type<B>::min;
    static constexpr size_t main = nibbles ? 256 + (fifth ? 64 : 0) : 512;
    static constexpr size_t scale_bytes = min ? 64 : 32;  // the rows' fp16 scales (then mins) a block
};

template <class B>
inline size_t packed16_group_bytes(int64_t n_cols) {
    const size_t nb = static_cast<size_t>(n_cols / qk_32);
    return (nb * (packed16<B>::main + packed16<B>::scale_bytes) + 63) / 64 * 64;
}

// The fifth bits of q5_0 packed16 dword m's low nibbles (m < 4) and of
// its high ones (4 + m) from the rows' dwords of fifth bits, as 0x10 bytes.
TACHYON_PROMPT_AVX2 inline __m256i fifth_bits_lo8(__m256i bits, int m) {
    return _mm256_and_si256(_mm256_slli_epi32(bits, 4 - m), _mm256_set1_epi8(0x10));
}
TACHYON_PROMPT_AVX2 inline __m256i fifth_bits_hi8(__m256i bits, int m) {
    return _mm256_and_si256(_mm256_srli_epi32(bits, m), _mm256_set1_epi8(0x10));
}

// How far ahead the packed passes ask for their quants (and scales, as
// many blocks ahead) into L2: 8 KiB (Zen 5, one thread, 2816 x 1024 q4_0
// from 512 MiB, one token, 2 / 4 / 8 / 16 KiB ahead: 20.0-21.0 /
// 19.9-20.3 / 21.9 / 16.4-17.4 GB/s; two threads 37-38 / 37 / 41-42 /
// 32-33).
constexpr int64_t packed16_prefetch_bytes = 8 << 10;

constexpr int nt16 = 8;  // tokens per AVX-512 tile: 8 int and 8 float sums, 16 of the 32 registers

}  // namespace tachyon::detail
