// An in-register transpose of a 16 x 16 float matrix (AVX-512), shared by
// the kernels that turn rows into columns: the AMX tiles' output and the
// float matmul of many tokens over short rows.
#pragma once

#include <immintrin.h>

#define TACHYON_TRANSPOSE16 __attribute__((target("avx512f")))

namespace tachyon::detail {
namespace {

// v[i] = row i of a 16 x 16 matrix; afterwards v[j] = its column j.
TACHYON_TRANSPOSE16 inline void transpose16(__m512 (&v)[16]) {
    __m512 t[16], u[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
    }
    // u[4g + s]: rows 4g.. 4g + 3 of columns s, s + 4, s + 8, s + 12 (one per 128-bit lane)
#pragma GCC unroll 16
    for (int g = 0; g < 4; ++g) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
#pragma GCC unroll 16
    for (int s = 0; s < 4; ++s) {
        const __m512 even0 = _mm512_shuffle_f32x4(u[s], u[4 + s], 0x88), even1 = _mm512_shuffle_f32x4(u[8 + s], u[12 + s], 0x88);
        const __m512 odd0 = _mm512_shuffle_f32x4(u[s], u[4 + s], 0xdd), odd1 = _mm512_shuffle_f32x4(u[8 + s], u[12 + s], 0xdd);
        v[s] = _mm512_shuffle_f32x4(even0, even1, 0x88);
        v[s + 8] = _mm512_shuffle_f32x4(even0, even1, 0xdd);
        v[s + 4] = _mm512_shuffle_f32x4(odd0, odd1, 0x88);
        v[s + 12] = _mm512_shuffle_f32x4(odd0, odd1, 0xdd);
    }
}

}  // namespace
}  // namespace tachyon::detail
