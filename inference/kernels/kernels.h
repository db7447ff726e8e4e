// Dot products and matrix multiplication over every weight type tachyon
// loads, with a portable reference path, an AVX2/FMA/F16C path and an
// AVX-VNNI path (AVX2 plus 256-bit dpbusd for the 32-element block types) chosen at run time
// (the binary itself stays plain x86-64). The avx512 level adds AVX-512
// versions where they pay (attention); elsewhere it runs the AVX-VNNI ones.
// The amx level multiplies q8_0 / q4_0 batches of 32 tokens and more on AMX
// tiles (prompt processing), and runs the AVX-512 kernels otherwise.
//
// Weights are used in place in their GGUF encoding. Activations are f32 for
// f32/f16/bf16 weights and are quantized once per matmul call for the
// quantized types (q8_0 for q8_0, q4_0, q5_0 and iq4_nl weights; q8_1, which
// adds each block's sum, for q4_1 and q5_1; q8_k for q2_k, q3_k, q4_k, q5_k,
// q6_k and iq4_xs), so the inner loops multiply integers and apply the block
// scales once per block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "inference/gguf/tensor_type.h"
#include "base/line_vector.h"

namespace tachyon {

class thread_team;

// Ordered: each set runs the avx2 kernels wherever it has none of its own;
// avx512 needs AVX-512 with VNNI but not AVX-VNNI (Zen 4 and Ice Lake have
// no AVX-VNNI), amx needs avx512.
enum class kernel_isa { scalar, avx2, avx_vnni, avx512, amx };

std::string_view to_string(kernel_isa isa);

// True when the CPU has AVX2, FMA and F16C (and the OS saves ymm state).
bool cpu_has_avx2();
// True when the CPU also has AVX-VNNI (the VEX-encoded 256-bit dpbusd).
bool cpu_has_avx_vnni();
// True when the CPU also has AVX-512 F, BW, DQ, VL and VNNI (and the OS saves zmm state).
bool cpu_has_avx512();
// True when the CPU also has AMX-TILE and AMX-INT8 and the OS grants this
// process the tile state (asked for once, on the first call).
bool cpu_has_amx();
// True when the CPU also has AMX-BF16 and AVX512-BF16 (attention on tiles).
bool cpu_has_amx_bf16();

// The kernels to use given the value of TACHYON_KERNELS (nullptr when unset)
// and the CPU: "scalar" forces the reference kernels, "avx2" the AVX2 ones
// without VNNI, "avx_vnni" no AVX-512 (avx2 where the CPU has no AVX-VNNI),
// "avx512" no AMX; unset, empty or
// "auto" pick the best the CPU has. A set the CPU lacks, or an unknown value,
// falls back to auto.
kernel_isa select_isa(const char* env_value, bool has_avx2, bool has_avx_vnni = false, bool has_avx512 = false,
                      bool has_amx = false);

// select_isa(getenv("TACHYON_KERNELS"), cpu_has_avx2(), cpu_has_avx_vnni(),
// cpu_has_avx512(), cpu_has_amx()), decided once.
kernel_isa default_isa();

// Every kernel set this CPU runs, scalar first (what tests sweep and
// TACHYON_KERNELS may pick).
std::vector<kernel_isa> available_isas();

// True for the weight types matmul and vec_dot handle: f32, f16, bf16,
// q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs.
bool has_kernels(tensor_type weight);

// Format the activations of a dot product with `weight` rows are converted
// to: f32, q8_0, q8_1 or q8_k.
tensor_type activation_type(tensor_type weight);

// Converts n activations to activation_type(weight); dst holds
// row_size(activation_type(weight), n) bytes.
void quantize_activations(kernel_isa isa, tensor_type weight, const float* x, void* dst, int64_t n);

// sum_k w[k] * x[k] over n elements: `w` one row of `weight`, `x` one row
// already in activation_type(weight). n must be a multiple of the block size.
float vec_dot(kernel_isa isa, tensor_type weight, int64_t n, const void* w, const void* x);

// What a matmul runs with: the kernel set, the threads, and a scratch buffer
// for quantized activations that grows to the largest batch seen (the cost of
// an allocation is paid once, not per call). One context per engine thread;
// not thread-safe.
class kernel_context {
public:
    // n_threads <= 1 runs every matmul on the calling thread.
    explicit kernel_context(int n_threads = 1, kernel_isa isa = default_isa());
    ~kernel_context();
    kernel_context(const kernel_context&) = delete;
    kernel_context& operator=(const kernel_context&) = delete;

    kernel_isa isa() const { return isa_; }
    int n_threads() const { return n_threads_; }

    // Runs fn(begin, end) over [0, n) split into contiguous parts of at least
    // `grain`, on this context's threads; serially when n_threads <= 1 or the
    // range is a single grain.
    template <class Fn>
    void parallel_for(int64_t n, int64_t grain, const Fn& fn);

    std::byte* scratch(size_t n_bytes);

private:
    void run_parallel(int64_t n, int64_t grain, void (*body)(const void*, int64_t, int64_t), const void* fn);

    kernel_isa isa_;
    int n_threads_;
    std::unique_ptr<thread_team> team_;  // n_threads, made on first use
    line_vector<std::byte> scratch_;
};

// y[t, r] = sum_k W[r, k] * x[t, k].
//   w: [n_rows, n_cols] of `weight` (GGUF order: ne0 = n_cols)
//   x: [n_tokens, n_cols] f32
//   y: [n_tokens, n_rows] f32
// Activations are converted once per call; several tokens share each loaded
// weight block; rows are split over the context's threads when the product
// is large enough to pay for the fan-out (matmul_threads).
//   panels: the same weights packed by pack_panels (or nullptr); kernel sets
//   that have no use for them ignore them.
void matmul(kernel_context& ctx, tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols,
            const float* x, int64_t n_tokens, float* y, const std::byte* panels = nullptr);

// One matrix of matmul_same_input: its weights (as matmul's) and its output.
struct matmul_operand {
    tensor_type weight = tensor_type::f32;
    const void* w = nullptr;
    int64_t n_rows = 0;
    float* y = nullptr;  // [n_tokens, n_rows]
    const std::byte* panels = nullptr;
};

// The most matrices one matmul_same_input takes.
constexpr size_t max_same_input_matrices = 4;

// matmul of each operand by the same x ([n_tokens, n_cols]), the weights of
// all of them split over the threads as one range, by their cache lines (a
// layer's q, k and v; its gate and up), so the threads hand out and join
// once, not once a matrix,
// and the split pays from the operands' bytes together. Each y is bit for
// bit what matmul gives it; the activations are converted once for the
// operands whose kernels take the same form. A layer's q, k, v and its
// gate, up as two such calls, not five matmuls, decoded faster on two
// threads (`tachyon bench decode -t 2 -p 0 -n 64`, Zen 5, five alternating
// rounds, mean t/s): the 220M llama shape Q4_0 352 -> 374, Q4_K_M 336 ->
// 364; the 40M shape Q4_0 2,384 -> 2,742, F16 692 -> 722.
void matmul_same_input(kernel_context& ctx, std::span<const matmul_operand> ops, int64_t n_cols, const float* x,
                       int64_t n_tokens);

// A matmul splits its rows over the context's threads only when its weight
// bytes times its tokens reach this: below it, handing the parts out and
// joining them (a few microseconds while the worker polls) costs more than
// the second thread saves. Measured with `tachyon bench decode -t 2 -p 0
// -n 64` (Zen 5, 2 cores), tg64 against 1 MiB, the threshold before, in
// alternating rounds: the 220M llama shape (q and o projections of
// 576 KiB, k and v of 288 KiB in q4_0, which read from memory at one core's
// rate while they stayed on one thread) Q4_0 388 -> 457 t/s, Q4_K_M 300 ->
// 384; the 40M shape Q4_0 (1408 x 512 feed-forward, 396 KiB) 2,070 ->
// 2,712 and F16 721 -> 810, where 128 KiB gave 2,395 and 813; the shipped
// 1M model, whose 512 KiB f16 output projection now splits and the rest
// (32 to 88 KiB) does not, 22.5 -> 23.9 Ki t/s.
constexpr size_t min_parallel_matmul_bytes = size_t{256} << 10;

// The threads a matmul of this shape runs on: 1, or all of ctx's.
int matmul_threads(const kernel_context& ctx, tensor_type weight, int64_t n_rows, int64_t n_cols, int64_t n_tokens);

// The kernel threads an engine or a benchmark takes when not told: one per
// hardware thread. Each matmul (matmul_threads) and each layer's attention
// (batch_attention.cpp) splits only when its work pays for the fan-out, so
// a model too small to split, and the short contexts of a small one, still
// run on the calling thread alone: two threads decode the shipped 1M model
// as fast as one at depth 0 and faster from a few hundred positions on.
int default_threads();

// Float weights (f32, f16, bf16) laid out again for the AVX-512 kernels:
// every whole group of 32 rows column by column, [n_rows / 32][n_cols][32]
// in the weight's own element type. A matmul of a few tokens then loads a
// column of 32 rows at once and multiplies broadcast activations into 32
// row sums: no transpose per call and no horizontal sums, which cost short
// rows as much as their multiply-adds. Rows past the last whole group have
// no panel and take the row kernels. The panels are a copy: the weights
// stay in place for the other kernels and for lookups.
struct weight_panels {
    struct release {
        void operator()(std::byte* p) const noexcept;
    };
    // Aligned to 2 MiB and given transparent huge pages where it is that
    // large: a stream of weights then crosses no 4 KiB page boundary, where
    // the hardware prefetchers stop, and misses no TLB entry every 4 KiB
    // (Zen 4, q4_K 8960 x 1536 from 128 MiB, one thread, AVX2, 1 token:
    // 458-518 us on small pages, 317 on huge ones).
    std::unique_ptr<std::byte, release> storage;
    size_t bytes = 0;
    const std::byte* data = nullptr;  // storage, 64-byte aligned; nullptr when nothing was packed
    size_t size_bytes() const { return bytes; }
};
//
// q4_K, q5_K, q6_K and iq4_xs weights are packed from the AVX2 level up:
// every group of 16 rows block by block, the rows in
// the vector lanes; q4_K's nibbles as they are and its 6-bit scales
// unpacked to bytes (2.8 % more than the rows), q5_K's the same with its
// fifth bits beside them (2.3 %), iq4_xs's indices in q4_K's order with
// bytes for its scales (8.8 %), q6_K's low and high bits regrouped so one
// shift lines up each (1 %); the last group padded with zero rows. Decode
// and small batches then read them without horizontal sums or per-row
// unpacking. Every batch size reads them: the packed kernels, and the AMX
// bf16 tiles (batches of 16 tokens and more) and the AVX2 prompt tiles
// (q4_K batches of 32 and more, q6_K 16) from them, so the file's pages of
// those weights may go.
//
// q4_0, q4_1, iq4_nl, q5_0, q5_1 and q8_0 weights are packed from the AVX2
// level to AVX-512 (not at AMX): every group of 16 rows block by block with
// the rows in the lanes, the nibbles as they are (q5_0's and q5_1's fifth
// bits a dword a row beside them), q8_0's bytes offset by 128, the fp16
// scales (and q4_1's and q5_1's mins) after them (the rows' own size); every batch there reads them (below AVX-512,
// batches of 12 tokens and more through the 8-row prompt tiles, which lay
// their rows out from the panels).
//
// True for the quantized types pack_panels lays out (q2_K to q6_K,
// iq4_xs; q4_0, q4_1, iq4_nl, q5_0, q5_1 and q8_0 from AVX2 to AVX-512): their panels
// are about the weights' size and a model packs them all.
bool packs_quantized(tensor_type weight);
// True when this CPU's kernels would use panels of this weight: AVX-512,
// a float type, rows a multiple of 16 long, at least 32 rows; or AVX2 and
// q2_K to q6_K or iq4_xs; or AVX2 to AVX-512 (not AMX) and q4_0,
// iq4_nl, q5_0 or q8_0.
bool panels_pay(tensor_type weight, int64_t n_rows, int64_t n_cols);
// True when, at this CPU's default kernel level, every matmul of this
// weight reads its panels and none the weights in place (the packed types
// from AVX2 up; float weights of whole groups of 32 rows at the AVX-512
// level below AMX): a model packs it whatever its size and may let the
// mapping's pages of it go (they are read back from the file should a
// lower level, a lookup or another reader need them).
bool panels_replace_weights(tensor_type weight, int64_t n_rows, int64_t n_cols);
// The panels of w (empty unless panels_pay).
weight_panels pack_panels(tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols);
// What pack_panels does in two steps, for a model that packs all its
// matrices into one allocation (whole huge pages, none half used): the
// bytes of w's panels (0 unless panels_pay), and the packing into dst
// (64-byte aligned, that many bytes).
size_t panels_bytes(tensor_type weight, int64_t n_rows, int64_t n_cols);
void pack_panels_into(tensor_type weight, const void* w, int64_t n_rows, int64_t n_cols, std::byte* dst);
// Storage for panels (weight_panels::data), 64-byte aligned, in transparent
// huge pages where the system gives them.
weight_panels allocate_weight_panels(size_t bytes);

template <class Fn>
void kernel_context::parallel_for(int64_t n, int64_t grain, const Fn& fn) {
    if (n_threads_ <= 1 || n <= grain) {
        fn(int64_t{0}, n);
        return;
    }
    run_parallel(n, grain, [](const void* f, int64_t b, int64_t e) { (*static_cast<const Fn*>(f))(b, e); }, &fn);
}

}  // namespace tachyon
