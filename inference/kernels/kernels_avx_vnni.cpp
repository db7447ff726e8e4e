// The q8_0 / q4_0 kernels again, with AVX-VNNI (dpbusd on 256-bit vectors):
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
    static const type_kernels q4_0{gemm<q8_tile<unpack_q4_0>>, dot<q8_tile<unpack_q4_0>>,
                                   avx2_kernels(tensor_type::q4_0)->quantize};
    switch (weight) {
        case tensor_type::q8_0: return &q8_0;
        case tensor_type::q4_0: return &q4_0;
        default: return avx2_kernels(weight);
    }
}

}  // namespace tachyon::detail
