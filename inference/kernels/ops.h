// The elementwise and per-row operations of a llama-family forward pass:
// RMSNorm, softmax, SwiGLU, RoPE, residual add. AVX2 versions are picked by
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

}  // namespace tachyon
