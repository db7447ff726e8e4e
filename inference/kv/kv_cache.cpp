#include "inference/kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "inference/gguf/fp16.h"

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace tachyon {
namespace {

constexpr float fp16_max = 65504.0f;

// x as fp16, saturated to +-65504 (a NaN stays a NaN).
inline uint16_t to_fp16_saturated(float x) {
    return fp32_to_fp16(x > fp16_max ? fp16_max : x < -fp16_max ? -fp16_max : x);
}

// n values of `src` as fp16 at dst[0], dst[step], dst[2 step], ...
void store_fp16(uint16_t* dst, size_t step, const float* src, int n) {
    int i = 0;
#if defined(__F16C__) && defined(__AVX__)
    const __m256 hi = _mm256_set1_ps(fp16_max), lo = _mm256_set1_ps(-fp16_max);
    for (; i + 8 <= n; i += 8) {
        // min/max return their second operand for a NaN: the NaN goes on.
        const __m256 x = _mm256_max_ps(lo, _mm256_min_ps(hi, _mm256_loadu_ps(src + i)));
        const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if (step == 1) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
        } else {
            alignas(16) uint16_t t[8];
            _mm_store_si128(reinterpret_cast<__m128i*>(t), h);
            for (int j = 0; j < 8; ++j) dst[static_cast<size_t>(i + j) * step] = t[j];
        }
    }
#endif
    for (; i < n; ++i) dst[static_cast<size_t>(i) * step] = to_fp16_saturated(src[i]);
}

}  // namespace

kv_cache::kv_cache(const kv_cache_config& config) : config_(config) {
    TACHYON_ASSERT(config.n_layer > 0 && config.n_kv_embd > 0 && config.block_size > 0 && config.n_blocks > 0,
                   "kv_cache: every dimension must be positive");
    size_t n = static_cast<size_t>(config.n_layer) * config.n_blocks * config.block_size * config.n_kv_embd;
    if (config.f16) {
        k16_.assign(n, 0);
        v16_.assign(n, 0);
    } else {
        k_.assign(n, 0.0f);
        v_.assign(n, 0.0f);
    }
    refs_.assign(static_cast<size_t>(config.n_blocks), 0);
    gen_.assign(static_cast<size_t>(config.n_layer) * config.n_blocks, 0);
    free_.reserve(static_cast<size_t>(config.n_blocks));
    // Lowest ids on top of the stack: blocks are handed out in order.
    for (int b = config.n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

kv_cache::sequence& kv_cache::get(seq_id seq) {
    auto it = seqs_.find(seq);
    TACHYON_ASSERT(it != seqs_.end(), "kv_cache: unknown sequence " + std::to_string(seq));
    return it->second;
}

const kv_cache::sequence& kv_cache::get(seq_id seq) const {
    auto it = seqs_.find(seq);
    TACHYON_ASSERT(it != seqs_.end(), "kv_cache: unknown sequence " + std::to_string(seq));
    return it->second;
}

seq_id kv_cache::create() {
    seq_id id = next_id_++;
    seqs_.emplace(id, sequence{});
    return id;
}

seq_id kv_cache::create_shared(std::span<const int> blocks) {
    sequence s;
    s.blocks.assign(blocks.begin(), blocks.end());
    s.n_tokens = static_cast<int>(blocks.size()) * config_.block_size;
    for (int b : s.blocks) retain_block(b);
    seq_id id = next_id_++;
    seqs_.emplace(id, std::move(s));
    return id;
}

result<seq_id> kv_cache::fork(seq_id src) {
    if (!contains(src)) return make_error(errc::not_found, "kv_cache: fork of unknown sequence " + std::to_string(src));
    sequence copy = get(src);
    for (int b : copy.blocks) retain_block(b);
    seq_id id = next_id_++;
    seqs_.emplace(id, std::move(copy));
    return id;
}

int kv_cache::take_block() {
    TACHYON_ASSERT(!free_.empty(), "kv_cache: take_block with no free block");
    int b = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(b)] = 1;
    return b;
}

void kv_cache::copy_block(int dst, int src, int n_positions) {
    // K is dimension-major: its filled positions are spread over the block, so all of it is copied.
    const size_t n_k = static_cast<size_t>(config_.block_size) * config_.n_kv_embd;
    const size_t n_v = static_cast<size_t>(n_positions) * config_.n_kv_embd;
    for (int l = 0; l < config_.n_layer; ++l) {
        if (config_.f16) {
            std::memcpy(k16_.data() + block_offset(l, dst), k16_.data() + block_offset(l, src), n_k * sizeof(uint16_t));
            std::memcpy(v16_.data() + block_offset(l, dst), v16_.data() + block_offset(l, src), n_v * sizeof(uint16_t));
        } else {
            std::memcpy(k_.data() + block_offset(l, dst), k_.data() + block_offset(l, src), n_k * sizeof(float));
            std::memcpy(v_.data() + block_offset(l, dst), v_.data() + block_offset(l, src), n_v * sizeof(float));
        }
        ++gen_[static_cast<size_t>(l) * config_.n_blocks + dst];
    }
}

status kv_cache::reserve(seq_id seq, int n_new) {
    TACHYON_ASSERT(n_new >= 0, "kv_cache::reserve: negative count");
    sequence& s = get(seq);
    const int bs = config_.block_size;
    int n_have = static_cast<int>(s.blocks.size());
    int n_need = (s.n_tokens + n_new + bs - 1) / bs;
    // The tail block gets written when it is partially filled and shared.
    bool tail_cow = n_new > 0 && s.n_tokens % bs != 0 && ref_count(s.blocks[static_cast<size_t>(s.n_tokens / bs)]) > 1;
    // Blocks past the filled part that are shared (after a fork of a reserved sequence) are replaced too.
    int n_extra = std::max(0, n_need - n_have) + (tail_cow ? 1 : 0);
    for (int i = (s.n_tokens + bs - 1) / bs; i < std::min(n_have, n_need); ++i)
        if (ref_count(s.blocks[static_cast<size_t>(i)]) > 1) ++n_extra;
    if (n_extra > n_free_blocks()) {
        return make_error(errc::resource_exhausted,
                          "kv_cache: " + std::to_string(n_extra) + " blocks needed for " + std::to_string(n_new) +
                              " positions, " + std::to_string(n_free_blocks()) + " free");
    }
    if (tail_cow) {
        size_t i = static_cast<size_t>(s.n_tokens / bs);
        int fresh = take_block();
        copy_block(fresh, s.blocks[i], s.n_tokens % bs);
        release_block(s.blocks[i]);
        s.blocks[i] = fresh;
    }
    for (int i = (s.n_tokens + bs - 1) / bs; i < std::min(n_have, n_need); ++i) {
        int& b = s.blocks[static_cast<size_t>(i)];
        if (ref_count(b) > 1) {
            release_block(b);
            b = take_block();
        }
    }
    while (static_cast<int>(s.blocks.size()) < n_need) s.blocks.push_back(take_block());
    return {};
}

void kv_cache::commit(seq_id seq, int n_new) {
    sequence& s = get(seq);
    TACHYON_ASSERT(n_new >= 0 && s.n_tokens + n_new <= static_cast<int>(s.blocks.size()) * config_.block_size,
                   "kv_cache::commit past the reserved capacity");
    s.n_tokens += n_new;
}

void kv_cache::truncate(seq_id seq, int n) {
    sequence& s = get(seq);
    TACHYON_ASSERT(n >= 0, "kv_cache::truncate to a negative length");
    if (n >= s.n_tokens) return;
    s.n_tokens = n;
    size_t keep = static_cast<size_t>((n + config_.block_size - 1) / config_.block_size);
    while (s.blocks.size() > keep) {
        release_block(s.blocks.back());
        s.blocks.pop_back();
    }
}

void kv_cache::drop(seq_id seq) {
    sequence& s = get(seq);
    for (int b : s.blocks) release_block(b);
    seqs_.erase(seq);
}

int kv_cache::n_tokens(seq_id seq) const { return get(seq).n_tokens; }

std::span<const int> kv_cache::block_table(seq_id seq) const { return get(seq).blocks; }

int kv_cache::block_of(int layer, seq_id seq, int pos, const char* what) const {
    const sequence& s = get(seq);
    const size_t i = static_cast<size_t>(pos / config_.block_size);
    TACHYON_ASSERT(layer >= 0 && layer < config_.n_layer && pos >= 0 && i < s.blocks.size(),
                   std::string("kv_cache::") + what + " past the reserved capacity");
    return s.blocks[i];
}

void kv_cache::write_k(int layer, seq_id seq, int pos, const float* k) {
    const int b = block_of(layer, seq, pos, "write_k");
    ++gen_[static_cast<size_t>(layer) * config_.n_blocks + b];
    const size_t bs = static_cast<size_t>(config_.block_size);
    const size_t at = block_offset(layer, b) + static_cast<size_t>(pos) % bs;
    if (config_.f16) return store_fp16(k16_.data() + at, bs, k, config_.n_kv_embd);
    for (int d = 0; d < config_.n_kv_embd; ++d) k_[at + static_cast<size_t>(d) * bs] = k[d];
}

void kv_cache::write_v(int layer, seq_id seq, int pos, const float* v) {
    const int b = block_of(layer, seq, pos, "write_v");
    const size_t at = block_offset(layer, b) + static_cast<size_t>(pos % config_.block_size) * config_.n_kv_embd;
    if (config_.f16) return store_fp16(v16_.data() + at, 1, v, config_.n_kv_embd);
    std::memcpy(v_.data() + at, v, static_cast<size_t>(config_.n_kv_embd) * sizeof(float));
}

float kv_cache::k_at(int layer, seq_id seq, int pos, int i) const {
    TACHYON_ASSERT(i >= 0 && i < config_.n_kv_embd, "kv_cache::k_at out of range");
    const size_t at = block_offset(layer, block_of(layer, seq, pos, "k_at")) + static_cast<size_t>(i) * config_.block_size +
                      static_cast<size_t>(pos % config_.block_size);
    return config_.f16 ? fp16_to_fp32(k16_[at]) : k_[at];
}

float kv_cache::v_at(int layer, seq_id seq, int pos, int i) const {
    TACHYON_ASSERT(i >= 0 && i < config_.n_kv_embd, "kv_cache::v_at out of range");
    const size_t at = block_offset(layer, block_of(layer, seq, pos, "v_at")) + static_cast<size_t>(pos % config_.block_size) * config_.n_kv_embd +
                      static_cast<size_t>(i);
    return config_.f16 ? fp16_to_fp32(v16_[at]) : v_[at];
}

void kv_cache::retain_block(int block) {
    TACHYON_ASSERT(block >= 0 && block < config_.n_blocks && refs_[static_cast<size_t>(block)] > 0,
                   "kv_cache::retain_block of a free block");
    ++refs_[static_cast<size_t>(block)];
}

void kv_cache::release_block(int block) {
    TACHYON_ASSERT(block >= 0 && block < config_.n_blocks && refs_[static_cast<size_t>(block)] > 0,
                   "kv_cache::release_block of a free block");
    if (--refs_[static_cast<size_t>(block)] == 0) free_.push_back(block);
}

}  // namespace tachyon
