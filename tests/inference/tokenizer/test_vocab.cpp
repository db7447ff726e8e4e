#include "inference/tokenizer/vocab.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "inference/gguf/gguf.h"

using namespace tachyon;

namespace {

// A GGUF image holding `v`, parsed back; `bytes` keeps the image alive.
result<vocab> round_trip(const gguf_writer& w, std::vector<std::byte>& bytes) {
    bytes = w.to_bytes();
    auto file = gguf_file::parse(bytes, "vocab.gguf");
    if (!file) return file.err();
    return load_vocab(**file);
}

}  // namespace

TEST_CASE("the byte-level alphabet is GPT-2's and reversible") {
    CHECK(byte_to_code_point(' ') == 0x120);   // Ġ
    CHECK(byte_to_code_point('\n') == 0x10A);  // Ċ
    CHECK(byte_to_code_point('A') == 'A');
    CHECK(byte_to_code_point(0xAD) == 0x143);  // soft hyphen is moved
    for (int b = 0; b < 256; ++b) CHECK(code_point_to_byte(byte_to_code_point(static_cast<uint8_t>(b))) == b);
    CHECK(code_point_to_byte(0x20) == -1);
    CHECK(code_point_to_byte(0x2581) == -1);
    CHECK(bytes_to_byte_level(" the") == "\xC4\xA0the");
}

TEST_CASE("a built vocabulary survives a GGUF round trip") {
    byte_level_bpe_builder b;
    const token_id th = b.add_merge("t", "h");
    b.add_merge(" ", "th");
    const token_id im_end = b.add_special("<|im_end|>");
    CHECK(b.find("th") == th);
    CHECK(b.find("zz") == no_token);
    vocab v = b.build("gpt-2");
    v.eos_id = im_end;
    v.chat_template = "{% for m in messages %}<|im_start|>...{% endfor %}";

    gguf_writer w;
    write_vocab(w, v);
    std::vector<std::byte> bytes;
    auto back = round_trip(w, bytes);
    REQUIRE_MESSAGE(back.ok(), (back.ok() ? "" : back.err().describe()));
    CHECK(back->model == vocab_model::bpe);
    CHECK(back->pre == "gpt-2");
    CHECK(back->tokens == v.tokens);
    CHECK(back->types == v.types);
    CHECK(back->merges == std::vector<std::string>{"t h", "\xC4\xA0 th"});
    CHECK(back->eos_id == im_end);
    CHECK(back->bos_id == no_token);
    CHECK_FALSE(back->add_bos);
    CHECK_FALSE(back->add_space_prefix);
    CHECK(back->chat_template == v.chat_template);
}

TEST_CASE("SentencePiece defaults: BOS added, dummy prefix, ids 0/1/2") {
    gguf_writer w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a"});
    std::vector<std::byte> bytes;
    auto v = round_trip(w, bytes);
    REQUIRE(v.ok());
    CHECK(v->model == vocab_model::spm);
    CHECK(v->add_bos);
    CHECK_FALSE(v->add_eos);
    CHECK(v->add_space_prefix);
    CHECK(v->unk_id == 0);
    CHECK(v->bos_id == 1);
    CHECK(v->eos_id == 2);
    CHECK(v->types == std::vector<token_type>(4, token_type::normal));
}

TEST_CASE("bad tokenizer metadata is an error naming the key") {
    std::vector<std::byte> bytes;
    {
        gguf_writer w;
        w.set_string("tokenizer.ggml.model", "bert");
        w.set_string_array("tokenizer.ggml.tokens", {"a"});
        auto v = round_trip(w, bytes);
        REQUIRE_FALSE(v.ok());
        CHECK(v.err().message.find("tokenizer.ggml.model") != std::string::npos);
        CHECK(v.err().message.find("'bert'") != std::string::npos);
    }
    {
        gguf_writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
        w.set_int32_array("tokenizer.ggml.token_type", {1});
        auto v = round_trip(w, bytes);
        REQUIRE_FALSE(v.ok());
        CHECK(v.err().message.find("tokenizer.ggml.token_type") != std::string::npos);
    }
    {
        gguf_writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
        w.set_uint32("tokenizer.ggml.eos_token_id", 7);
        auto v = round_trip(w, bytes);
        REQUIRE_FALSE(v.ok());
        CHECK(v.err().message.find("tokenizer.ggml.eos_token_id") != std::string::npos);
    }
    {
        gguf_writer w;
        w.set_string("tokenizer.ggml.model", "gpt2");
        w.set_string_array("tokenizer.ggml.tokens", {"a"});
        auto v = round_trip(w, bytes);  // merges are required for BPE
        REQUIRE_FALSE(v.ok());
        CHECK(v.err().message.find("tokenizer.ggml.merges") != std::string::npos);
    }
    {
        gguf_writer w;
        auto v = round_trip(w, bytes);
        REQUIRE_FALSE(v.ok());
        CHECK(v.err().message.find("tokenizer.ggml.model") != std::string::npos);
    }
}
