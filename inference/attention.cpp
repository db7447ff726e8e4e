#include "inference/attention.h"

#include <algorithm>
#include <cmath>

#include "inference/ops.h"

namespace tachyon {
namespace {

template <int HD>
void attend_fixed(const attention_args& a, int head_dim, kernel_isa isa) {
    const int hd = HD > 0 ? HD : head_dim;
    // Scores: q · k for every position, block by block (no division per position).
    int j = 0;
    for (int b = 0; j < a.n_pos; ++b) {
        const float* kb = a.k[b];
        const int n = std::min(a.block_size, a.n_pos - j);
        for (int i = 0; i < n; ++i, ++j) {
            const float* k = kb + static_cast<int64_t>(i) * a.stride;
            float s = 0.0f;
            for (int d = 0; d < hd; ++d) s += a.q[d] * k[d];
            a.scores[j] = s * a.scale;
        }
    }
    softmax(a.scores, a.n_pos, isa);
    // out = Σ p_j v_j, accumulated in a local array the compiler keeps in registers.
    float acc[HD > 0 ? HD : 256] = {};
    j = 0;
    for (int b = 0; j < a.n_pos; ++b) {
        const float* vb = a.v[b];
        const int n = std::min(a.block_size, a.n_pos - j);
        for (int i = 0; i < n; ++i, ++j) {
            const float* v = vb + static_cast<int64_t>(i) * a.stride;
            const float p = a.scores[j];
            for (int d = 0; d < hd; ++d) acc[d] += p * v[d];
        }
    }
    for (int d = 0; d < hd; ++d) a.out[d] = acc[d];
}

}  // namespace

void attend(const attention_args& a, int head_dim, kernel_isa isa) {
    switch (head_dim) {
        case 8: return attend_fixed<8>(a, head_dim, isa);
        case 16: return attend_fixed<16>(a, head_dim, isa);
        case 32: return attend_fixed<32>(a, head_dim, isa);
        case 64: return attend_fixed<64>(a, head_dim, isa);
        case 128: return attend_fixed<128>(a, head_dim, isa);
        default: return attend_fixed<0>(a, head_dim, isa);
    }
}

}  // namespace tachyon
