// GGUF reader. Layout (v2 and v3, little-endian):
//   "GGUF" u32 version  u64 n_tensors  u64 n_kv
//   n_kv × (string key, u32 value type, value)
//   n_tensors × (string name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset)
//   padding to `alignment`, then the data section; tensor offsets are
//   relative to its start. A string is u64 length + bytes (no terminator); an
//   array is u32 element type + u64 count + elements.
//
// Every count read from the file is checked against the bytes that remain
// before anything is allocated from it, so the memory a corrupt file can make
// us allocate is bounded by a small multiple of its size.
#include "inference/gguf/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "inference/gguf/mapped_file.h"

namespace tachyon {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace {

constexpr uint32_t gguf_magic = 0x46554747;  // "GGUF" read as little-endian u32

bool is_unsigned(gguf_value_type t) {
    return t == gguf_value_type::u8 || t == gguf_value_type::u16 || t == gguf_value_type::u32 ||
           t == gguf_value_type::u64;
}
bool is_signed(gguf_value_type t) {
    return t == gguf_value_type::i8 || t == gguf_value_type::i16 || t == gguf_value_type::i32 ||
           t == gguf_value_type::i64;
}
bool is_integer(gguf_value_type t) { return is_unsigned(t) || is_signed(t); }
bool is_float(gguf_value_type t) { return t == gguf_value_type::f32 || t == gguf_value_type::f64; }

// Bytes of a fixed-size scalar, 0 for string and array.
size_t scalar_size(gguf_value_type t) {
    switch (t) {
        case gguf_value_type::u8: case gguf_value_type::i8: case gguf_value_type::boolean: return 1;
        case gguf_value_type::u16: case gguf_value_type::i16: return 2;
        case gguf_value_type::u32: case gguf_value_type::i32: case gguf_value_type::f32: return 4;
        case gguf_value_type::u64: case gguf_value_type::i64: case gguf_value_type::f64: return 8;
        case gguf_value_type::string: case gguf_value_type::array: return 0;
    }
    return 0;
}

// The fewest bytes one value of type t can occupy in a file: what bounds a
// count before we allocate for it.
size_t min_encoded_size(gguf_value_type t) {
    if (t == gguf_value_type::string) return 8;   // u64 length
    if (t == gguf_value_type::array) return 12;   // u32 type + u64 count
    return scalar_size(t);
}

std::string quoted(std::string_view s) {
    // Names come from the file: keep messages printable and short.
    std::string out = "'";
    size_t n = 0;
    for (unsigned char c : s) {
        if (++n > 96) { out += "..."; break; }
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            static const char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out + "'";
}

// What the reader is reading, for error messages: "value of key 'x'",
// "tensor 'y'". `index` >= 0 names an array element.
struct item {
    const char* what;
    std::string_view name = {};
    int64_t index = -1;

    std::string describe() const {
        std::string s = what;
        if (!name.empty()) s += " " + quoted(name);
        if (index >= 0) s += " (element " + std::to_string(index) + ")";
        return s;
    }
};

class reader {
public:
    reader(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return bytes_.size() - pos_; }

    error fail(errc code, const item& at, const std::string& detail) const {
        return make_error(code, file_ + ": " + at.describe() + ": " + detail);
    }
    error truncated(const item& at, size_t needed) const {
        return fail(errc::parse_error, at,
                    "file truncated at offset " + std::to_string(pos_) + " (needs " + std::to_string(needed) +
                        " more bytes, " + std::to_string(remaining()) + " left)");
    }

    template <class T>
    result<T> scalar(const item& at) {
        if (remaining() < sizeof(T)) return truncated(at, sizeof(T));
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    result<std::string> string(const item& at) {
        auto n = scalar<uint64_t>(at);
        if (!n) return n.err();
        if (*n > remaining()) {
            return fail(errc::parse_error, at,
                        "string length " + std::to_string(*n) + " at offset " + std::to_string(pos_ - 8) +
                            " runs past the end of the file (" + std::to_string(remaining()) + " bytes left)");
        }
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(*n));
        pos_ += static_cast<size_t>(*n);
        return s;
    }

    result<gguf_value_type> value_type(const item& at) {
        auto t = scalar<uint32_t>(at);
        if (!t) return t.err();
        if (*t > static_cast<uint32_t>(gguf_value_type::f64)) {
            return fail(errc::parse_error, at, "unknown value type " + std::to_string(*t) + " (expected 0..12)");
        }
        return static_cast<gguf_value_type>(*t);
    }

    result<gguf_value> value(gguf_value_type type, const item& at, int depth);

private:
    // A fixed-size integer/float/bool scalar, widened to the variant's type.
    template <class T>
    result<T> widened(gguf_value_type type, const item& at);
    result<gguf_value> array(const item& at, int depth);

    std::span<const std::byte> bytes_;
    const std::string& file_;
    size_t pos_ = 0;
};

template <class T>
result<T> reader::widened(gguf_value_type type, const item& at) {
    auto get = [&]<class S>(S) -> result<T> {
        auto v = scalar<S>(at);
        if (!v) return v.err();
        return static_cast<T>(*v);
    };
    switch (type) {
        case gguf_value_type::u8: return get(uint8_t{});
        case gguf_value_type::i8: return get(int8_t{});
        case gguf_value_type::u16: return get(uint16_t{});
        case gguf_value_type::i16: return get(int16_t{});
        case gguf_value_type::u32: return get(uint32_t{});
        case gguf_value_type::i32: return get(int32_t{});
        case gguf_value_type::u64: return get(uint64_t{});
        case gguf_value_type::i64: return get(int64_t{});
        case gguf_value_type::f32: return get(float{});
        case gguf_value_type::f64: return get(double{});
        case gguf_value_type::boolean: return get(uint8_t{});
        default: break;
    }
    TACHYON_ASSERT(false, "widened() on a non-scalar type");
    return T{};
}

result<gguf_value> reader::value(gguf_value_type type, const item& at, int depth) {
    gguf_value v;
    v.type = type;
    if (type == gguf_value_type::string) {
        auto s = string(at);
        if (!s) return s.err();
        v.data = std::move(*s);
    } else if (type == gguf_value_type::array) {
        return array(at, depth);
    } else if (type == gguf_value_type::boolean) {
        auto b = scalar<uint8_t>(at);
        if (!b) return b.err();
        v.data = *b != 0;
    } else if (is_unsigned(type)) {
        auto u = widened<uint64_t>(type, at);
        if (!u) return u.err();
        v.data = *u;
    } else if (is_signed(type)) {
        auto i = widened<int64_t>(type, at);
        if (!i) return i.err();
        v.data = *i;
    } else {
        auto f = widened<double>(type, at);
        if (!f) return f.err();
        v.data = *f;
    }
    return v;
}

result<gguf_value> reader::array(const item& at, int depth) {
    if (depth >= gguf_max_array_depth) {
        return fail(errc::unsupported, at,
                    "arrays nested deeper than " + std::to_string(gguf_max_array_depth) + " levels");
    }
    auto elem = value_type(at);
    if (!elem) return elem.err();
    auto count = scalar<uint64_t>(at);
    if (!count) return count.err();
    const uint64_t n = *count;
    // Bound the count by what the remaining bytes can hold before reserving.
    if (n > remaining() / min_encoded_size(*elem)) {
        return fail(errc::parse_error, at,
                    "array of " + std::to_string(n) + " " + std::string(to_string(*elem)) +
                        " elements runs past the end of the file (" + std::to_string(remaining()) + " bytes left)");
    }
    gguf_value v;
    v.type = gguf_value_type::array;
    v.elem_type = *elem;
    auto element = [&](uint64_t i) { return item{at.what, at.name, static_cast<int64_t>(i)}; };

    if (*elem == gguf_value_type::string) {
        std::vector<std::string> out;
        out.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
            auto s = string(element(i));
            if (!s) return s.err();
            out.push_back(std::move(*s));
        }
        v.data = std::move(out);
    } else if (is_integer(*elem)) {
        std::vector<int64_t> out;
        out.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
            if (*elem == gguf_value_type::u64) {
                auto u = scalar<uint64_t>(element(i));  // cannot fail: size checked above
                if (!u) return u.err();
                if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                    return fail(errc::unsupported, element(i),
                                "u64 array element " + std::to_string(*u) + " is above INT64_MAX");
                }
                out.push_back(static_cast<int64_t>(*u));
            } else {
                auto x = widened<int64_t>(*elem, element(i));
                if (!x) return x.err();
                out.push_back(*x);
            }
        }
        v.data = std::move(out);
    } else if (is_float(*elem)) {
        std::vector<double> out;
        out.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
            auto x = widened<double>(*elem, element(i));
            if (!x) return x.err();
            out.push_back(*x);
        }
        v.data = std::move(out);
    } else {  // booleans and arrays
        std::vector<gguf_value> out;
        out.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
            auto x = value(*elem, element(i), depth + 1);
            if (!x) return x.err();
            out.push_back(std::move(*x));
        }
        v.data = std::move(out);
    }
    return v;
}

// Reads one tensor info and checks everything that does not depend on the
// other tensors or on where the data section starts.
result<gguf_tensor_info> read_tensor_info(reader& r, uint64_t index, uint64_t alignment) {
    const std::string placeholder = "#" + std::to_string(index);
    auto name = r.string(item{"name of tensor", placeholder});
    if (!name) return name.err();
    gguf_tensor_info t;
    t.name = std::move(*name);
    const item at{"tensor", t.name};

    auto n_dims = r.scalar<uint32_t>(at);
    if (!n_dims) return n_dims.err();
    if (*n_dims < 1 || *n_dims > gguf_max_dims) {
        return r.fail(errc::parse_error, at,
                      std::to_string(*n_dims) + " dimensions (expected 1.." + std::to_string(gguf_max_dims) + ")");
    }
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < *n_dims; ++d) {
        auto dim = r.scalar<uint64_t>(at);
        if (!dim) return dim.err();
        // A u64 above INT64_MAX reads as negative: rejected with the rest.
        const auto ne = static_cast<int64_t>(*dim);
        if (ne <= 0) {
            return r.fail(errc::parse_error, at,
                          "dimension " + std::to_string(d) + " is " + std::to_string(ne) + " (expected > 0)");
        }
        if (n_elements > std::numeric_limits<int64_t>::max() / ne) {
            return r.fail(errc::out_of_range, at, "element count overflows 64 bits");
        }
        n_elements *= ne;
        t.shape.push_back(ne);
    }
    auto type = r.scalar<uint32_t>(at);
    if (!type) return type.err();
    auto traits = traits_of(*type);
    if (!traits) return r.fail(errc::parse_error, at, "unknown tensor type " + std::to_string(*type));
    t.type = static_cast<tensor_type>(*type);
    if (t.shape[0] % traits->block_size != 0) {
        return r.fail(errc::parse_error, at,
                      "row length " + std::to_string(t.shape[0]) + " is not a multiple of the block size " +
                          std::to_string(traits->block_size) + " of type " + std::string(traits->name));
    }
    const uint64_t n_blocks = static_cast<uint64_t>(n_elements) / traits->block_size;
    if (n_blocks > std::numeric_limits<uint64_t>::max() / traits->type_size) {
        return r.fail(errc::out_of_range, at, "byte size overflows 64 bits");
    }
    t.n_bytes = n_blocks * traits->type_size;

    auto offset = r.scalar<uint64_t>(at);
    if (!offset) return offset.err();
    t.offset = *offset;
    if (t.offset % alignment != 0) {
        return r.fail(errc::parse_error, at,
                      "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                          std::to_string(alignment));
    }
    return t;
}

}  // namespace

std::string_view to_string(gguf_value_type type) {
    switch (type) {
        case gguf_value_type::u8: return "u8";
        case gguf_value_type::i8: return "i8";
        case gguf_value_type::u16: return "u16";
        case gguf_value_type::i16: return "i16";
        case gguf_value_type::u32: return "u32";
        case gguf_value_type::i32: return "i32";
        case gguf_value_type::f32: return "f32";
        case gguf_value_type::boolean: return "bool";
        case gguf_value_type::string: return "string";
        case gguf_value_type::array: return "array";
        case gguf_value_type::u64: return "u64";
        case gguf_value_type::i64: return "i64";
        case gguf_value_type::f64: return "f64";
    }
    return "unknown";
}

std::string gguf_value::type_name() const {
    if (type != gguf_value_type::array) return std::string(to_string(type));
    std::string inner(to_string(elem_type));
    if (elem_type == gguf_value_type::array) {
        // The inner arrays' element type: that of the first, if any.
        const auto* items = std::get_if<std::vector<gguf_value>>(&data);
        inner = items != nullptr && !items->empty() ? items->front().type_name() : "array";
    }
    return "array of " + inner;
}

int64_t gguf_tensor_info::n_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;  // no overflow: checked by the reader
    return n;
}

gguf_file::~gguf_file() = default;

result<std::unique_ptr<gguf_file>> gguf_file::open(const std::string& path) {
    auto map = mapped_file::open(path);
    if (!map) return map.err();
    auto file = parse((*map)->bytes(), path);
    if (!file) return file.err();
    (*file)->map_ = std::move(*map);
    return file;
}

result<std::unique_ptr<gguf_file>> gguf_file::parse(std::span<const std::byte> bytes, std::string name) {
    std::unique_ptr<gguf_file> file(new gguf_file());
    file->path_ = std::move(name);
    const std::string& path = file->path_;
    reader r(bytes, path);

    // --- header
    auto magic = r.scalar<uint32_t>(item{"header"});
    if (!magic) return magic.err();
    if (*magic != gguf_magic) {
        return make_error(errc::parse_error,
                          path + ": bad magic " +
                              quoted(std::string_view(reinterpret_cast<const char*>(bytes.data()), 4)) +
                              " (expected 'GGUF'): not a GGUF file");
    }
    auto version = r.scalar<uint32_t>(item{"header"});
    if (!version) return version.err();
    if (*version != 2 && *version != 3) {
        std::string hint;
        if (*version == 0x02000000 || *version == 0x03000000) hint = "; big-endian files are not supported";
        return make_error(errc::unsupported, path + ": unsupported version " + std::to_string(*version) +
                                                 " (expected 2 or 3)" + hint);
    }
    file->version_ = *version;
    auto n_tensors = r.scalar<uint64_t>(item{"header (tensor count)"});
    if (!n_tensors) return n_tensors.err();
    auto n_kv = r.scalar<uint64_t>(item{"header (metadata count)"});
    if (!n_kv) return n_kv.err();
    // Smallest encodings: a key-value is 8 (key length) + 4 (type) + 1 byte;
    // a tensor info is 8 (name length) + 4 (n_dims) + 8 (one dim) + 4 + 8.
    constexpr uint64_t min_kv_bytes = 13;
    constexpr uint64_t min_tensor_bytes = 32;
    const uint64_t left = r.remaining();
    if (*n_kv > left / min_kv_bytes || *n_tensors > left / min_tensor_bytes ||
        *n_kv * min_kv_bytes + *n_tensors * min_tensor_bytes > left) {
        return make_error(errc::parse_error,
                          path + ": header claims " + std::to_string(*n_kv) + " metadata keys and " +
                              std::to_string(*n_tensors) + " tensors, more than the remaining " +
                              std::to_string(left) + " bytes can hold (truncated or corrupt file)");
    }

    // --- metadata
    file->kv_.reserve(*n_kv);
    for (uint64_t i = 0; i < *n_kv; ++i) {
        const std::string placeholder = "#" + std::to_string(i);
        auto key = r.string(item{"metadata key", placeholder});
        if (!key) return key.err();
        if (file->kv_index_.count(*key) != 0) {
            return r.fail(errc::parse_error, item{"key", *key}, "duplicate key");
        }
        const item at{"value of key", *key};
        auto type = r.value_type(at);
        if (!type) return type.err();
        auto v = r.value(*type, at, 0);
        if (!v) return v.err();
        file->kv_index_.emplace(*key, file->kv_.size());
        file->kv_.emplace_back(std::move(*key), std::move(*v));
    }
    if (const gguf_value* a = file->find("general.alignment")) {
        if (a->type != gguf_value_type::u32) {
            return make_error(errc::parse_error,
                              path + ": key 'general.alignment' is " + a->type_name() + " (expected u32)");
        }
        const uint64_t alignment = std::get<uint64_t>(a->data);
        if (alignment == 0 || !std::has_single_bit(alignment)) {
            return make_error(errc::parse_error, path + ": key 'general.alignment' is " + std::to_string(alignment) +
                                                     " (expected a non-zero power of two)");
        }
        file->alignment_ = alignment;
    }

    // --- tensor infos
    file->tensors_.reserve(*n_tensors);
    for (uint64_t i = 0; i < *n_tensors; ++i) {
        auto t = read_tensor_info(r, i, file->alignment_);
        if (!t) return t.err();
        if (file->tensor_index_.count(t->name) != 0) {
            return r.fail(errc::parse_error, item{"tensor", t->name}, "duplicate tensor name");
        }
        file->tensor_index_.emplace(t->name, file->tensors_.size());
        file->tensors_.push_back(std::move(*t));
    }

    // --- data section: starts at the first aligned offset after the header.
    // A file without tensors may end before it.
    if (file->tensors_.empty()) return file;
    const uint64_t header_end = r.pos();
    const uint64_t data_start = (header_end + file->alignment_ - 1) / file->alignment_ * file->alignment_;
    if (data_start > bytes.size()) {
        return make_error(errc::parse_error, path + ": data section would start at offset " +
                                                 std::to_string(data_start) + ", past the end of the file (" +
                                                 std::to_string(bytes.size()) + " bytes)");
    }
    const uint64_t data_size = bytes.size() - data_start;
    for (auto& t : file->tensors_) {
        if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
            return r.fail(errc::parse_error, item{"tensor", t.name},
                          "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                              " bytes) runs past the end of the data section (" + std::to_string(data_size) +
                              " bytes): truncated file?");
        }
        t.data = bytes.data() + data_start + t.offset;
    }
    std::vector<const gguf_tensor_info*> by_offset;
    by_offset.reserve(file->tensors_.size());
    for (const auto& t : file->tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const auto* a = by_offset[i - 1];
        const auto* b = by_offset[i];
        if (a->offset + a->n_bytes > b->offset) {  // no overflow: both lie inside the file
            return r.fail(errc::parse_error, item{"tensor", b->name},
                          "data at offset " + std::to_string(b->offset) + " overlaps tensor " + quoted(a->name) +
                              " [" + std::to_string(a->offset) + ", +" + std::to_string(a->n_bytes) + " bytes)");
        }
    }
    return file;
}

const gguf_value* gguf_file::find(std::string_view key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const gguf_tensor_info* gguf_file::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void gguf_file::release_pages(const void* p, size_t n) const {
    if (map_ != nullptr) map_->release(p, n);
}

void gguf_file::copy_bytes(const void* p, size_t n, void* dst) const {
    if (map_ != nullptr) map_->copy(p, n, dst);
    else std::memcpy(dst, p, n);
}

// --- typed lookups -----------------------------------------------------------

namespace {

error missing(const std::string& path, std::string_view key, std::string_view expected) {
    return make_error(errc::not_found,
                      path + ": missing key '" + std::string(key) + "' (expected " + std::string(expected) + ")");
}
error wrong_type(const std::string& path, std::string_view key, const gguf_value& v, std::string_view expected) {
    return make_error(errc::parse_error, path + ": key '" + std::string(key) + "' is " + v.type_name() +
                                             " (expected " + std::string(expected) + ")");
}

}  // namespace

result<std::string> gguf_file::get_string(std::string_view key) const {
    const gguf_value* v = find(key);
    if (v == nullptr) return missing(path_, key, "string");
    if (v->type != gguf_value_type::string) return wrong_type(path_, key, *v, "string");
    return std::get<std::string>(v->data);
}

result<uint64_t> gguf_file::get_uint(std::string_view key) const {
    constexpr std::string_view expected = "an unsigned integer";
    const gguf_value* v = find(key);
    if (v == nullptr) return missing(path_, key, expected);
    if (is_unsigned(v->type)) return std::get<uint64_t>(v->data);
    if (is_signed(v->type)) {
        const int64_t i = std::get<int64_t>(v->data);
        if (i < 0) {
            return make_error(errc::out_of_range, path_ + ": key '" + std::string(key) + "' is " +
                                                      std::to_string(i) + " (expected a non-negative integer)");
        }
        return static_cast<uint64_t>(i);
    }
    return wrong_type(path_, key, *v, expected);
}

result<int64_t> gguf_file::get_int(std::string_view key) const {
    constexpr std::string_view expected = "an integer";
    const gguf_value* v = find(key);
    if (v == nullptr) return missing(path_, key, expected);
    if (is_signed(v->type)) return std::get<int64_t>(v->data);
    if (is_unsigned(v->type)) {
        const uint64_t u = std::get<uint64_t>(v->data);
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return make_error(errc::out_of_range, path_ + ": key '" + std::string(key) + "' is " +
                                                      std::to_string(u) + " (expected at most INT64_MAX)");
        }
        return static_cast<int64_t>(u);
    }
    return wrong_type(path_, key, *v, expected);
}

result<double> gguf_file::get_float(std::string_view key) const {
    constexpr std::string_view expected = "a number";
    const gguf_value* v = find(key);
    if (v == nullptr) return missing(path_, key, expected);
    if (is_float(v->type)) return std::get<double>(v->data);
    if (is_unsigned(v->type)) return static_cast<double>(std::get<uint64_t>(v->data));
    if (is_signed(v->type)) return static_cast<double>(std::get<int64_t>(v->data));
    return wrong_type(path_, key, *v, expected);
}

result<bool> gguf_file::get_bool(std::string_view key) const {
    const gguf_value* v = find(key);
    if (v == nullptr) return missing(path_, key, "bool");
    if (v->type != gguf_value_type::boolean) return wrong_type(path_, key, *v, "bool");
    return std::get<bool>(v->data);
}

result<std::vector<std::string>> gguf_file::get_string_array(std::string_view key) const {
    constexpr std::string_view expected = "array of string";
    const gguf_value* v = find(key);
    if (v == nullptr) return missing(path_, key, expected);
    if (v->type != gguf_value_type::array || v->elem_type != gguf_value_type::string) {
        return wrong_type(path_, key, *v, expected);
    }
    return std::get<std::vector<std::string>>(v->data);
}

result<std::vector<int64_t>> gguf_file::get_int_array(std::string_view key) const {
    constexpr std::string_view expected = "array of integers";
    const gguf_value* v = find(key);
    if (v == nullptr) return missing(path_, key, expected);
    if (v->type != gguf_value_type::array || !is_integer(v->elem_type)) return wrong_type(path_, key, *v, expected);
    return std::get<std::vector<int64_t>>(v->data);
}

result<std::vector<double>> gguf_file::get_float_array(std::string_view key) const {
    constexpr std::string_view expected = "array of numbers";
    const gguf_value* v = find(key);
    if (v == nullptr) return missing(path_, key, expected);
    if (v->type != gguf_value_type::array) return wrong_type(path_, key, *v, expected);
    if (is_float(v->elem_type)) return std::get<std::vector<double>>(v->data);
    if (is_integer(v->elem_type)) {
        const auto& ints = std::get<std::vector<int64_t>>(v->data);
        return std::vector<double>(ints.begin(), ints.end());
    }
    return wrong_type(path_, key, *v, expected);
}

}  // namespace tachyon
