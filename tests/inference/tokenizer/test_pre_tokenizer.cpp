#include "inference/tokenizer/pre_tokenizer.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace tachyon;

namespace {

std::vector<std::string> split(std::string_view pre, std::string_view text) {
    auto p = make_pre_tokenizer(pre);
    REQUIRE(p.ok());
    std::vector<std::string> out;
    for (std::string_view w : p->split(text)) out.emplace_back(w);
    return out;
}

using words = std::vector<std::string>;

}  // namespace

TEST_CASE("gpt-2 cuts words, numbers, punctuation and spaces") {
    CHECK(split("gpt-2", "Hello world's  x") == words{"Hello", " world", "'s", " ", " x"});
    CHECK(split("gpt-2", "a 123!? b") == words{"a", " 123", "!?", " b"});
    // A space run keeps its last space for the next word; trailing spaces stay together.
    CHECK(split("gpt-2", "a   b  ") == words{"a", "  ", " b", "  "});
    CHECK(split("gpt-2", "\n\nx") == words{"\n", "\n", "x"});
    // Contractions are case-sensitive here.
    CHECK(split("gpt-2", "I'VE") == words{"I", "'", "VE"});
    CHECK(split("gpt-2", "").empty());
}

TEST_CASE("llama3 groups digits by three and folds contraction case") {
    CHECK(split("llama3", "12345") == words{"123", "45"});
    CHECK(split("llama3", "I'VE") == words{"I", "'VE"});
    // A punctuation character may lead a word; newlines end a symbol run.
    CHECK(split("llama3", "(hello) x") == words{"(hello", ")", " x"});
    CHECK(split("llama3", "a.\n\nb") == words{"a", ".\n\n", "b"});
    CHECK(split("llama3", "a \n  b") == words{"a", " \n", " ", " b"});
    CHECK(split("llama-bpe", "12345") == split("llama3", "12345"));
}

TEST_CASE("qwen2 and starcoder cut digits one by one") {
    CHECK(split("qwen2", "x123") == words{"x", "1", "2", "3"});
    CHECK(split("starcoder", "a 33") == words{"a", " ", "3", "3"});
}

TEST_CASE("falcon isolates punctuation runs and three-digit groups") {
    CHECK(split("falcon", "a,b") == words{"a", ",", "b"});
    CHECK(split("falcon", "3333") == words{"333", "3"});
}

TEST_CASE("deepseek pre-tokenizers split CJK and newlines apart") {
    CHECK(split("deepseek-coder", "我想apple工作\n1") == words{"我想", "apple", "工作", "\n", "1"});
    CHECK(split("deepseek-llm", "Hi 我想 12\n") == words{"Hi", " ", "我想", " ", "1", "2", "\n"});
}

TEST_CASE("pieces cover the text exactly, invalid bytes included") {
    const std::string text = "x\xFF\xFE y\xC3 1234 'll \t\n end";
    for (const char* pre : {"default", "gpt-2", "llama3", "qwen2", "deepseek-llm", "deepseek-coder", "falcon",
                            "starcoder", "refact", "mpt", "gpt-neox"}) {
        auto p = make_pre_tokenizer(pre);
        REQUIRE_MESSAGE(p.ok(), pre);
        std::string joined;
        for (std::string_view w : p->split(text)) {
            CHECK_FALSE(w.empty());
            joined += w;
        }
        CHECK_MESSAGE(joined == text, pre);
    }
}

TEST_CASE("an unknown name is an error that names it") {
    auto p = make_pre_tokenizer("tekken-9");
    REQUIRE_FALSE(p.ok());
    CHECK(p.err().code == errc::unsupported);
    CHECK(p.err().message.find("'tekken-9'") != std::string::npos);
}
