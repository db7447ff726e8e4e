// The elementwise and per-row operations of a llama-family forward pass:
// RMSNorm, softmax, SwiGLU and GeGLU, softcap, scaling, RoPE (with the
// frequency factors, partial rotation and linear/YaRN angle rules of
// llama.cpp's rope_ext), residual add. AVX2 versions are picked by
// `isa` (default: default_isa()); the scalar versions are the reference.
// Outputs may alias inputs of the same shape.
#pragma once

#include <cstdint>

#include "inference/kernels/kernels.h"

namespace tachyon {

// y = x * w / sqrt(mean(x^2) + eps).  x, w, y: [n]
void rmsnorm(float* y, const float* x, const float* w, int64_t n, float eps, kernel_isa isa = default_isa());

// In place: x = exp(x - max(x)) / sum. Entries of -inf (masked) become 0;
// at least one entry must be finite.  x: [n]
void softmax(float* x, int64_t n, kernel_isa isa = default_isa());

// SwiGLU: y = silu(gate) * up, silu(g) = g / (1 + exp(-g)).  gate, up, y: [n]
void silu_mul(float* y, const float* gate, const float* up, int64_t n, kernel_isa isa = default_isa());

// y = a + b.  a, b, y: [n]
void add(float* y, const float* a, const float* b, int64_t n, kernel_isa isa = default_isa());

// How RoPE pairs the dimensions of a head: `normal` rotates (2i, 2i+1)
// (llama, mistral GGUFs), `neox` rotates (i, i + head_dim/2) (qwen2, neox).
enum class rope_mode { normal, neox };

// In place rotary position embedding. Pair i of a head at position p turns
// by p * theta_base^(-2i / head_dim).
//   x: [n_tokens, n_heads, head_dim]; positions: [n_tokens]; head_dim even.
void rope(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, const int32_t* positions,
          float theta_base, rope_mode mode);

// The same in two halves, so that a forward computes the angles of its
// tokens once for every layer and for both q and k:
//   rope_table: cs [n_tokens, head_dim] = per token, head_dim/2 cosines then head_dim/2 sines.
//   rope_apply: x as in rope(), rotated by those angles.
void rope_table(float* cs, int64_t n_tokens, int64_t head_dim, const int32_t* positions, float theta_base);
void rope_apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, const float* cs, rope_mode mode);

// How the angle of pair j (j < n_rot/2) at position p is made:
//   θ_extrap = p · base^(-2j / n_rot) / freq_factors[j]   (factors: rope_freqs, LongRoPE; none = 1)
//   θ_interp = θ_extrap · freq_scale                       (linear scaling: 1 / factor)
//   θ = θ_interp                                           (ext_factor 0)
//   θ = θ_interp (1 - r) + θ_extrap r,                     (YaRN, ext_factor > 0)
//       r = ext_factor (1 - clamp((j - corr_low) / max(0.001, corr_high - corr_low), 0, 1))
// and cos θ, sin θ are both multiplied by mscale (phi3's attn_factor,
// YaRN's magnitude), which grows the rotated dimensions only.
struct rope_angles {
    int n_rot = 0;                         // rotated dimensions per head (even; the first n_rot of a head)
    float base = 10000.0f;
    float freq_scale = 1.0f;
    const float* freq_factors = nullptr;   // [n_rot / 2] or nullptr
    float ext_factor = 0.0f;
    float corr_low = 0.0f, corr_high = 0.0f;
    float mscale = 1.0f;
};

// YaRN's correction range [low, high] of pairs for a model trained on
// n_ctx_orig positions: the pairs that turn fewer than beta_slow (high) and
// more than beta_fast (low) times over that context are the blend's ends.
void rope_yarn_corr_dims(int n_rot, int n_ctx_orig, float base, float beta_fast, float beta_slow, float& low, float& high);

// Partial, scaled RoPE:
//   rope_table: cs [n_tokens, a.n_rot] = per token, n_rot/2 (scaled) cosines then n_rot/2 sines.
//   rope_apply: dimensions [0, n_rot) of each head of x rotated by them,
//   pairs (2j, 2j+1) (normal) or (j, j + n_rot/2) (neox); the rest untouched.
void rope_table(float* cs, int64_t n_tokens, const int32_t* positions, const rope_angles& a);
void rope_apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t n_rot, const float* cs, rope_mode mode);

// GeGLU with the tanh GELU: y = gelu(gate) * up,
// gelu(g) = 0.5 g (1 + tanh(sqrt(2/π) (g + 0.044715 g³))), in float (not
// llama.cpp's f16 table).  gate, up, y: [n]
// This and the two below are scalar on every kernel set: gemma's FFN and
// caps, granite's scales, not the plain llama path.
void gelu_tanh_mul(float* y, const float* gate, const float* up, int64_t n);

// In place: x = cap · tanh(x / cap) (gemma2's logit softcapping).  x: [n]; cap > 0
void softcap(float* x, int64_t n, float cap);

// In place: x *= s.  x: [n]
void scale(float* x, int64_t n, float s);

}  // namespace tachyon
