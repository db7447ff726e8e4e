// What the AVX-512 attention kernels share (attention.cpp's rows,
// amx/attention_amx.cpp's softmax between tiles): the target attribute,
// e^x of scores below their maximum, and the sum and maximum of 16 lanes.
// Only where the compiler has AVX-512 intrinsics (TACHYON_ATTENTION_AVX512);
// the functions run only where the CPU has it.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TACHYON_ATTENTION_AVX512 1
// AVX-512 functions carry the target themselves: the rest of the binary
// stays at the build's baseline, and they run only where the CPU has it.
#define TACHYON_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c")))

namespace tachyon::detail {

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

}  // namespace tachyon::detail
#endif
