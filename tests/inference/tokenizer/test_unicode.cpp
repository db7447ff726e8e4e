#include "inference/tokenizer/unicode.h"

#include <doctest/doctest.h>

#include <string>

using namespace tachyon;
using namespace tachyon::unicode;

TEST_CASE("UTF-8 of 1 to 4 bytes decodes and re-encodes") {
    for (uint32_t cp : {0x41u, 0x7Fu, 0xFCu, 0x7FFu, 0x800u, 0x2581u, 0xFFFDu, 0x1F999u, 0x10FFFFu}) {
        const std::string s = to_utf8(cp);
        const decoded_char d = decode_utf8(s, 0);
        CHECK(d.valid);
        CHECK(d.cp == cp);
        CHECK(d.n_bytes == s.size());
    }
    CHECK(to_utf8(0x1F999) == "\xF0\x9F\xA6\x99");  // 🦙
    CHECK(to_code_points("aü🦙") == std::vector<uint32_t>{'a', 0xFC, 0x1F999});
}

TEST_CASE("invalid bytes decode as one replacement character each") {
    const auto check_invalid = [](std::string_view s) {
        const decoded_char d = decode_utf8(s, 0);
        CHECK_FALSE(d.valid);
        CHECK(d.cp == replacement_char);
        CHECK(d.n_bytes == 1);
    };
    check_invalid("\x80");              // lone continuation
    check_invalid("\xC0\x80");          // overlong NUL
    check_invalid("\xE0\x80\x80");      // overlong
    check_invalid("\xED\xA0\x80");      // surrogate U+D800
    check_invalid("\xF4\x90\x80\x80");  // past U+10FFFF
    check_invalid("\xE2\x96");          // truncated
    check_invalid("\xE2(\x81");         // bad continuation
    check_invalid("\xFF");
    CHECK(to_code_points("a\xFF" "b").size() == 3);
    // Out-of-range values encode as U+FFFD rather than invalid bytes.
    CHECK(to_utf8(0xD800) == to_utf8(replacement_char));
    CHECK(to_utf8(0x110000) == to_utf8(replacement_char));
}

TEST_CASE("general-category classes match the pattern classes") {
    CHECK(is_letter('A'));
    CHECK(is_letter(0xFC));     // ü
    CHECK(is_letter(0x6211));   // 我
    CHECK(is_letter(0x1780));   // Khmer KA
    CHECK(is_number('7'));
    CHECK(is_number(0xBD));     // ½ (No)
    CHECK(is_number(0x0663));   // Arabic-Indic three
    CHECK(is_punctuation('!'));
    CHECK(is_punctuation('\''));
    CHECK(is_punctuation(0x3001));  // 、
    CHECK(flags_of('$') == cp_symbol);
    CHECK(flags_of(0x1F999) == cp_symbol);  // 🦙 So
    CHECK(flags_of(0x0301) == cp_mark);      // combining acute
    CHECK(flags_of(0x17B6) == cp_mark);      // Khmer vowel sign AA (Mc)
    CHECK(flags_of(' ') == (cp_separator | cp_whitespace));
    CHECK(flags_of('\n') == (cp_other | cp_whitespace));
    CHECK(flags_of(0x3000) == (cp_separator | cp_whitespace));  // ideographic space
    CHECK_FALSE(is_whitespace(0x200D));  // ZWJ is a format char, not space
    CHECK(flags_of(0xE0000) == cp_other);  // unassigned
    CHECK(tables_version_major() >= 14);
}

TEST_CASE("the complete prefix stops before an unfinished sequence") {
    CHECK(complete_prefix_length("abc") == 3);
    CHECK(complete_prefix_length("") == 0);
    CHECK(complete_prefix_length("a\xF0\x9F") == 1);
    CHECK(complete_prefix_length("a\xF0\x9F\xA6") == 1);
    CHECK(complete_prefix_length("a\xF0\x9F\xA6\x99") == 5);
    CHECK(complete_prefix_length("\xC3") == 0);
    // Bytes that can never complete are not held back.
    CHECK(complete_prefix_length("a\xFF") == 2);
    CHECK(complete_prefix_length("a\x80") == 2);
}
