// The q8_0 / q4_0 matmul on AMX tiles (AMX-INT8): a tile multiply of 16
// tokens x 32 bytes by 32 bytes x 16 weight rows gives one block's 256
// integer dot products in one instruction, where AVX-512 spends 64 dpbusd.
// Each block has its own scales, so the int32 results are written out once
// per block and scaled into 16 float accumulators with AVX-512 (convert,
// scale product, FMA per 16 sums) - the part that bounds the speed here.
//
// The activations (q8_0 blocks, 16 token rows) load into a tile as they are,
// with the row stride as the tile stride. The weights must be in the tile's
// "VNNI" order (row k/4 holds bytes 4(k/4)..4(k/4)+3 of each of the 16 weight
// rows): each group of 16 rows is repacked once per call into a small buffer
// (q4_0 nibbles unpacked to signed bytes on the way) and serves every token
// tile. The GGUF mapping itself is never written or copied whole.
//
// A last token tile of fewer than 16 runs padded with zero rows; rows that do
// not fill a group of 16, and batches too small to pay for the repacking,
// run the AVX-512 kernels.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cpuid.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "inference/fp16.h"
#include "inference/kernels_internal.h"
#include "inference/quant.h"

#define TACHYON_AMX \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma,f16c,amx-tile,amx-int8")))

namespace tachyon::detail {
namespace {

constexpr int tile = 16;  // tokens per A tile, weight rows per B tile
// Below this many tokens the AVX-512 tiles win: every call repacks the
// weights it touches, about one pass over them (measured on a 40M model,
// prompts of n tokens, AMX vs AVX-512: q8_0 n=4 0.8x, n=5 1.06x, n=8 1.3x,
// n=32 3.1x; q4_0 n=5 1.4x).
constexpr int64_t min_tokens = 5;

// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) tile_config {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

// GCC's tileloadd does not tell the compiler it reads memory: what a tile
// loads must be stored before this.
inline void memory_barrier(const void* p) { __asm__ volatile("" : : "r"(p) : "memory"); }

// tmm0, tmm1: int32 results (16 tokens x 16 rows) of blocks b and b + 1;
// tmm2, tmm3: activations (16 tokens x 32 bytes); tmm4, tmm5: weights
// (8 rows of 4 bytes x 16 weight rows).
TACHYON_AMX void configure_tiles() {
    tile_config c;
    for (int i : {0, 1}) c.rows[i] = tile, c.colsb[i] = tile * 4;
    for (int i : {2, 3}) c.rows[i] = tile, c.colsb[i] = qk_32;
    for (int i : {4, 5}) c.rows[i] = qk_32 / 4, c.colsb[i] = tile * 4;
    memory_barrier(&c);  // _tile_loadconfig declares a read of 8 bytes only
    _tile_loadconfig(&c);
}

// One group of 16 weight rows in tile order: per block, 8 x 64 bytes of
// quants and the 16 rows' scales as floats.
struct packed_rows {
    std::vector<int8_t> quants;  // [n_blocks][8][16 rows][4]
    std::vector<float> scales;   // [n_blocks][16 rows]
};

// The 16 rows' fp16 scales of block b (each at the start of its block).
TACHYON_AMX inline __m512 row_scales(const std::byte* first, __m512i row_offsets) {
    const __m512i d = _mm512_i32gather_epi32(row_offsets, first, 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
}

TACHYON_AMX void pack_q8_0(const gemm_args& a, int64_t r, int64_t n_blocks, packed_rows& p) {
    const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32(static_cast<int>(a.w_row_bytes)));
    const std::byte* w = a.w + r * a.w_row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
        const std::byte* block = w + b * sizeof(block_q8_0);
        _mm512_storeu_ps(p.scales.data() + b * tile, row_scales(block, rows));
        int8_t* out = p.quants.data() + b * (qk_32 * tile);
        for (int k4 = 0; k4 < qk_32 / 4; ++k4) {
            const __m512i q = _mm512_i32gather_epi32(rows, block + offsetof(block_q8_0, qs) + 4 * k4, 1);
            _mm512_storeu_si512(out + k4 * 64, q);
        }
    }
    memory_barrier(p.quants.data());
}

TACHYON_AMX void pack_q4_0(const gemm_args& a, int64_t r, int64_t n_blocks, packed_rows& p) {
    const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32(static_cast<int>(a.w_row_bytes)));
    const __m512i low = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
    const std::byte* w = a.w + r * a.w_row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
        const std::byte* block = w + b * sizeof(block_q4_0);
        _mm512_storeu_ps(p.scales.data() + b * tile, row_scales(block, rows));
        int8_t* out = p.quants.data() + b * (qk_32 * tile);
        // Element j < 16 is the low nibble of byte j, element j + 16 its high nibble.
        for (int k4 = 0; k4 < qk_32 / 8; ++k4) {
            const __m512i q = _mm512_i32gather_epi32(rows, block + offsetof(block_q4_0, qs) + 4 * k4, 1);
            _mm512_storeu_si512(out + k4 * 64, _mm512_sub_epi8(_mm512_and_si512(q, low), eight));
            _mm512_storeu_si512(out + (k4 + 4) * 64, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(q, 4), low), eight));
        }
    }
    memory_barrier(p.quants.data());
}

// Adds block b's int32 results (c: 16 tokens x 16 rows) times the scale
// products into acc (token i's 16 rows in acc[i]).
TACHYON_AMX inline void scale_into(__m512 (&acc)[tile], const int32_t* c, const float* dx, __m512 dw) {
#pragma GCC unroll 16
    for (int i = 0; i < tile; ++i) {
        const __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512(c + i * tile));
        acc[i] = _mm512_fmadd_ps(s, _mm512_mul_ps(dw, _mm512_set1_ps(dx[i])), acc[i]);
    }
}

// Tokens t.. t + 15 against the 16 packed rows r.. r + 15. dx holds the
// tokens' activation scales as [n_blocks][16].
TACHYON_AMX void tile_tokens(const gemm_args& a, const packed_rows& p, const float* dx, int64_t n_blocks, int64_t r,
                             int64_t t) {
    alignas(64) int32_t c[2][tile * tile];
    __m512 acc[tile];
#pragma GCC unroll 16
    for (int i = 0; i < tile; ++i) acc[i] = _mm512_setzero_ps();
    const std::byte* x = a.x + t * a.x_row_bytes + offsetof(block_q8_0, qs);
    const auto stride = static_cast<long>(a.x_row_bytes);
    const int8_t* wq = p.quants.data();
    int64_t b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_loadd(2, x + b * sizeof(block_q8_0), stride);
        _tile_loadd(4, wq + b * (qk_32 * tile), 64);
        _tile_loadd(3, x + (b + 1) * sizeof(block_q8_0), stride);
        _tile_loadd(5, wq + (b + 1) * (qk_32 * tile), 64);
        _tile_dpbssd(0, 2, 4);
        _tile_dpbssd(1, 3, 5);
        _tile_stored(0, c[0], 64);
        _tile_stored(1, c[1], 64);
        scale_into(acc, c[0], dx + b * tile, _mm512_loadu_ps(p.scales.data() + b * tile));
        scale_into(acc, c[1], dx + (b + 1) * tile, _mm512_loadu_ps(p.scales.data() + (b + 1) * tile));
    }
    if (b < n_blocks) {
        _tile_zero(0);
        _tile_loadd(2, x + b * sizeof(block_q8_0), stride);
        _tile_loadd(4, wq + b * (qk_32 * tile), 64);
        _tile_dpbssd(0, 2, 4);
        _tile_stored(0, c[0], 64);
        scale_into(acc, c[0], dx + b * tile, _mm512_loadu_ps(p.scales.data() + b * tile));
    }
#pragma GCC unroll 16
    for (int i = 0; i < tile; ++i) _mm512_storeu_ps(a.y + (t + i) * a.ldy + r, acc[i]);
}

// The activation scales of tokens t.. t + 15 as floats, [block][16] (zero
// past the last token).
void token_scales(const gemm_args& a, int64_t t, int64_t n_blocks, float* dx) {
    std::fill(dx, dx + n_blocks * tile, 0.0f);
    for (int64_t i = 0; i < tile && t + i < a.n_tokens; ++i) {
        const auto* xb = reinterpret_cast<const block_q8_0*>(a.x + (t + i) * a.x_row_bytes);
        for (int64_t b = 0; b < n_blocks; ++b) dx[b * tile + i] = fp16_to_fp32(xb[b].d);
    }
}

template <tensor_type T>
TACHYON_AMX void gemm_amx(const gemm_args& a, int64_t r0, int64_t r1) {
    if (a.n_tokens < min_tokens) return avx512_kernels(T)->gemm(a, r0, r1);
    const int64_t n_blocks = a.n_cols / qk_32;
    const int64_t n_tiles = (a.n_tokens + tile - 1) / tile;
    const int64_t r_full = r0 + (r1 - r0) / tile * tile;

    // A last, partial token tile is copied into 16 rows padded with zeros
    // (a tile load reads 16 rows) and runs like the others.
    thread_local std::vector<std::byte> padded;
    gemm_args last = a;
    const int64_t t_last = (n_tiles - 1) * tile, n_last = a.n_tokens - t_last;
    if (n_last < tile) {
        padded.assign(static_cast<size_t>(tile) * a.x_row_bytes, std::byte{0});
        std::copy_n(a.x + t_last * a.x_row_bytes, n_last * a.x_row_bytes, padded.data());
        memory_barrier(padded.data());
        last.x = padded.data();
        last.n_tokens = n_last;
    }
    alignas(64) float y_last[tile * tile];
    last.y = y_last;
    last.ldy = tile;

    thread_local std::vector<float> dx;  // [token tile][block][16]
    dx.resize(static_cast<size_t>(n_tiles * n_blocks * tile));
    for (int64_t i = 0; i + 1 < n_tiles; ++i) token_scales(a, i * tile, n_blocks, dx.data() + i * n_blocks * tile);
    float* dx_last = dx.data() + (n_tiles - 1) * n_blocks * tile;
    token_scales(last, last.x == a.x ? t_last : 0, n_blocks, dx_last);

    thread_local packed_rows p;
    p.quants.resize(static_cast<size_t>(n_blocks * qk_32 * tile));
    p.scales.resize(static_cast<size_t>(n_blocks * tile));
    configure_tiles();
    for (int64_t r = r0; r < r_full; r += tile) {
        if constexpr (T == tensor_type::q8_0) pack_q8_0(a, r, n_blocks, p);
        else pack_q4_0(a, r, n_blocks, p);
        for (int64_t i = 0; i + 1 < n_tiles; ++i) tile_tokens(a, p, dx.data() + i * n_blocks * tile, n_blocks, r, i * tile);
        if (n_last == tile) {
            tile_tokens(a, p, dx_last, n_blocks, r, t_last);
        } else {
            tile_tokens(last, p, dx_last, n_blocks, 0, 0);
            for (int64_t i = 0; i < n_last; ++i) std::copy_n(y_last + i * tile, tile, a.y + (t_last + i) * a.ldy + r);
        }
    }
    _tile_release();
    // The last rows (fewer than 16), every token.
    if (r_full < r1) avx512_kernels(T)->gemm(a, r_full, r1);
}

}  // namespace

bool os_grants_amx() {
    // Linux gives a process the AMX tile data state only on request
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without it the first
    // tile instruction faults.
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
}

const type_kernels* amx_kernels(tensor_type weight) {
    static const type_kernels q8_0{gemm_amx<tensor_type::q8_0>, avx512_kernels(tensor_type::q8_0)->dot,
                                   avx512_kernels(tensor_type::q8_0)->quantize};
    static const type_kernels q4_0{gemm_amx<tensor_type::q4_0>, avx512_kernels(tensor_type::q4_0)->dot,
                                   avx512_kernels(tensor_type::q4_0)->quantize};
    switch (weight) {
        case tensor_type::q8_0: return &q8_0;
        case tensor_type::q4_0: return &q4_0;
        default: return avx512_kernels(weight);
    }
}

}  // namespace tachyon::detail
