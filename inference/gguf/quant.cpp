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

void dequantize_q4_k(const block_q4_k* x, float* y, int64_t n_blocks) {
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
                out[64 * c + l] = d0 * static_cast<float>(q[32 * c + l] & 0x0f) - min0;
                out[64 * c + 32 + l] = d1 * static_cast<float>(q[32 * c + l] >> 4) - min1;
            }
        }
    }
}

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
        case tensor_type::q8_0: case tensor_type::q4_0: case tensor_type::q4_k: case tensor_type::q6_k:
            return true;
        default:
            return false;
    }
}

bool can_quantize(tensor_type type) {
    switch (type) {
        case tensor_type::f32: case tensor_type::f16: case tensor_type::bf16:
        case tensor_type::q8_0: case tensor_type::q4_0: case tensor_type::q8_k:
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
        default:
            TACHYON_ASSERT(false, "dequantize_row: unsupported tensor type");
    }
}

void quantize_row_q8_0(const float* src, block_q8_0* dst, int64_t n) {
    const int64_t nb = n_blocks_of(tensor_type::q8_0, n);
    for (int64_t b = 0; b < nb; ++b) {
        const float* x = src + b * qk_32;
        float amax = 0.0f;
        for (int j = 0; j < qk_32; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = fp32_to_fp16(d);
        for (int j = 0; j < qk_32; ++j) dst[b].qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
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
        case tensor_type::q8_k: return quantize_row_q8_k(src, static_cast<block_q8_k*>(dst), n);
        default:
            TACHYON_ASSERT(false, "quantize_row: unsupported tensor type");
    }
}

}  // namespace tachyon
