// The q8_0-style kernels (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl) again, with
// AVX-VNNI (dpbusd on 256-bit vectors):
// one instruction for what takes maddubs + madd under AVX2. Every function
// carries its own target attribute so the file builds for plain x86-64;
// kernels.cpp only calls in here after checking the CPU (default_isa).
#define TACHYON_TILE_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define TACHYON_TILE_VNNI 1
#include "inference/kernels/kernels_q8_tile.h"

namespace tachyon::detail {

const type_kernels* avx_vnni_kernels(tensor_type weight) {
    // Activations are quantized as under AVX2 (same q8_0 format).
    static const type_kernels q8_0{gemm<q8_tile<unpack_q8_0>>, dot<q8_tile<unpack_q8_0>>,
                                   avx2_kernels(tensor_type::q8_0)->quantize};
    static const type_kernels q4_0{gemm_nibbles<unpack_q4_0>, dot<q8_tile<unpack_q4_0>>,
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
