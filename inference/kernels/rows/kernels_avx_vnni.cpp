// The q8_0-style kernels (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl) again, with
// AVX-VNNI (dpbusd on 256-bit vectors):
// one instruction for what takes maddubs + madd under AVX2. Batches of 3
// tokens and more take the 8-row tiles of kernels_prompt.cpp. Every function
// carries its own target attribute so the file builds for plain x86-64;
// kernels.cpp only calls in here after checking the CPU (default_isa).
#define TACHYON_TILE_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define TACHYON_TILE_VNNI 1
#include "inference/kernels/rows/kernels_q8_tile.h"

namespace tachyon::detail {
namespace {

// Batches of 3 tokens and more take the rows-in-lanes tiles of
// kernels_prompt.cpp, which beat these tiles (q4_0 measured on Zen 5, one
// thread, 2816 x 1024 weights from DRAM, `tachyon bench matmul --type q4_0
// --mib 64`, us per matmul: 4 tokens 108 against 210, 8 178 / 418, 32 625 /
// 1880, 128 2500 / 7150; 2 tokens even). The other types on a Xeon
// (Sapphire Rapids, `TACHYON_KERNELS=avx_vnni tachyon bench matmul --type T
// --tokens 4,8,32,128 -t 1 --mib 64 --no-bandwidth`, us against these
// tiles): iq4_nl 213 / 428, 343 / 837, 957 / 3598, 3495 / 14055; q8_0 239-271
// / 425-486, 401-453 / 849, 1104 / 3577, 3678 / 12586; q5_0 314 / 534, 453
// / 1067, 1150 / 4424, 3454 / 16697; q4_1 291 / 463, 440 / 935, 1201 /
// 3667, 4006 / 13672; q5_1 379 / 574, 494 / 1094, 1249 / 4642, 4230 /
// 17986. IQ4_NL 220M model, pp512 129 -> 359 tokens/s. 3 tokens: q4_0
// 169-177 / 329-334, iq4_nl 243 / 365, q5_0 345 / 438, q4_1 259 / 392, q8_0
// 209 / 298; 2 tokens even (iq4_nl 237 / 248, q4_1 241 / 262).
constexpr int64_t min_tokens_prompt = 3;

template <class U, tensor_type T>
TACHYON_TILE_TARGET void gemm_by_tokens(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens >= min_tokens_prompt) return prompt_gemm_avx_vnni(T)(a, r0, r1);
    gemm_vnni_decode<U>(a, r0, r1);
}

}  // namespace

const type_kernels* avx_vnni_kernels(tensor_type weight) {
    // Activations are quantized as under AVX2 (same q8_0 format).
    static const type_kernels q8_0{gemm_by_tokens<unpack_q8_0, tensor_type::q8_0>, dot<q8_tile<unpack_q8_0>>,
                                   avx2_kernels(tensor_type::q8_0)->quantize};
    static const type_kernels q4_0{gemm_by_tokens<unpack_q4_0, tensor_type::q4_0>, dot<q8_tile<unpack_q4_0>>,
                                   avx2_kernels(tensor_type::q4_0)->quantize};
    static const type_kernels q4_1{gemm_by_tokens<unpack_q4_1, tensor_type::q4_1>, dot<q8_tile<unpack_q4_1>>,
                                   avx2_kernels(tensor_type::q4_1)->quantize};
    static const type_kernels q5_0{gemm_by_tokens<unpack_q5_0, tensor_type::q5_0>, dot<q8_tile<unpack_q5_0>>,
                                   avx2_kernels(tensor_type::q5_0)->quantize};
    static const type_kernels q5_1{gemm_by_tokens<unpack_q5_1, tensor_type::q5_1>, dot<q8_tile<unpack_q5_1>>,
                                   avx2_kernels(tensor_type::q5_1)->quantize};
    static const type_kernels iq4_nl{gemm_by_tokens<unpack_iq4_nl, tensor_type::iq4_nl>, dot<q8_tile<unpack_iq4_nl>>,
                                     avx2_kernels(tensor_type::iq4_nl)->quantize};
    switch (weight) {
        case tensor_type::q8_0: return &q8_0;
        case tensor_type::q4_0: return &q4_0;
        case tensor_type::q4_1: return &q4_1;
        case tensor_type::q5_0: return &q5_0;
        case tensor_type::q5_1: return &q5_1;
        case tensor_type::iq4_nl: return &iq4_nl;
        default: return avx2_kernels(weight);
    }
}

}  // namespace tachyon::detail
