// The q8_0-style kernels (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl) again, with
// AVX-VNNI (dpbusd on 256-bit vectors):
// one instruction for what takes maddubs + madd under AVX2. Every function
// carries its own target attribute so the file builds for plain x86-64;
// kernels.cpp only calls in here after checking the CPU (default_isa).
#define TACHYON_TILE_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define TACHYON_TILE_VNNI 1
#include "inference/kernels/kernels_q8_tile.h"

namespace tachyon::detail {
namespace {

// q4_0 batches of 4 tokens and more take gemm_q4_0_prompt_avx_vnni, whose
// rows in the lanes beat these tiles (measured on Zen 5, one thread, 2816 x
// 1024 weights from DRAM, `tachyon bench matmul --type q4_0 --mib 64`, us
// per matmul: 4 tokens 108 against 210, 8 178 / 418, 32 625 / 1880, 128
// 2500 / 7150; 2 tokens even).
// Out of line: inlined into gemm_q4_0, one-token decode (the AVX-512 level
// on AMD takes it too) measured 2-4 % slower.
__attribute__((noinline)) TACHYON_TILE_TARGET void decode_q4_0(const gemm_args& a, int64_t r0, int64_t r1) {
    gemm_nibbles<unpack_q4_0>(a, r0, r1);
}

TACHYON_TILE_TARGET void gemm_q4_0(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens >= 4) return gemm_q4_0_prompt_avx_vnni(a, r0, r1);
    decode_q4_0(a, r0, r1);
}

}  // namespace

const type_kernels* avx_vnni_kernels(tensor_type weight) {
    // Activations are quantized as under AVX2 (same q8_0 format).
    static const type_kernels q8_0{gemm<q8_tile<unpack_q8_0>>, dot<q8_tile<unpack_q8_0>>,
                                   avx2_kernels(tensor_type::q8_0)->quantize};
    static const type_kernels q4_0{gemm_q4_0, dot<q8_tile<unpack_q4_0>>,
                                   avx2_kernels(tensor_type::q4_0)->quantize};
    static const type_kernels q4_1{gemm_nibbles<unpack_q4_1>, dot<q8_tile<unpack_q4_1>>,
                                   avx2_kernels(tensor_type::q4_1)->quantize};
    static const type_kernels q5_0{gemm_nibbles<unpack_q5_0>, dot<q8_tile<unpack_q5_0>>,
                                   avx2_kernels(tensor_type::q5_0)->quantize};
    static const type_kernels q5_1{gemm_nibbles<unpack_q5_1>, dot<q8_tile<unpack_q5_1>>,
                                   avx2_kernels(tensor_type::q5_1)->quantize};
    static const type_kernels iq4_nl{gemm<q8_tile<unpack_iq4_nl>>, dot<q8_tile<unpack_iq4_nl>>,
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
