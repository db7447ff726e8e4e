#include "inference/kernels/ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "base/assert.h"

#define TACHYON_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace tachyon {
namespace {

// ---- scalar reference --------------------------------------------------------

void rmsnorm_scalar(float* y, const float* x, const float* w, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void softmax_scalar(float* x, int64_t n) {
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu_mul_scalar(float* y, const float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add_scalar(float* y, const float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

// ---- AVX2 --------------------------------------------------------------------

// e^x to about 2 ulp: x = n ln2 + r with |r| <= ln2/2, e^r by its degree-6
// Taylor polynomial (truncation ~1.2e-7 relative), times 2^n built in the
// exponent bits. Below -87.3 (including -inf) the result is 0; inputs are
// clamped above at 88.3 (e^88.3 is near FLT_MAX).
TACHYON_AVX2 inline __m256 exp256(__m256 x) {
    const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln2 split: exact high part
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(underflow, y);
}

TACHYON_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TACHYON_AVX2 inline float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TACHYON_AVX2 void rmsnorm_avx2(float* y, const float* x, const float* w, int64_t n, float eps) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        s0 = _mm256_fmadd_ps(a, a, s0);
        s1 = _mm256_fmadd_ps(b, b, s1);
    }
    double ss = hsum(_mm256_add_ps(s0, s1));
    for (; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    const __m256 vs = _mm256_set1_ps(scale);
    i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(w + i)));
    for (; i < n; ++i) y[i] = x[i] * scale * w[i];
}

TACHYON_AVX2 void softmax_avx2(float* x, int64_t n) {
    __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    float max = hmax(vmax);
    for (; i < n; ++i) max = std::max(max, x[i]);
    const __m256 vm = _mm256_set1_ps(max);
    __m256 vsum = _mm256_setzero_ps();
    i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = hsum(vsum);
    for (; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    const __m256 vi = _mm256_set1_ps(inv);
    i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vi));
    for (; i < n; ++i) x[i] *= inv;
}

TACHYON_AVX2 void silu_mul_avx2(float* y, const float* gate, const float* up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 e = exp256(_mm256_xor_ps(g, sign));
        const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
    }
    for (; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

TACHYON_AVX2 void add_avx2(float* y, const float* a, const float* b, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace

void rmsnorm(float* y, const float* x, const float* w, int64_t n, float eps, kernel_isa isa) {
    TACHYON_ASSERT(n > 0, "rmsnorm of an empty row");
    if (isa != kernel_isa::scalar) return rmsnorm_avx2(y, x, w, n, eps);
    rmsnorm_scalar(y, x, w, n, eps);
}

void softmax(float* x, int64_t n, kernel_isa isa) {
    TACHYON_ASSERT(n > 0, "softmax of an empty row");
    if (isa != kernel_isa::scalar) return softmax_avx2(x, n);
    softmax_scalar(x, n);
}

void silu_mul(float* y, const float* gate, const float* up, int64_t n, kernel_isa isa) {
    if (isa != kernel_isa::scalar) return silu_mul_avx2(y, gate, up, n);
    silu_mul_scalar(y, gate, up, n);
}

void add(float* y, const float* a, const float* b, int64_t n, kernel_isa isa) {
    if (isa != kernel_isa::scalar) return add_avx2(y, a, b, n);
    add_scalar(y, a, b, n);
}

void rope_yarn_corr_dims(int n_rot, int n_ctx_orig, float base, float beta_fast, float beta_slow, float& low, float& high) {
    // Pair j turns n_ctx_orig · base^(-2j/n_rot) / 2π times over the
    // context; solved for j at beta turns.
    const auto dim = [&](float beta) {
        return static_cast<double>(n_rot) * std::log(static_cast<double>(n_ctx_orig) / (beta * 2.0 * std::numbers::pi)) /
               (2.0 * std::log(static_cast<double>(base)));
    };
    low = static_cast<float>(std::max(0.0, std::floor(dim(beta_fast))));
    high = static_cast<float>(std::min(static_cast<double>(n_rot - 1), std::ceil(dim(beta_slow))));
}

void rope_table(float* cs, int64_t n_tokens, const int32_t* positions, const rope_angles& a) {
    TACHYON_ASSERT(a.n_rot > 0 && a.n_rot % 2 == 0, "rope: odd n_rot");
    const int64_t half = a.n_rot / 2;
    // Per pair, the factors of θ_interp and θ_extrap on the position (in
    // double, once per call); each angle is then one multiply per token.
    thread_local std::vector<double> freq;  // [half, 2]
    freq.resize(static_cast<size_t>(2 * half));
    for (int64_t j = 0; j < half; ++j) {
        double extrap = std::pow(static_cast<double>(a.base), -2.0 * static_cast<double>(j) / static_cast<double>(a.n_rot));
        if (a.freq_factors) extrap /= static_cast<double>(a.freq_factors[j]);
        const double interp = extrap * static_cast<double>(a.freq_scale);
        double mix = 0.0;
        if (a.ext_factor != 0.0f) {
            const double y = (static_cast<double>(j) - a.corr_low) / std::max(0.001, static_cast<double>(a.corr_high) - a.corr_low);
            mix = (1.0 - std::clamp(y, 0.0, 1.0)) * a.ext_factor;
        }
        freq[static_cast<size_t>(2 * j)] = interp * (1.0 - mix) + extrap * mix;
    }
    const double m = a.mscale;
    for (int64_t t = 0; t < n_tokens; ++t) {
        float* c = cs + t * a.n_rot;
        for (int64_t j = 0; j < half; ++j) {
            const double angle = static_cast<double>(positions[t]) * freq[static_cast<size_t>(2 * j)];
            c[j] = static_cast<float>(std::cos(angle) * m);
            c[half + j] = static_cast<float>(std::sin(angle) * m);
        }
    }
}

void rope_apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t n_rot, const float* cs, rope_mode mode) {
    TACHYON_ASSERT(n_rot % 2 == 0 && n_rot <= head_dim, "rope: n_rot must be even and at most head_dim");
    const int64_t half = n_rot / 2;
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* c = cs + t * n_rot;
        for (int64_t h = 0; h < n_heads; ++h) {
            float* v = x + (t * n_heads + h) * head_dim;
            for (int64_t i = 0; i < half; ++i) {
                const int64_t a = mode == rope_mode::normal ? 2 * i : i;
                const int64_t b = mode == rope_mode::normal ? 2 * i + 1 : i + half;
                const float co = c[i], si = c[half + i];
                const float x0 = v[a], x1 = v[b];
                v[a] = x0 * co - x1 * si;
                v[b] = x0 * si + x1 * co;
            }
        }
    }
}

void gelu_tanh_mul(float* y, const float* gate, const float* up, int64_t n) {
    const float k = 0.7978845608028654f;  // sqrt(2/π)
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        y[i] = 0.5f * g * (1.0f + std::tanh(k * (g + 0.044715f * g * g * g))) * up[i];
    }
}

void softcap(float* x, int64_t n, float cap) {
    TACHYON_ASSERT(cap > 0.0f, "softcap: cap must be > 0");
    const float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

void scale(float* x, int64_t n, float s) {
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void rope_table(float* cs, int64_t n_tokens, int64_t head_dim, const int32_t* positions, float theta_base) {
    TACHYON_ASSERT(head_dim % 2 == 0, "rope: odd head_dim");
    const int64_t half = head_dim / 2;
    // Each angle is computed in double, once per token and pair.
    std::vector<double> freq(static_cast<size_t>(half));  // [half]
    for (int64_t i = 0; i < half; ++i)
        freq[i] = std::pow(static_cast<double>(theta_base), -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    for (int64_t t = 0; t < n_tokens; ++t) {
        float* c = cs + t * head_dim;
        for (int64_t i = 0; i < half; ++i) {
            const double angle = static_cast<double>(positions[t]) * freq[i];
            c[i] = static_cast<float>(std::cos(angle));
            c[half + i] = static_cast<float>(std::sin(angle));
        }
    }
}

void rope_apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, const float* cs, rope_mode mode) {
    TACHYON_ASSERT(head_dim % 2 == 0, "rope: odd head_dim");
    rope_apply(x, n_tokens, n_heads, head_dim, head_dim, cs, mode);  // every dimension rotated
}

void rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, const int32_t* positions,
          float theta_base, rope_mode mode) {
    std::vector<float> cs(static_cast<size_t>(n_tokens * head_dim));
    rope_table(cs.data(), n_tokens, head_dim, positions, theta_base);
    rope_apply(x, n_tokens, n_heads, head_dim, cs.data(), mode);
}

}  // namespace tachyon
