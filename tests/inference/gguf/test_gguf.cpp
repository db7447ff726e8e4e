#include "inference/gguf/gguf.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>

#include <unistd.h>

using namespace tachyon;
namespace fs = std::filesystem;

namespace {

const std::string conformance_dir = TACHYON_CONFORMANCE_DIR;
const std::string stories_path = conformance_dir + "/models/stories260K.gguf";

std::vector<std::byte> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    std::memcpy(out.data(), chars.data(), chars.size());
    return out;
}

gguf_value scalar(gguf_value_type type, decltype(gguf_value::data) data) {
    gguf_value v;
    v.type = type;
    v.data = std::move(data);
    return v;
}

gguf_value array(gguf_value_type elem_type, decltype(gguf_value::data) data) {
    gguf_value v;
    v.type = gguf_value_type::array;
    v.elem_type = elem_type;
    v.data = std::move(data);
    return v;
}

bool same(const gguf_value& a, const gguf_value& b) {
    if (a.type != b.type || a.data.index() != b.data.index()) return false;
    if (a.type == gguf_value_type::array && a.elem_type != b.elem_type) return false;
    if (const auto* xs = std::get_if<std::vector<gguf_value>>(&a.data)) {
        const auto& ys = std::get<std::vector<gguf_value>>(b.data);
        return std::equal(xs->begin(), xs->end(), ys.begin(), ys.end(), same);
    }
    return a.data == b.data;
}

// Raw GGUF bytes, for files the writer refuses to produce.
struct raw_file {
    std::vector<std::byte> bytes;

    template <class T>
    raw_file& put(T v) {
        const size_t at = bytes.size();
        bytes.resize(at + sizeof(T));
        std::memcpy(bytes.data() + at, &v, sizeof(T));
        return *this;
    }
    raw_file& str(std::string_view s) {
        put<uint64_t>(s.size());
        for (char c : s) bytes.push_back(static_cast<std::byte>(c));
        return *this;
    }
    raw_file& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        return put<uint32_t>(0x46554747).put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    }
    raw_file& kv_u32(std::string_view key, uint32_t v) { return str(key).put<uint32_t>(4).put<uint32_t>(v); }
    raw_file& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
        str(name).put<uint32_t>(static_cast<uint32_t>(dims.size()));
        for (uint64_t d : dims) put<uint64_t>(d);
        return put<uint32_t>(type).put<uint64_t>(offset);
    }
    raw_file& pad(size_t alignment = 32) {
        bytes.resize((bytes.size() + alignment - 1) / alignment * alignment);
        return *this;
    }
    raw_file& zeros(size_t n) {
        bytes.resize(bytes.size() + n);
        return *this;
    }
};

// Parses `bytes` and returns the error, failing the test if it parsed.
error parse_error_of(const std::vector<std::byte>& bytes) {
    auto f = gguf_file::parse(bytes, "bad.gguf");
    REQUIRE_FALSE(f.ok());
    INFO(f.err().message);
    CHECK(f.err().message.rfind("bad.gguf: ", 0) == 0);
    return f.err();
}

bool mentions(const error& e, std::string_view text) {
    INFO("message: " << e.message << " / expected to mention: " << text);
    return e.message.find(text) != std::string::npos;
}

std::vector<std::byte> pattern(size_t n, uint8_t seed) {
    std::vector<std::byte> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
    return out;
}

}  // namespace

TEST_CASE("every metadata value type round-trips through the writer, in insertion order") {
    using t = gguf_value_type;
    std::vector<std::pair<std::string, gguf_value>> values = {
        {"u8", scalar(t::u8, uint64_t{255})},
        {"i8", scalar(t::i8, int64_t{-128})},
        {"u16", scalar(t::u16, uint64_t{65535})},
        {"i16", scalar(t::i16, int64_t{-32768})},
        {"u32", scalar(t::u32, uint64_t{4000000000u})},
        {"i32", scalar(t::i32, int64_t{-2000000000})},
        {"u64", scalar(t::u64, uint64_t{18446744073709551615ull})},
        {"i64", scalar(t::i64, int64_t{std::numeric_limits<int64_t>::min()})},
        {"f32", scalar(t::f32, double{1.5f})},
        {"f64", scalar(t::f64, 3.141592653589793)},
        {"bool", scalar(t::boolean, true)},
        {"string", scalar(t::string, std::string("h\xc3\xa9llo\0world", 12))},
        {"empty string", scalar(t::string, std::string())},
        {"a.u8", array(t::u8, std::vector<int64_t>{0, 1, 255})},
        {"a.i8", array(t::i8, std::vector<int64_t>{-128, 0, 127})},
        {"a.u16", array(t::u16, std::vector<int64_t>{0, 65535})},
        {"a.i16", array(t::i16, std::vector<int64_t>{-32768, 32767})},
        {"a.u32", array(t::u32, std::vector<int64_t>{0, 4294967295})},
        {"a.i32", array(t::i32, std::vector<int64_t>{-1, 2147483647})},
        {"a.u64", array(t::u64, std::vector<int64_t>{0, std::numeric_limits<int64_t>::max()})},
        {"a.i64", array(t::i64, std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 7})},
        {"a.f32", array(t::f32, std::vector<double>{0.25, -1e30f})},
        {"a.f64", array(t::f64, std::vector<double>{1e-300, -2.5})},
        {"a.bool", array(t::boolean, std::vector<gguf_value>{scalar(t::boolean, true), scalar(t::boolean, false)})},
        {"a.string", array(t::string, std::vector<std::string>{"a", "", "ccc"})},
        {"a.empty", array(t::i32, std::vector<int64_t>{})},
        {"a.a.i32", array(t::array, std::vector<gguf_value>{array(t::i32, std::vector<int64_t>{1, 2}),
                                                            array(t::i32, std::vector<int64_t>{})})},
        {"a.a.string", array(t::array, std::vector<gguf_value>{array(t::string, std::vector<std::string>{"x"})})},
        {"a.a.a.f32", array(t::array, std::vector<gguf_value>{array(
                                          t::array, std::vector<gguf_value>{array(t::f32, std::vector<double>{0.5})})})},
    };
    gguf_writer w;
    for (const auto& [k, v] : values) w.set_value(k, v);
    const auto bytes = w.to_bytes();
    auto f = gguf_file::parse(bytes, "roundtrip.gguf");
    REQUIRE_MESSAGE(f.ok(), f.err().message);
    CHECK((*f)->version() == 3);
    REQUIRE((*f)->metadata().size() == values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        INFO("key " << values[i].first);
        CHECK((*f)->metadata()[i].first == values[i].first);
        CHECK(same((*f)->metadata()[i].second, values[i].second));
    }
    CHECK((*f)->find("a.a.string")->type_name() == "array of array of string");
    CHECK((*f)->find("nope") == nullptr);
}

TEST_CASE("the convenience setters produce the types the typed getters read") {
    gguf_writer w;
    w.set_string("general.architecture", "llama");
    w.set_uint32("llama.block_count", 5);
    w.set_int32("neg", -3);
    w.set_uint64("big", 1ull << 40);
    w.set_float32("eps", 1e-5f);
    w.set_bool("flag", true);
    w.set_string_array("tokens", {"<s>", "a"});
    w.set_int32_array("types", {1, 2, 3});
    w.set_float32_array("scores", {0.5f, -1.0f});
    w.set_uint32("llama.block_count", 6);  // replaces in place
    auto f = gguf_file::parse(w.to_bytes(), "m.gguf");
    REQUIRE_MESSAGE(f.ok(), f.err().message);
    const gguf_file& g = **f;
    CHECK(g.metadata()[1].first == "llama.block_count");
    CHECK(*g.get_string("general.architecture") == "llama");
    CHECK(*g.get_uint("llama.block_count") == 6);
    CHECK(*g.get_int("llama.block_count") == 6);
    CHECK(*g.get_int("neg") == -3);
    CHECK(*g.get_uint("big") == (1ull << 40));
    CHECK(*g.get_float("eps") == doctest::Approx(1e-5).epsilon(1e-6));
    CHECK(*g.get_float("llama.block_count") == 6.0);
    CHECK(*g.get_bool("flag"));
    CHECK(*g.get_string_array("tokens") == std::vector<std::string>{"<s>", "a"});
    CHECK(*g.get_int_array("types") == std::vector<int64_t>{1, 2, 3});
    CHECK(*g.get_float_array("scores") == std::vector<double>{0.5, -1.0});
    CHECK(*g.get_float_array("types") == std::vector<double>{1, 2, 3});

    auto missing = g.get_uint("llama.embedding_length");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().code == errc::not_found);
    CHECK(missing.err().message == "m.gguf: missing key 'llama.embedding_length' (expected an unsigned integer)");

    auto wrong = g.get_uint("general.architecture");
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.err().code == errc::parse_error);
    CHECK(wrong.err().message == "m.gguf: key 'general.architecture' is string (expected an unsigned integer)");

    auto wrong_array = g.get_string_array("scores");
    REQUIRE_FALSE(wrong_array.ok());
    CHECK(wrong_array.err().message == "m.gguf: key 'scores' is array of f32 (expected array of string)");

    CHECK(g.get_uint("neg").err().code == errc::out_of_range);
    CHECK(g.get_bool("neg").err().code == errc::parse_error);
    CHECK(g.get_string("flag").err().code == errc::parse_error);
    CHECK(g.get_int_array("tokens").err().code == errc::parse_error);
    CHECK(g.get_float("tokens").err().code == errc::parse_error);
}

TEST_CASE("tensors of every type round-trip with aligned offsets and their bytes in place") {
    for (uint32_t alignment : {32u, 64u, 1u}) {
        gguf_writer w;
        if (alignment != 32) w.set_alignment(alignment);
        std::vector<std::pair<std::string, std::vector<std::byte>>> expected;
        for (uint32_t n = 0; n < 64; ++n) {
            auto traits = traits_of(n);
            if (!traits) continue;
            const std::string name = "t." + std::string(traits->name);
            const std::vector<int64_t> shape = {static_cast<int64_t>(traits->block_size) * 2, 3};
            auto data = pattern(row_bytes(*traits, shape[0] * shape[1]), static_cast<uint8_t>(n));
            w.add_tensor(name, shape, static_cast<tensor_type>(n), data);
            expected.emplace_back(name, data);
        }
        w.add_tensor("vector", {5}, tensor_type::f32, pattern(20, 1));
        w.add_tensor("4d", {2, 3, 4, 5}, tensor_type::f16, pattern(240, 2));
        const auto bytes = w.to_bytes();
        auto f = gguf_file::parse(bytes, "tensors.gguf");
        REQUIRE_MESSAGE(f.ok(), f.err().message);
        CHECK((*f)->alignment() == alignment);
        REQUIRE((*f)->tensors().size() == expected.size() + 2);
        for (size_t i = 0; i < expected.size(); ++i) {
            const gguf_tensor_info& t = (*f)->tensors()[i];
            INFO("tensor " << t.name);
            CHECK(t.name == expected[i].first);
            CHECK(t.shape == std::vector<int64_t>{traits_of(t.type).block_size * 2, 3});
            CHECK(t.n_elements() == t.shape[0] * 3);
            CHECK(t.offset % alignment == 0);
            CHECK((t.data - bytes.data()) % alignment == 0);
            REQUIRE(t.n_bytes == expected[i].second.size());
            CHECK(std::memcmp(t.data, expected[i].second.data(), t.n_bytes) == 0);
            CHECK((*f)->find_tensor(t.name) == &t);
        }
        const gguf_tensor_info* iq2 = (*f)->find_tensor("t.iq2_xxs");
        REQUIRE(iq2 != nullptr);
        CHECK_FALSE(traits_of(iq2->type).supported);  // loadable; the model loader decides
        CHECK((*f)->find_tensor("4d")->shape == std::vector<int64_t>{2, 3, 4, 5});
        CHECK((*f)->find_tensor("missing") == nullptr);
    }
}

TEST_CASE("write() and open() round-trip through a file") {
    const fs::path path = fs::temp_directory_path() / ("tachyon_test_gguf_" + std::to_string(::getpid()) + ".gguf");
    gguf_writer w;
    w.set_string("general.architecture", "llama");
    w.add_tensor("w", {4, 2}, tensor_type::f32, pattern(32, 9));
    REQUIRE(w.write(path.string()).ok());
    auto f = gguf_file::open(path.string());
    REQUIRE_MESSAGE(f.ok(), f.err().message);
    CHECK((*f)->path() == path.string());
    CHECK(*(*f)->get_string("general.architecture") == "llama");
    CHECK(std::memcmp((*f)->find_tensor("w")->data, pattern(32, 9).data(), 32) == 0);
    fs::remove(path);

    auto absent = gguf_file::open(path.string());
    REQUIRE_FALSE(absent.ok());
    CHECK(absent.err().code == errc::not_found);
    CHECK(absent.err().message.find(path.string()) != std::string::npos);

    auto dir = gguf_file::open(fs::temp_directory_path().string());
    CHECK_FALSE(dir.ok());

    CHECK(w.write("/nonexistent-dir/x.gguf").err().code == errc::io_error);
}

TEST_CASE("a bad header is an error naming the file") {
    SUBCASE("empty") { CHECK(mentions(parse_error_of({}), "truncated")); }
    SUBCASE("bad magic") {
        auto b = raw_file{}.header(0, 0).bytes;
        std::memcpy(b.data(), "GGML", 4);
        CHECK(mentions(parse_error_of(b), "bad magic 'GGML'"));
    }
    SUBCASE("version 1") {
        auto e = parse_error_of(raw_file{}.header(0, 0, 1).bytes);
        CHECK(e.code == errc::unsupported);
        CHECK(mentions(e, "unsupported version 1"));
    }
    SUBCASE("version 4") { CHECK(mentions(parse_error_of(raw_file{}.header(0, 0, 4).bytes), "unsupported version 4")); }
    SUBCASE("big-endian") { CHECK(mentions(parse_error_of(raw_file{}.header(0, 0, 0x03000000).bytes), "big-endian")); }
    SUBCASE("absurd key count") {
        CHECK(mentions(parse_error_of(raw_file{}.header(0, 1ull << 60).zeros(100).bytes), "more than the remaining"));
    }
    SUBCASE("absurd tensor count") {
        CHECK(mentions(parse_error_of(raw_file{}.header(~0ull, 0).zeros(100).bytes), "more than the remaining"));
    }
    SUBCASE("version 2 is read like version 3") {
        auto f = gguf_file::parse(raw_file{}.header(0, 1, 2).kv_u32("k", 7).bytes);
        REQUIRE(f.ok());
        CHECK((*f)->version() == 2);
        CHECK(*(*f)->get_uint("k") == 7);
    }
}

TEST_CASE("a bad metadata entry is an error naming the key") {
    SUBCASE("truncated value") {
        auto b = raw_file{}.header(0, 2).kv_u32("first", 1).str("second.key").put<uint32_t>(10).put<uint32_t>(1).bytes;
        auto e = parse_error_of(b);
        CHECK(mentions(e, "value of key 'second.key'"));
        CHECK(mentions(e, "truncated"));
    }
    SUBCASE("string length past end") {
        auto b = raw_file{}.header(0, 1).str("general.name").put<uint32_t>(8).put<uint64_t>(1000).zeros(10).bytes;
        auto e = parse_error_of(b);
        CHECK(mentions(e, "'general.name'"));
        CHECK(mentions(e, "string length 1000"));
    }
    SUBCASE("key length past end") {
        auto b = raw_file{}.header(0, 1).put<uint64_t>(1ull << 62).zeros(20).bytes;
        CHECK(mentions(parse_error_of(b), "string length"));
    }
    SUBCASE("array length past end") {
        auto b = raw_file{}.header(0, 1).str("tokenizer.ggml.tokens").put<uint32_t>(9).put<uint32_t>(8)
                     .put<uint64_t>(1ull << 40).zeros(64).bytes;
        auto e = parse_error_of(b);
        CHECK(mentions(e, "'tokenizer.ggml.tokens'"));
        CHECK(mentions(e, "array of 1099511627776 string elements"));
    }
    SUBCASE("string inside an array past end names the element") {
        auto b = raw_file{}.header(0, 1).str("tokens").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(2)
                     .str("ok").put<uint64_t>(500).zeros(8).bytes;
        auto e = parse_error_of(b);
        CHECK(mentions(e, "'tokens' (element 1)"));
    }
    SUBCASE("unknown value type") {
        auto e = parse_error_of(raw_file{}.header(0, 1).str("k").put<uint32_t>(13).zeros(8).bytes);
        CHECK(mentions(e, "'k'"));
        CHECK(mentions(e, "unknown value type 13"));
    }
    SUBCASE("arrays nested too deep") {
        raw_file r;
        r.header(0, 1).str("deep").put<uint32_t>(9);
        for (int i = 0; i < 40; ++i) r.put<uint32_t>(9).put<uint64_t>(1);
        r.put<uint32_t>(0).put<uint64_t>(0);
        auto e = parse_error_of(r.bytes);
        CHECK(mentions(e, "'deep'"));
        CHECK(mentions(e, "nested deeper"));
    }
    SUBCASE("u64 array element above INT64_MAX") {
        auto b = raw_file{}.header(0, 1).str("ids").put<uint32_t>(9).put<uint32_t>(10).put<uint64_t>(1)
                     .put<uint64_t>(~0ull).bytes;
        CHECK(mentions(parse_error_of(b), "'ids'"));
    }
    SUBCASE("duplicate key") {
        auto e = parse_error_of(raw_file{}.header(0, 2).kv_u32("llama.block_count", 1).kv_u32("llama.block_count", 2).bytes);
        CHECK(mentions(e, "'llama.block_count'"));
        CHECK(mentions(e, "duplicate key"));
    }
    SUBCASE("alignment not a power of two") {
        auto e = parse_error_of(raw_file{}.header(0, 1).kv_u32("general.alignment", 48).bytes);
        CHECK(mentions(e, "'general.alignment' is 48"));
    }
    SUBCASE("alignment zero") {
        CHECK(mentions(parse_error_of(raw_file{}.header(0, 1).kv_u32("general.alignment", 0).bytes), "power of two"));
    }
    SUBCASE("alignment of the wrong type") {
        auto b = raw_file{}.header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32).bytes;
        CHECK(mentions(parse_error_of(b), "'general.alignment' is u64 (expected u32)"));
    }
}

TEST_CASE("a bad tensor info is an error naming the tensor") {
    // One f32 [8] tensor = 32 bytes of data unless the test says otherwise.
    auto file_with = [](std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data = 32) {
        return raw_file{}.header(1, 0).tensor("blk.0.attn_q.weight", std::move(dims), type, offset).pad().zeros(data).bytes;
    };
    SUBCASE("a valid one parses") {
        auto f = gguf_file::parse(file_with({8}, 0, 0));
        REQUIRE_MESSAGE(f.ok(), f.err().message);
        CHECK((*f)->tensors()[0].n_bytes == 32);
    }
    SUBCASE("too many dims") {
        auto e = parse_error_of(file_with({1, 1, 1, 1, 8}, 0, 0));
        CHECK(mentions(e, "tensor 'blk.0.attn_q.weight'"));
        CHECK(mentions(e, "5 dimensions"));
    }
    SUBCASE("zero dims") { CHECK(mentions(parse_error_of(file_with({}, 0, 0)), "0 dimensions")); }
    SUBCASE("zero dim") { CHECK(mentions(parse_error_of(file_with({8, 0}, 0, 0)), "dimension 1 is 0")); }
    SUBCASE("negative dim") { CHECK(mentions(parse_error_of(file_with({~0ull}, 0, 0)), "dimension 0 is -1")); }
    SUBCASE("element count overflow") {
        CHECK(mentions(parse_error_of(file_with({1ull << 32, 1ull << 32}, 0, 0)), "overflows"));
    }
    SUBCASE("byte size overflow") {
        CHECK(mentions(parse_error_of(file_with({1ull << 62}, 28, 0)), "overflows"));
    }
    SUBCASE("row length not a multiple of the block size") {
        auto e = parse_error_of(file_with({33}, 8, 0));
        CHECK(mentions(e, "'blk.0.attn_q.weight'"));
        CHECK(mentions(e, "block size 32 of type q8_0"));
    }
    SUBCASE("unknown tensor type") {
        auto e = parse_error_of(file_with({8}, 99, 0));
        CHECK(mentions(e, "'blk.0.attn_q.weight'"));
        CHECK(mentions(e, "unknown tensor type 99"));
    }
    SUBCASE("misaligned offset") { CHECK(mentions(parse_error_of(file_with({8}, 0, 4, 64)), "not a multiple of the alignment 32")); }
    SUBCASE("offset past end") {
        auto e = parse_error_of(file_with({8}, 0, 64));
        CHECK(mentions(e, "'blk.0.attn_q.weight'"));
        CHECK(mentions(e, "past the end"));
    }
    SUBCASE("huge offset") { CHECK(mentions(parse_error_of(file_with({8}, 0, ~0ull - 31)), "past the end")); }
    SUBCASE("size past end") { CHECK(mentions(parse_error_of(file_with({8}, 0, 0, 31)), "past the end")); }
    SUBCASE("data section past end") {
        auto b = raw_file{}.header(1, 0).tensor("w", {8}, 0, 0).bytes;
        CHECK(mentions(parse_error_of(b), "data section"));
    }
    SUBCASE("overlapping tensors") {
        auto b = raw_file{}.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(64).bytes;
        auto e = parse_error_of(b);
        CHECK(mentions(e, "tensor 'b'"));
        CHECK(mentions(e, "overlaps tensor 'a'"));
    }
    SUBCASE("duplicate tensor name") {
        auto b = raw_file{}.header(2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).pad().zeros(64).bytes;
        auto e = parse_error_of(b);
        CHECK(mentions(e, "tensor 'a'"));
        CHECK(mentions(e, "duplicate tensor name"));
    }
    SUBCASE("truncated tensor info") {
        auto b = raw_file{}.header(1, 0).str("output.weight").put<uint32_t>(2).put<uint64_t>(8).bytes;
        auto e = parse_error_of(b);
        CHECK(mentions(e, "tensor 'output.weight'"));
        CHECK(mentions(e, "truncated"));
    }
    SUBCASE("custom alignment applies to offsets") {
        auto b = raw_file{}.header(1, 1).kv_u32("general.alignment", 64).tensor("w", {8}, 0, 32).pad(64).zeros(64).bytes;
        CHECK(mentions(parse_error_of(b), "alignment 64"));
    }
}

TEST_CASE("stories260K.gguf opens with the expected metadata and tensors") {
    if (!fs::exists(stories_path)) {
        MESSAGE("skipped: " << stories_path << " absent");
        return;
    }
    auto f = gguf_file::open(stories_path);
    REQUIRE_MESSAGE(f.ok(), f.err().message);
    const gguf_file& g = **f;
    CHECK(*g.get_string("general.architecture") == "llama");
    CHECK(*g.get_uint("llama.embedding_length") == 64);
    CHECK(*g.get_uint("llama.block_count") == 5);
    const gguf_tensor_info* emb = g.find_tensor("token_embd.weight");
    REQUIRE(emb != nullptr);
    CHECK(emb->shape == std::vector<int64_t>{64, 512});
    CHECK(emb->type == tensor_type::f32);
    CHECK(emb->n_bytes == 64 * 512 * 4);
    auto tokens = g.get_string_array("tokenizer.ggml.tokens");
    REQUIRE_MESSAGE(tokens.ok(), tokens.err().message);
    CHECK(tokens->size() == 512);
    // Embedding values are small finite floats, read in place from the mapping.
    float first = 0;
    std::memcpy(&first, emb->data, 4);
    CHECK(std::isfinite(first));
    CHECK(std::abs(first) < 10);
}

TEST_CASE("re-writing stories260K.gguf reproduces the file byte for byte") {
    // The file was written by llama.cpp's tooling: identical bytes show that
    // our layout (ordering, padding, offsets) is the one llama.cpp reads.
    if (!fs::exists(stories_path)) {
        MESSAGE("skipped: " << stories_path << " absent");
        return;
    }
    const auto original = read_all(stories_path);
    auto f = gguf_file::parse(original, stories_path);
    REQUIRE_MESSAGE(f.ok(), f.err().message);
    gguf_writer w;
    if ((*f)->alignment() != gguf_default_alignment) w.set_alignment(static_cast<uint32_t>((*f)->alignment()));
    for (const auto& [k, v] : (*f)->metadata()) w.set_value(k, v);
    for (const auto& t : (*f)->tensors()) {
        w.add_tensor(t.name, t.shape, t.type, std::vector<std::byte>(t.data, t.data + t.n_bytes));
    }
    const auto rewritten = w.to_bytes();
    if ((*f)->version() == 3) {
        CHECK(rewritten.size() == original.size());
        const bool identical = rewritten == original;  // not CHECK(a == b): doctest would print 1 MB
        CHECK(identical);
    }
    auto again = gguf_file::parse(rewritten, "rewritten");
    REQUIRE(again.ok());
    CHECK((*again)->metadata().size() == (*f)->metadata().size());
}

TEST_CASE("every tokenizer conformance GGUF opens") {
    const fs::path dir = conformance_dir + "/tokenizer";
    if (!fs::exists(dir)) {
        MESSAGE("skipped: " << dir.string() << " absent");
        return;
    }
    int n_files = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".gguf") continue;
        ++n_files;
        auto f = gguf_file::open(entry.path().string());
        REQUIRE_MESSAGE(f.ok(), f.err().message);
        auto tokens = (*f)->get_string_array("tokenizer.ggml.tokens");
        CHECK_MESSAGE(tokens.ok(), entry.path().string());
        if (tokens.ok()) CHECK(tokens->size() > 1000);
    }
    CHECK(n_files > 0);
}

TEST_CASE("every truncated prefix of stories260K.gguf is an error, never a crash") {
    if (!fs::exists(stories_path)) {
        MESSAGE("skipped: " << stories_path << " absent");
        return;
    }
    const auto bytes = read_all(stories_path);
    auto whole = gguf_file::parse(bytes, "stories260K.gguf");
    REQUIRE(whole.ok());
    // The smallest prefix that still holds every tensor's bytes: shorter is
    // an error; the trailing padding after it may go.
    size_t data_end = 0;
    for (const auto& t : (*whole)->tensors()) {
        data_end = std::max(data_end, static_cast<size_t>(t.data - bytes.data()) + t.n_bytes);
    }
    std::vector<size_t> lengths;
    for (size_t n = 0; n < std::min<size_t>(4096, bytes.size()); ++n) lengths.push_back(n);
    for (size_t n = 4096; n < bytes.size(); n += 997) lengths.push_back(n);
    int n_errors = 0;
    for (size_t n : lengths) {
        // A copy of exactly n bytes, so that the sanitizer sees reads past it.
        std::vector<std::byte> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        auto f = gguf_file::parse(prefix, "prefix");
        if (n < data_end) {
            CHECK_MESSAGE(!f.ok(), "prefix of " << n << " bytes parsed");
            if (!f.ok()) ++n_errors;
        }
    }
    CHECK(n_errors > 5000);
}

TEST_CASE("random byte flips in the header never crash and never yield out-of-bounds tensors") {
    if (!fs::exists(stories_path)) {
        MESSAGE("skipped: " << stories_path << " absent");
        return;
    }
    const auto original = read_all(stories_path);
    auto whole = gguf_file::parse(original, "stories260K.gguf");
    REQUIRE(whole.ok());
    size_t header_end = original.size();
    for (const auto& t : (*whole)->tensors()) header_end = std::min(header_end, static_cast<size_t>(t.data - original.data()));
    std::mt19937 rng(12345);
    std::uniform_int_distribution<size_t> pos(0, header_end - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<int> n_flips(1, 4);
    int n_ok = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        auto bytes = original;
        for (int k = n_flips(rng); k > 0; --k) bytes[pos(rng)] = static_cast<std::byte>(byte(rng));
        auto f = gguf_file::parse(bytes, "flipped");
        if (!f.ok()) continue;
        ++n_ok;
        for (const auto& t : (*f)->tensors()) {
            REQUIRE(t.data >= bytes.data());
            REQUIRE(t.data + t.n_bytes <= bytes.data() + bytes.size());
        }
    }
    MESSAGE(n_ok << " of 3000 flipped files still parsed");
}
