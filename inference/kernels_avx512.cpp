// The float-weight (f32, f16, bf16) matmul again with AVX-512: sixteen
// columns per register, and tiles of 4 weight rows x 4 tokens whose sixteen
// accumulators stay in registers (AVX2 has room for 4 x 2). The q8_0 / q4_0
// tile is the AVX-VNNI one, compiled for this target with 4 x 4 tiles: its
// 16 accumulators fit in the 32 vector registers. Every function carries
// its own target attribute so the file builds for plain x86-64; kernels.cpp
// only calls in here after checking the CPU (default_isa).

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge
// operand, which -Wuninitialized reports once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "inference/fp16.h"
#include "inference/kernels_internal.h"
#include "inference/quant.h"

#define TACHYON_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c,avxvnni")))
#define TACHYON_TILE_TARGET TACHYON_AVX512
#define TACHYON_TILE_VNNI 1
#define TACHYON_TILE_Q8_RN 4
#include "inference/kernels_q8_tile.h"

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
        int64_t k = 0;
        for (; k + 16 <= n; k += 16) {
            __m512 xv[RN];
#pragma GCC unroll 16
            for (int j = 0; j < RN; ++j) xv[j] = _mm512_loadu_ps(x[j] + k);
#pragma GCC unroll 16
            for (int i = 0; i < RM; ++i) {
                const __m512 wv = L::load16(w[i] + k);
#pragma GCC unroll 16
                for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
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

// One token against rows shorter than this runs the AVX2 tile: a 16-wide
// loop of a few steps does not pay for its wider horizontal sums (measured
// on a model with 128-wide rows: decode 6 % slower). Several tokens take
// the 4 x 4 tile whatever the width: each weight vector loaded and
// converted serves 4 tokens instead of 2.
constexpr int64_t min_cols_512 = 256;

template <class L, tensor_type T>
void gemm_by_width(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_cols < min_cols_512 && a.n_tokens < 4) return avx2_kernels(T)->gemm(a, r0, r1);
    gemm<float_tile512<L>>(a, r0, r1);
}

}  // namespace

const type_kernels* avx512_kernels(tensor_type weight) {
    static const type_kernels f32{gemm_by_width<load16_f32, tensor_type::f32>, dot<float_tile512<load16_f32>>, nullptr};
    static const type_kernels f16{gemm_by_width<load16_f16, tensor_type::f16>, dot<float_tile512<load16_f16>>, nullptr};
    static const type_kernels bf16{gemm_by_width<load16_bf16, tensor_type::bf16>, dot<float_tile512<load16_bf16>>, nullptr};
    // Activations are quantized as under AVX2 (same q8_0 format).
    static const type_kernels q8_0{gemm<q8_tile<unpack_q8_0>>, dot<q8_tile<unpack_q8_0>>, avx2_kernels(tensor_type::q8_0)->quantize};
    static const type_kernels q4_0{gemm<q8_tile<unpack_q4_0>>, dot<q8_tile<unpack_q4_0>>, avx2_kernels(tensor_type::q4_0)->quantize};
    switch (weight) {
        case tensor_type::f32: return &f32;
        case tensor_type::f16: return &f16;
        case tensor_type::bf16: return &bf16;
        case tensor_type::q8_0: return &q8_0;
        case tensor_type::q4_0: return &q4_0;
        default: return avx_vnni_kernels(weight);
    }
}

}  // namespace tachyon::detail
