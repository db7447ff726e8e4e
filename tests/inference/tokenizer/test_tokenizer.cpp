#include "inference/tokenizer/tokenizer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "inference/gguf/gguf.h"
#include "inference/tokenizer/unicode.h"

using namespace tachyon;
namespace fs = std::filesystem;

namespace {

const fs::path k_vectors = fs::path(TACHYON_CONFORMANCE_DIR) / "tokenizer";

std::string slurp(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// One tokenizer per vocabulary file, loaded once for all test cases.
const tokenizer* conformance_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<tokenizer>> cache;
    auto& slot = cache[name];
    if (!slot) {
        auto file = gguf_file::open((k_vectors / name).string());
        REQUIRE_MESSAGE(file.ok(), (file.ok() ? "" : file.err().describe()));
        auto tok = tokenizer::from_gguf(**file);
        REQUIRE_MESSAGE(tok.ok(), (tok.ok() ? "" : tok.err().describe()));
        slot = std::make_unique<tokenizer>(std::move(*tok));
    }
    return slot.get();
}

std::vector<std::string> read_inputs(const fs::path& path) {
    const std::string all = slurp(path);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    for (size_t pos = 0;;) {
        const size_t hit = all.find(sep, pos);
        if (hit == std::string::npos) break;
        inputs.push_back(all.substr(pos, hit - pos));
        pos = hit + sep.size();
    }
    return inputs;
}

std::string join_ids(const std::vector<token_id>& ids) {
    std::string s;
    for (token_id id : ids) {
        s += ' ';  // two appends: `" " + to_string()` trips a false -Wrestrict in g++ 12
        s += std::to_string(id);
    }
    return s;
}

const char* const k_vocab_files[] = {
    "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf",          "ggml-vocab-gpt-2.gguf",
    "ggml-vocab-starcoder.gguf", "ggml-vocab-deepseek-coder.gguf", "ggml-vocab-falcon.gguf",
};

// Whole, valid UTF-8: what a stream may show to a user.
bool unicode_complete(std::string_view s) {
    for (size_t pos = 0; pos < s.size();) {
        const unicode::decoded_char d = unicode::decode_utf8(s, pos);
        if (!d.valid) return false;
        pos += d.n_bytes;
    }
    return true;
}

bool have_vectors() { return fs::exists(k_vectors / "ggml-vocab-gpt-2.gguf"); }

}  // namespace

TEST_CASE("every conformance vector encodes to the reference ids") {
    if (!fs::exists(k_vectors)) {
        MESSAGE("skipped: conformance vectors absent at " << k_vectors.string());
        return;
    }
    size_t n_files = 0;
    for (const auto& entry : fs::directory_iterator(k_vectors)) {
        const std::string name = entry.path().filename().string();
        if (entry.path().extension() != ".gguf") continue;
        const fs::path inp = entry.path().string() + ".inp";
        const fs::path out = entry.path().string() + ".out";
        if (!fs::exists(inp) || !fs::exists(out)) continue;
        ++n_files;
        const tokenizer* tok = conformance_tokenizer(name);
        const std::vector<std::string> inputs = read_inputs(inp);
        std::istringstream expected(slurp(out));
        size_t n_pass = 0;
        for (size_t i = 0; i < inputs.size(); ++i) {
            std::string line;
            REQUIRE(std::getline(expected, line));
            const std::string got = join_ids(tok->encode(inputs[i]));
            INFO(name << " input " << i << ": \"" << inputs[i] << "\"");
            CHECK(got == line);
            n_pass += got == line;
        }
        MESSAGE(name << ": " << n_pass << "/" << inputs.size() << " vectors pass");
        CHECK(inputs.size() == 46);
    }
    CHECK(n_files == 6);
}

TEST_CASE("decode(encode(text)) gives the text back") {
    if (!have_vectors()) {
        MESSAGE("skipped: conformance vectors absent at " << k_vectors.string());
        return;
    }
    // On valid UTF-8 every vocabulary here is lossless: the byte-level
    // vocabularies cover every byte of UTF-8 text, and both SentencePiece
    // vocabularies have byte fallback.
    for (const char* name : k_vocab_files) {
        const tokenizer* tok = conformance_tokenizer(name);
        const std::vector<std::string> inputs = read_inputs(k_vectors / (std::string(name) + ".inp"));
        for (size_t i = 0; i < inputs.size(); ++i) {
            INFO(name << " input " << i << ": \"" << inputs[i] << "\"");
            CHECK(tok->decode(tok->encode(inputs[i])) == inputs[i]);
        }
    }
    // Bytes that are not UTF-8 survive where every byte has a token (gpt-2's
    // byte alphabet, SentencePiece byte fallback). starcoder and falcon have
    // no token for 0xFE/0xFF, and deepseek-coder maps them to added tokens.
    for (const char* name : {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"}) {
        const tokenizer* tok = conformance_tokenizer(name);
        const std::string invalid = "a\xff\xfe b\xc3(\xe2\x82";
        INFO(std::string(name));
        CHECK(tok->decode(tok->encode(invalid)) == invalid);
    }
}

TEST_CASE("control tokens are matched only when parsing specials, added tokens always") {
    if (!have_vectors()) {
        MESSAGE("skipped: conformance vectors absent at " << k_vectors.string());
        return;
    }
    const tokenizer* gpt2 = conformance_tokenizer("ggml-vocab-gpt-2.gguf");
    const std::string text = "a<|endoftext|>b";
    const std::vector<token_id> parsed = gpt2->encode(text, {.add_special = false, .parse_special = true});
    REQUIRE(parsed.size() == 3);
    CHECK(parsed[1] == 50256);
    const std::vector<token_id> plain = gpt2->encode(text);
    CHECK(plain.size() > 3);
    CHECK(std::find(plain.begin(), plain.end(), 50256) == plain.end());
    CHECK(gpt2->decode(plain) == text);
    // Control tokens render only on request.
    CHECK(gpt2->decode(parsed) == "ab");
    CHECK(gpt2->decode(parsed, {.render_special = true, .strip_leading_space = true}) == text);

    // deepseek-coder's added tokens ('ü' is one) are split out even from plain text.
    const tokenizer* deepseek = conformance_tokenizer("ggml-vocab-deepseek-coder.gguf");
    const std::vector<token_id> ids = deepseek->encode("Führer");
    CHECK(std::find(ids.begin(), ids.end(), deepseek->find_token("ü")) != ids.end());

    // SPM: the dummy prefix space follows a special token, as the reference does.
    const tokenizer* spm = conformance_tokenizer("ggml-vocab-llama-spm.gguf");
    const std::vector<token_id> with_bos = spm->encode("<s>Hello", {.add_special = false, .parse_special = true});
    REQUIRE(with_bos.size() == 2);
    CHECK(with_bos[0] == 1);
    CHECK(with_bos[1] == 15043);  // "▁Hello"
}

TEST_CASE("BOS and EOS are added as the vocabulary says, only with add_special") {
    if (!have_vectors()) {
        MESSAGE("skipped: conformance vectors absent at " << k_vectors.string());
        return;
    }
    const tokenizer* spm = conformance_tokenizer("ggml-vocab-llama-spm.gguf");
    CHECK(spm->encode("Hello world", {.add_special = true, .parse_special = false}) == std::vector<token_id>{1, 15043, 3186});
    CHECK(spm->encode("Hello world") == std::vector<token_id>{15043, 3186});
    CHECK(spm->encode("", {.add_special = true, .parse_special = false}) == std::vector<token_id>{1});
    CHECK(spm->encode("").empty());
    // gpt-2 has no add_bos_token: nothing is added.
    const tokenizer* gpt2 = conformance_tokenizer("ggml-vocab-gpt-2.gguf");
    CHECK(gpt2->encode("Hello", {.add_special = true, .parse_special = false}) == gpt2->encode("Hello"));
}

TEST_CASE("incremental decoding holds back a character split across tokens") {
    if (!have_vectors()) {
        MESSAGE("skipped: conformance vectors absent at " << k_vectors.string());
        return;
    }
    for (const char* name : {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf"}) {
        INFO(std::string(name));
        const tokenizer* tok = conformance_tokenizer(name);
        const std::string text = "llama 🦙 und Führer 我想";
        const std::vector<token_id> ids = tok->encode(text);
        incremental_detokenizer detok(*tok);
        std::string streamed;
        bool held_back = false;
        for (token_id id : ids) {
            const std::string piece = detok.push(id);
            // Every emitted chunk is whole UTF-8.
            CHECK(unicode_complete(piece));
            held_back |= piece.empty();
            streamed += piece;
        }
        streamed += detok.flush();
        CHECK(streamed == text);
        // 🦙 is not one token in these vocabularies: some push emitted nothing.
        CHECK(held_back);
    }
}

TEST_CASE("token pieces, special ids and end of generation") {
    if (!have_vectors()) {
        MESSAGE("skipped: conformance vectors absent at " << k_vectors.string());
        return;
    }
    const tokenizer* spm = conformance_tokenizer("ggml-vocab-llama-spm.gguf");
    CHECK(spm->n_tokens() == 32000);
    CHECK(spm->bos() == 1);
    CHECK(spm->eos() == 2);
    CHECK(spm->is_eog(2));
    CHECK_FALSE(spm->is_eog(1));
    CHECK(spm->token_to_piece(15043) == " Hello");
    CHECK(spm->token_to_piece(13) == "\n");  // <0x0A>
    CHECK(spm->token_to_piece(1).empty());
    CHECK(spm->token_to_piece(1, true) == "<s>");

    const tokenizer* gpt2 = conformance_tokenizer("ggml-vocab-gpt-2.gguf");
    CHECK(gpt2->token_to_piece(gpt2->find_token("\xC4\xA0the")) == " the");  // "Ġthe"
    CHECK(gpt2->is_eog(50256));

    // phi-3: <|end|> ends a turn although the metadata names only EOS.
    const tokenizer* phi3 = conformance_tokenizer("ggml-vocab-phi-3.gguf");
    CHECK(phi3->eot() == phi3->find_token("<|end|>"));
    CHECK(phi3->is_eog(phi3->find_token("<|end|>")));
    CHECK(phi3->is_eog(32000));
}

TEST_CASE("a vocabulary built in memory tokenizes with its own merges") {
    byte_level_bpe_builder b;
    const token_id he = b.add_merge("h", "e");
    const token_id ll = b.add_merge("l", "l");
    const token_id hell = b.add_merge("he", "ll");
    const token_id hello = b.add_merge("hell", "o");
    const token_id sp_h = b.add_merge(" ", "hello");
    const token_id eos = b.add_special("<|im_end|>");
    vocab v = b.build("gpt-2");
    v.eos_id = eos;
    auto tok = tokenizer::create(v);
    REQUIRE(tok.ok());
    CHECK(tok->encode("hello hello") == std::vector<token_id>{hello, sp_h});
    CHECK(tok->encode("hell") == std::vector<token_id>{hell});
    CHECK(tok->encode("shelf") == std::vector<token_id>{'s', he, 'l', 'f'});
    CHECK(tok->encode("llama") == std::vector<token_id>{ll, 'a', 'm', 'a'});
    CHECK(tok->encode("hello<|im_end|>", {.add_special = false, .parse_special = true}) == std::vector<token_id>{hello, eos});
    CHECK(tok->is_eog(eos));
    CHECK(tok->decode(tok->encode("héllo\n")) == "héllo\n");
}

TEST_CASE("an unknown pre-tokenizer is an error naming it") {
    byte_level_bpe_builder b;
    auto tok = tokenizer::create(b.build("no-such-pre"));
    REQUIRE_FALSE(tok.ok());
    CHECK(tok.err().message.find("'no-such-pre'") != std::string::npos);
}

TEST_CASE("stories260K: the reference prompt ids and generated text") {
    const fs::path model = fs::path(TACHYON_CONFORMANCE_DIR) / "models" / "stories260K.gguf";
    if (!fs::exists(model)) {
        MESSAGE("skipped: " << model.string() << " absent");
        return;
    }
    auto file = gguf_file::open(model.string());
    REQUIRE(file.ok());
    auto tok = tokenizer::from_gguf(**file);
    REQUIRE_MESSAGE(tok.ok(), (tok.ok() ? "" : tok.err().describe()));
    // stories260K_greedy_reference.txt: BOS + "Once upon a time".
    CHECK(tok->encode("Once upon a time", {.add_special = true, .parse_special = false}) ==
          std::vector<token_id>{1, 403, 407, 261, 378});
    const std::vector<token_id> generated = {
        1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
        410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266,
        268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,
        438, 310, 439, 419, 357, 336};
    CHECK(tok->decode(generated) ==
          "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, "
          "she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said");
}
