#include "inference/gguf/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/assert.h"
#include "inference/gguf/fp16.h"

namespace tachyon {
namespace {

void dequantize_q8_0(const block_q8_0* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        for (int j = 0; j < qk_32; ++j) y[b * qk_32 + j] = d * static_cast<float>(x[b].qs[j]);
    }
}

void dequantize_q4_0(const block_q4_0* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        float* out = y + b * qk_32;
        for (int j = 0; j < qk_32 / 2; ++j) {
            out[j] = d * static_cast<float>((x[b].qs[j] & 0x0f) - 8);
            out[j + 16] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
        }
    }
}

// q4_K and q5_K: eight sub-blocks of 32 with a 6-bit scale and min; q5_K's
// values take a fifth bit from qh (bit j of qh[l] for sub-block j).
template <class Block, bool FiveBits>
void dequantize_q45_k(const Block* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        const float dmin = fp16_to_fp32(x[b].dmin);
        const uint8_t* q = x[b].qs;
        float* out = y + b * qk_k;
        for (int c = 0; c < 4; ++c) {  // 64 elements per pass: two sub-blocks
            uint8_t sc0, m0, sc1, m1;
            q4_k_scale_min(2 * c, x[b].scales, sc0, m0);
            q4_k_scale_min(2 * c + 1, x[b].scales, sc1, m1);
            const float d0 = d * sc0, min0 = dmin * m0;
            const float d1 = d * sc1, min1 = dmin * m1;
            for (int l = 0; l < 32; ++l) {
                int q0 = q[32 * c + l] & 0x0f;
                int q1 = q[32 * c + l] >> 4;
                if constexpr (FiveBits) {
                    q0 |= ((x[b].qh[l] >> (2 * c)) & 1) << 4;
                    q1 |= ((x[b].qh[l] >> (2 * c + 1)) & 1) << 4;
                }
                out[64 * c + l] = d0 * static_cast<float>(q0) - min0;
                out[64 * c + 32 + l] = d1 * static_cast<float>(q1) - min1;
            }
        }
    }
}

void dequantize_q4_k(const block_q4_k* x, float* y, int64_t n_blocks) { dequantize_q45_k<block_q4_k, false>(x, y, n_blocks); }

void dequantize_q6_k(const block_q6_k* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        for (int half = 0; half < 2; ++half) {  // 128 elements per half
            const uint8_t* ql = x[b].ql + 64 * half;
            const uint8_t* qh = x[b].qh + 32 * half;
            const int8_t* sc = x[b].scales + 8 * half;
            float* out = y + b * qk_k + 128 * half;
            for (int l = 0; l < 32; ++l) {
                const int s = l / 16;
                const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                out[l] = d * sc[s + 0] * static_cast<float>(q1);
                out[l + 32] = d * sc[s + 2] * static_cast<float>(q2);
                out[l + 64] = d * sc[s + 4] * static_cast<float>(q3);
                out[l + 96] = d * sc[s + 6] * static_cast<float>(q4);
            }
        }
    }
}

// The dequantizers below do ggml's float operations in ggml's order, so that
// an exact-mode model computes on the very values llama.cpp does. Every
// product of an fp16 scale (11 significant bits) with the formats' small
// integers (at most 6-bit scales times 7-bit levels) is exact in float, so
// the one rounding is that of the final sum with the min: the values are
// the same whether a compiler fuses it or not.

void dequantize_q4_1(const block_q4_1* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        const float m = fp16_to_fp32(x[b].m);
        float* out = y + b * qk_32;
        for (int j = 0; j < qk_32 / 2; ++j) {
            out[j] = static_cast<float>(x[b].qs[j] & 0x0f) * d + m;
            out[j + 16] = static_cast<float>(x[b].qs[j] >> 4) * d + m;
        }
    }
}

// Element j's fifth bit (0 or 16) from a q5_0 / q5_1 block's qh.
inline int q5_high_bit(const uint8_t qh[4], int j) { return ((qh[j / 8] >> (j % 8)) & 1) << 4; }

void dequantize_q5_0(const block_q5_0* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        float* out = y + b * qk_32;
        for (int j = 0; j < qk_32 / 2; ++j) {
            const int q0 = ((x[b].qs[j] & 0x0f) | q5_high_bit(x[b].qh, j)) - 16;
            const int q1 = ((x[b].qs[j] >> 4) | q5_high_bit(x[b].qh, j + 16)) - 16;
            out[j] = static_cast<float>(q0) * d;
            out[j + 16] = static_cast<float>(q1) * d;
        }
    }
}

void dequantize_q5_1(const block_q5_1* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        const float m = fp16_to_fp32(x[b].m);
        float* out = y + b * qk_32;
        for (int j = 0; j < qk_32 / 2; ++j) {
            const int q0 = (x[b].qs[j] & 0x0f) | q5_high_bit(x[b].qh, j);
            const int q1 = (x[b].qs[j] >> 4) | q5_high_bit(x[b].qh, j + 16);
            out[j] = static_cast<float>(q0) * d + m;
            out[j + 16] = static_cast<float>(q1) * d + m;
        }
    }
}

void dequantize_iq4_nl(const block_iq4_nl* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        float* out = y + b * qk_32;
        for (int j = 0; j < qk_32 / 2; ++j) {
            out[j] = d * static_cast<float>(iq4_nl_values[x[b].qs[j] & 0x0f]);
            out[j + 16] = d * static_cast<float>(iq4_nl_values[x[b].qs[j] >> 4]);
        }
    }
}

void dequantize_q2_k(const block_q2_k* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        const float dmin = fp16_to_fp32(x[b].dmin);
        for (int e0 = 0; e0 < qk_k; e0 += 16) {  // one sub-block of 16 per pass
            const int h = e0 / 128, j = (e0 % 128) / 32, l0 = e0 % 32;
            const uint8_t sc = x[b].scales[e0 / 16];
            const float dl = d * static_cast<float>(sc & 0x0f);
            const float ml = dmin * static_cast<float>(sc >> 4);
            const uint8_t* q = x[b].qs + 32 * h + l0;
            float* out = y + b * qk_k + e0;
            for (int l = 0; l < 16; ++l) out[l] = dl * static_cast<float>((q[l] >> (2 * j)) & 3) - ml;
        }
    }
}

void dequantize_q3_k(const block_q3_k* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        int8_t scales[16];
        q3_k_scales(x[b].scales, scales);
        for (int e0 = 0; e0 < qk_k; e0 += 16) {
            const int h = e0 / 128, j = (e0 % 128) / 32, l0 = e0 % 32;
            const float dl = d * static_cast<float>(scales[e0 / 16]);
            const uint8_t* q = x[b].qs + 32 * h + l0;
            const uint8_t* hm = x[b].hmask + l0;
            const int bit = 4 * h + j;
            float* out = y + b * qk_k + e0;
            for (int l = 0; l < 16; ++l) {
                const int v = ((q[l] >> (2 * j)) & 3) - (((hm[l] >> bit) & 1) != 0 ? 0 : 4);
                out[l] = dl * static_cast<float>(v);
            }
        }
    }
}

void dequantize_q5_k(const block_q5_k* x, float* y, int64_t n_blocks) { dequantize_q45_k<block_q5_k, true>(x, y, n_blocks); }

void dequantize_iq4_xs(const block_iq4_xs* x, float* y, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float d = fp16_to_fp32(x[b].d);
        for (int s = 0; s < qk_k / 32; ++s) {
            const float dl = d * static_cast<float>(iq4_xs_scale(x[b], s) - 32);
            const uint8_t* q = x[b].qs + 16 * s;
            float* out = y + b * qk_k + 32 * s;
            for (int j = 0; j < 16; ++j) {
                out[j] = dl * static_cast<float>(iq4_nl_values[q[j] & 0x0f]);
                out[j + 16] = dl * static_cast<float>(iq4_nl_values[q[j] >> 4]);
            }
        }
    }
}

int64_t n_blocks_of(tensor_type type, int64_t n) {
    const auto t = traits_of(type);
    TACHYON_ASSERT(n >= 0 && n % t.block_size == 0, "row length not a multiple of the block size");
    return n / t.block_size;
}

}  // namespace

size_t row_size(tensor_type type, int64_t n) { return row_bytes(traits_of(type), n); }

bool can_dequantize(tensor_type type) {
    switch (type) {
        case tensor_type::f32: case tensor_type::f16: case tensor_type::bf16:
        case tensor_type::q8_0: case tensor_type::q4_0: case tensor_type::q4_1: case tensor_type::q5_0:
        case tensor_type::q5_1: case tensor_type::iq4_nl: case tensor_type::q2_k: case tensor_type::q3_k:
        case tensor_type::q4_k: case tensor_type::q5_k: case tensor_type::q6_k: case tensor_type::iq4_xs:
            return true;
        default:
            return false;
    }
}

bool can_quantize(tensor_type type) {
    switch (type) {
        case tensor_type::f32: case tensor_type::f16: case tensor_type::bf16:
        case tensor_type::q8_0: case tensor_type::q4_0: case tensor_type::q8_1: case tensor_type::q8_k:
            return true;
        default:
            return false;
    }
}

void dequantize_row(tensor_type type, const void* src, float* dst, int64_t n) {
    const int64_t nb = n_blocks_of(type, n);
    switch (type) {
        case tensor_type::f32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case tensor_type::f16: {
            const auto* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
            return;
        }
        case tensor_type::bf16: {
            const auto* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
            return;
        }
        case tensor_type::q8_0: return dequantize_q8_0(static_cast<const block_q8_0*>(src), dst, nb);
        case tensor_type::q4_0: return dequantize_q4_0(static_cast<const block_q4_0*>(src), dst, nb);
        case tensor_type::q4_k: return dequantize_q4_k(static_cast<const block_q4_k*>(src), dst, nb);
        case tensor_type::q6_k: return dequantize_q6_k(static_cast<const block_q6_k*>(src), dst, nb);
        case tensor_type::q4_1: return dequantize_q4_1(static_cast<const block_q4_1*>(src), dst, nb);
        case tensor_type::q5_0: return dequantize_q5_0(static_cast<const block_q5_0*>(src), dst, nb);
        case tensor_type::q5_1: return dequantize_q5_1(static_cast<const block_q5_1*>(src), dst, nb);
        case tensor_type::iq4_nl: return dequantize_iq4_nl(static_cast<const block_iq4_nl*>(src), dst, nb);
        case tensor_type::q2_k: return dequantize_q2_k(static_cast<const block_q2_k*>(src), dst, nb);
        case tensor_type::q3_k: return dequantize_q3_k(static_cast<const block_q3_k*>(src), dst, nb);
        case tensor_type::q5_k: return dequantize_q5_k(static_cast<const block_q5_k*>(src), dst, nb);
        case tensor_type::iq4_xs: return dequantize_iq4_xs(static_cast<const block_iq4_xs*>(src), dst, nb);
        default:
            TACHYON_ASSERT(false, "dequantize_row: unsupported tensor type");
    }
}

namespace {
// The 32 values of x as int8 against the largest magnitude (round to
// nearest): their scale, and the sum of the quants.
struct q8_block_of {
    float d = 0.0f;
    int sum = 0;
    q8_block_of(const float* x, int8_t* qs) {
        float amax = 0.0f;
        for (int j = 0; j < qk_32; ++j) amax = std::max(amax, std::fabs(x[j]));
        d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < qk_32; ++j) {
            qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
            sum += qs[j];
        }
    }
};
}  // namespace

void quantize_row_q8_0(const float* src, block_q8_0* dst, int64_t n) {
    const int64_t nb = n_blocks_of(tensor_type::q8_0, n);
    for (int64_t b = 0; b < nb; ++b) dst[b].d = fp32_to_fp16(q8_block_of(src + b * qk_32, dst[b].qs).d);
}

void quantize_row_q8_1(const float* src, block_q8_1* dst, int64_t n) {
    const int64_t nb = n_blocks_of(tensor_type::q8_1, n);
    for (int64_t b = 0; b < nb; ++b) {
        const q8_block_of q(src + b * qk_32, dst[b].qs);
        dst[b].d = fp32_to_fp16(q.d);
        dst[b].s = fp32_to_fp16(q.d * static_cast<float>(q.sum));
    }
}

void quantize_row_q4_0(const float* src, block_q4_0* dst, int64_t n) {
    const int64_t nb = n_blocks_of(tensor_type::q4_0, n);
    for (int64_t b = 0; b < nb; ++b) {
        const float* x = src + b * qk_32;
        float amax = 0.0f, max = 0.0f;  // largest magnitude, and its signed value
        for (int j = 0; j < qk_32; ++j) {
            if (std::fabs(x[j]) > amax) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        // Mapping the extreme value to -8 uses the full 16 levels: the
        // opposite side gets at most +7.
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = fp32_to_fp16(d);
        for (int j = 0; j < qk_32 / 2; ++j) {
            const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
            const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
            dst[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

void quantize_row_q8_k(const float* src, block_q8_k* dst, int64_t n) {
    const int64_t nb = n_blocks_of(tensor_type::q8_k, n);
    for (int64_t b = 0; b < nb; ++b) {
        const float* x = src + b * qk_k;
        float amax = 0.0f;
        for (int j = 0; j < qk_k; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = d;
        for (int j = 0; j < qk_k; ++j) dst[b].qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
        for (int g = 0; g < qk_k / 16; ++g) {
            int sum = 0;
            for (int j = 0; j < 16; ++j) sum += dst[b].qs[16 * g + j];
            dst[b].bsums[g] = static_cast<int16_t>(sum);
        }
    }
}

void quantize_row(tensor_type type, const float* src, void* dst, int64_t n) {
    switch (type) {
        case tensor_type::f32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case tensor_type::f16: {
            auto* h = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
            return;
        }
        case tensor_type::bf16: {
            auto* h = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
            return;
        }
        case tensor_type::q8_0: return quantize_row_q8_0(src, static_cast<block_q8_0*>(dst), n);
        case tensor_type::q4_0: return quantize_row_q4_0(src, static_cast<block_q4_0*>(dst), n);
        case tensor_type::q8_1: return quantize_row_q8_1(src, static_cast<block_q8_1*>(dst), n);
        case tensor_type::q8_k: return quantize_row_q8_k(src, static_cast<block_q8_k*>(dst), n);
        default:
            TACHYON_ASSERT(false, "quantize_row: unsupported tensor type");
    }
}

}  // namespace tachyon
