#include "inference/tokenizer/vocab.h"

#include <array>

#include "inference/gguf/gguf.h"
#include "inference/tokenizer/unicode.h"

namespace tachyon {
namespace {

// Keys of the GGUF tokenizer section.
constexpr std::string_view k_model = "tokenizer.ggml.model";
constexpr std::string_view k_pre = "tokenizer.ggml.pre";
constexpr std::string_view k_tokens = "tokenizer.ggml.tokens";
constexpr std::string_view k_scores = "tokenizer.ggml.scores";
constexpr std::string_view k_token_type = "tokenizer.ggml.token_type";
constexpr std::string_view k_merges = "tokenizer.ggml.merges";
constexpr std::string_view k_bos = "tokenizer.ggml.bos_token_id";
constexpr std::string_view k_eos = "tokenizer.ggml.eos_token_id";
constexpr std::string_view k_eot = "tokenizer.ggml.eot_token_id";
constexpr std::string_view k_eom = "tokenizer.ggml.eom_token_id";
constexpr std::string_view k_unk = "tokenizer.ggml.unknown_token_id";
constexpr std::string_view k_pad = "tokenizer.ggml.padding_token_id";
constexpr std::string_view k_add_bos = "tokenizer.ggml.add_bos_token";
constexpr std::string_view k_add_eos = "tokenizer.ggml.add_eos_token";
constexpr std::string_view k_add_space_prefix = "tokenizer.ggml.add_space_prefix";
constexpr std::string_view k_chat_template = "tokenizer.chat_template";

// Largest vocabulary accepted: guards the id arithmetic (int32 ids) and
// memory; real vocabularies are ≤ 260k.
constexpr size_t k_max_tokens = size_t{1} << 24;

std::string where(const gguf_file& file, std::string_view key) {
    return file.path() + ": " + std::string(key);
}

result<bool> optional_bool(const gguf_file& file, std::string_view key, bool fallback) {
    if (!file.find(key)) return fallback;
    return file.get_bool(key);
}

// An optional special id: absent keeps `fallback`; present must be a token.
status read_special_id(const gguf_file& file, std::string_view key, size_t n_tokens, token_id& id) {
    if (!file.find(key)) return {};
    result<int64_t> v = file.get_int(key);
    if (!v) return v.err();
    // Some converters write -1 (or UINT32_MAX) for "none".
    if (*v < 0 || *v == 0xFFFFFFFF) {
        id = no_token;
        return {};
    }
    if (static_cast<uint64_t>(*v) >= n_tokens) {
        return make_error(errc::out_of_range, where(file, key) + ": id " + std::to_string(*v) +
                                                  " is not below the vocabulary size " + std::to_string(n_tokens));
    }
    id = static_cast<token_id>(*v);
    return {};
}

// GPT-2's table: printable Latin-1 bytes stand for themselves, the other 68
// bytes are moved to U+0100.. in byte order.
const std::array<uint32_t, 256>& byte_table() {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        uint32_t next = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            t[b] = printable ? b : next++;
        }
        return t;
    }();
    return table;
}

}  // namespace

uint32_t byte_to_code_point(uint8_t byte) { return byte_table()[byte]; }

int code_point_to_byte(uint32_t cp) {
    if (cp < 256) {
        const bool printable = (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE);
        return printable ? static_cast<int>(cp) : -1;
    }
    if (cp >= 256 + 68) return -1;
    // The moved bytes, in order: find the one at index cp - 256.
    static const std::array<uint8_t, 68> moved = [] {
        std::array<uint8_t, 68> m{};
        for (uint32_t b = 0; b < 256; ++b) {
            if (byte_table()[b] >= 256) m[byte_table()[b] - 256] = static_cast<uint8_t>(b);
        }
        return m;
    }();
    return moved[cp - 256];
}

std::string bytes_to_byte_level(std::string_view raw) {
    std::string out;
    out.reserve(raw.size() * 2);
    for (char c : raw) unicode::append_utf8(out, byte_to_code_point(static_cast<uint8_t>(c)));
    return out;
}

result<vocab> load_vocab(const gguf_file& file) {
    vocab v;
    result<std::string> model = file.get_string(k_model);
    if (!model) return model.err();
    if (*model == "llama") {
        v.model = vocab_model::spm;
    } else if (*model == "gpt2") {
        v.model = vocab_model::bpe;
    } else {
        return make_error(errc::unsupported, where(file, k_model) + ": tokenizer model '" + *model +
                                                 "' is not supported (expected 'llama' or 'gpt2')");
    }

    result<std::vector<std::string>> tokens = file.get_string_array(k_tokens);
    if (!tokens) return tokens.err();
    v.tokens = std::move(*tokens);
    const size_t n = v.tokens.size();
    if (n == 0 || n > k_max_tokens) {
        return make_error(errc::out_of_range, where(file, k_tokens) + ": " + std::to_string(n) +
                                                  " tokens (expected 1.." + std::to_string(k_max_tokens) + ")");
    }

    v.types.assign(n, token_type::normal);
    if (file.find(k_token_type)) {
        result<std::vector<int64_t>> types = file.get_int_array(k_token_type);
        if (!types) return types.err();
        if (types->size() != n) {
            return make_error(errc::parse_error, where(file, k_token_type) + ": " + std::to_string(types->size()) +
                                                     " entries for " + std::to_string(n) + " tokens");
        }
        for (size_t i = 0; i < n; ++i) {
            const int64_t t = (*types)[i];
            v.types[i] = (t >= 0 && t <= 6) ? static_cast<token_type>(t) : token_type::undefined;
        }
    }

    if (file.find(k_scores)) {
        result<std::vector<double>> scores = file.get_float_array(k_scores);
        if (!scores) return scores.err();
        if (scores->size() != n) {
            return make_error(errc::parse_error, where(file, k_scores) + ": " + std::to_string(scores->size()) +
                                                     " entries for " + std::to_string(n) + " tokens");
        }
        v.scores.assign(scores->begin(), scores->end());
    }

    if (v.model == vocab_model::bpe) {
        result<std::vector<std::string>> merges = file.get_string_array(k_merges);
        if (!merges) return merges.err();
        v.merges = std::move(*merges);
        if (file.find(k_pre)) {
            result<std::string> pre = file.get_string(k_pre);
            if (!pre) return pre.err();
            v.pre = std::move(*pre);
        }
    } else {
        // SentencePiece defaults of the reference implementation.
        v.unk_id = 0;
        v.bos_id = n > 1 ? 1 : no_token;
        v.eos_id = n > 2 ? 2 : no_token;
    }

    TACHYON_TRY(read_special_id(file, k_bos, n, v.bos_id));
    TACHYON_TRY(read_special_id(file, k_eos, n, v.eos_id));
    TACHYON_TRY(read_special_id(file, k_eot, n, v.eot_id));
    TACHYON_TRY(read_special_id(file, k_eom, n, v.eom_id));
    TACHYON_TRY(read_special_id(file, k_unk, n, v.unk_id));
    TACHYON_TRY(read_special_id(file, k_pad, n, v.pad_id));

    const bool spm = v.model == vocab_model::spm;
    result<bool> add_bos = optional_bool(file, k_add_bos, spm);
    if (!add_bos) return add_bos.err();
    result<bool> add_eos = optional_bool(file, k_add_eos, false);
    if (!add_eos) return add_eos.err();
    result<bool> add_space = optional_bool(file, k_add_space_prefix, spm);
    if (!add_space) return add_space.err();
    v.add_bos = *add_bos;
    v.add_eos = *add_eos;
    v.add_space_prefix = *add_space;

    if (file.find(k_chat_template)) {
        result<std::string> tmpl = file.get_string(k_chat_template);
        if (!tmpl) return tmpl.err();
        v.chat_template = std::move(*tmpl);
    }
    return v;
}

void write_vocab(gguf_writer& writer, const vocab& v) {
    writer.set_string(std::string(k_model), v.model == vocab_model::spm ? "llama" : "gpt2");
    if (v.model == vocab_model::bpe) writer.set_string(std::string(k_pre), v.pre);
    writer.set_string_array(std::string(k_tokens), v.tokens);
    if (!v.scores.empty()) writer.set_float32_array(std::string(k_scores), v.scores);
    std::vector<int32_t> types(v.types.size());
    for (size_t i = 0; i < types.size(); ++i) types[i] = static_cast<int32_t>(v.types[i]);
    writer.set_int32_array(std::string(k_token_type), std::move(types));
    if (v.model == vocab_model::bpe) writer.set_string_array(std::string(k_merges), v.merges);
    const auto set_id = [&](std::string_view key, token_id id) {
        if (id != no_token) writer.set_uint32(std::string(key), static_cast<uint32_t>(id));
    };
    set_id(k_bos, v.bos_id);
    set_id(k_eos, v.eos_id);
    set_id(k_eot, v.eot_id);
    set_id(k_eom, v.eom_id);
    set_id(k_unk, v.unk_id);
    set_id(k_pad, v.pad_id);
    writer.set_bool(std::string(k_add_bos), v.add_bos);
    writer.set_bool(std::string(k_add_eos), v.add_eos);
    writer.set_bool(std::string(k_add_space_prefix), v.add_space_prefix);
    if (!v.chat_template.empty()) writer.set_string(std::string(k_chat_template), v.chat_template);
}

// ---- byte_level_bpe_builder ---------------------------------------------------

byte_level_bpe_builder::byte_level_bpe_builder() {
    vocab_.model = vocab_model::bpe;
    for (int b = 0; b < 256; ++b) {
        const std::string raw(1, static_cast<char>(b));
        normal_ids_.emplace(raw, static_cast<token_id>(b));
        vocab_.tokens.push_back(bytes_to_byte_level(raw));
        vocab_.types.push_back(token_type::normal);
    }
}

token_id byte_level_bpe_builder::find(std::string_view raw) const {
    const auto it = normal_ids_.find(std::string(raw));
    return it == normal_ids_.end() ? no_token : it->second;
}

token_id byte_level_bpe_builder::add_merge(std::string_view left, std::string_view right) {
    TACHYON_ASSERT(find(left) != no_token && find(right) != no_token,
                   "byte_level_bpe_builder::add_merge: both sides must be tokens");
    vocab_.merges.push_back(bytes_to_byte_level(left) + " " + bytes_to_byte_level(right));
    const std::string merged = std::string(left) + std::string(right);
    if (const token_id existing = find(merged); existing != no_token) return existing;
    const auto id = static_cast<token_id>(vocab_.tokens.size());
    normal_ids_.emplace(merged, id);
    vocab_.tokens.push_back(bytes_to_byte_level(merged));
    vocab_.types.push_back(token_type::normal);
    return id;
}

token_id byte_level_bpe_builder::add_special(std::string_view text, token_type type) {
    vocab_.tokens.emplace_back(text);  // specials are stored as written, not byte-mapped
    vocab_.types.push_back(type);
    return static_cast<token_id>(vocab_.tokens.size() - 1);
}

vocab byte_level_bpe_builder::build(std::string pre) const {
    vocab v = vocab_;
    v.pre = std::move(pre);
    return v;
}

}  // namespace tachyon
