// GGUF v3 writer: header, metadata in insertion order, tensor infos, padding
// to the alignment, then each tensor's bytes padded to the alignment (as
// llama.cpp lays files out, so they load there too).
#include "inference/gguf/gguf.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

namespace tachyon {
namespace {

uint64_t align_up(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

class byte_sink {
public:
    explicit byte_sink(std::vector<std::byte>& out) : out_(out) {}

    template <class T>
    void scalar(T v) {
        const size_t at = out_.size();
        out_.resize(at + sizeof(T));
        std::memcpy(out_.data() + at, &v, sizeof(T));
    }
    void string(std::string_view s) {
        scalar<uint64_t>(s.size());
        const auto* p = reinterpret_cast<const std::byte*>(s.data());
        out_.insert(out_.end(), p, p + s.size());
    }
    void pad_to(uint64_t alignment) { out_.resize(align_up(out_.size(), alignment), std::byte{0}); }

    void value(const gguf_value& v, int depth);

private:
    void integer(gguf_value_type type, uint64_t u, int64_t i, bool is_signed);
    void array(const gguf_value& v, int depth);

    std::vector<std::byte>& out_;
};

// Writes an integer of `type`, asserting that the value fits it.
void byte_sink::integer(gguf_value_type type, uint64_t u, int64_t i, bool is_signed) {
    auto fits_unsigned = [&](uint64_t max) { return is_signed ? i >= 0 && static_cast<uint64_t>(i) <= max : u <= max; };
    auto fits_signed = [&](int64_t min, int64_t max) {
        return is_signed ? i >= min && i <= max : u <= static_cast<uint64_t>(max);
    };
    const uint64_t as_u = is_signed ? static_cast<uint64_t>(i) : u;
    switch (type) {
        case gguf_value_type::u8: TACHYON_ASSERT(fits_unsigned(UINT8_MAX), "gguf_writer: value does not fit u8"); scalar<uint8_t>(static_cast<uint8_t>(as_u)); return;
        case gguf_value_type::u16: TACHYON_ASSERT(fits_unsigned(UINT16_MAX), "gguf_writer: value does not fit u16"); scalar<uint16_t>(static_cast<uint16_t>(as_u)); return;
        case gguf_value_type::u32: TACHYON_ASSERT(fits_unsigned(UINT32_MAX), "gguf_writer: value does not fit u32"); scalar<uint32_t>(static_cast<uint32_t>(as_u)); return;
        case gguf_value_type::u64: TACHYON_ASSERT(fits_unsigned(UINT64_MAX), "gguf_writer: value does not fit u64"); scalar<uint64_t>(as_u); return;
        case gguf_value_type::i8: TACHYON_ASSERT(fits_signed(INT8_MIN, INT8_MAX), "gguf_writer: value does not fit i8"); scalar<int8_t>(static_cast<int8_t>(as_u)); return;
        case gguf_value_type::i16: TACHYON_ASSERT(fits_signed(INT16_MIN, INT16_MAX), "gguf_writer: value does not fit i16"); scalar<int16_t>(static_cast<int16_t>(as_u)); return;
        case gguf_value_type::i32: TACHYON_ASSERT(fits_signed(INT32_MIN, INT32_MAX), "gguf_writer: value does not fit i32"); scalar<int32_t>(static_cast<int32_t>(as_u)); return;
        case gguf_value_type::i64: TACHYON_ASSERT(fits_signed(INT64_MIN, INT64_MAX), "gguf_writer: value does not fit i64"); scalar<int64_t>(static_cast<int64_t>(as_u)); return;
        default: break;
    }
    TACHYON_ASSERT(false, "gguf_writer: integer() on a non-integer type");
}

template <class T>
const T& expect(const gguf_value& v) {
    const T* p = std::get_if<T>(&v.data);
    TACHYON_ASSERT(p != nullptr, "gguf_writer: value of type " + v.type_name() + " holds the wrong data alternative");
    return *p;
}

void byte_sink::value(const gguf_value& v, int depth) {
    switch (v.type) {
        case gguf_value_type::u8: case gguf_value_type::u16: case gguf_value_type::u32: case gguf_value_type::u64:
            integer(v.type, expect<uint64_t>(v), 0, false);
            return;
        case gguf_value_type::i8: case gguf_value_type::i16: case gguf_value_type::i32: case gguf_value_type::i64:
            integer(v.type, 0, expect<int64_t>(v), true);
            return;
        case gguf_value_type::f32: scalar<float>(static_cast<float>(expect<double>(v))); return;
        case gguf_value_type::f64: scalar<double>(expect<double>(v)); return;
        case gguf_value_type::boolean: scalar<uint8_t>(expect<bool>(v) ? 1 : 0); return;
        case gguf_value_type::string: string(expect<std::string>(v)); return;
        case gguf_value_type::array: array(v, depth); return;
    }
    TACHYON_ASSERT(false, "gguf_writer: unknown value type");
}

void byte_sink::array(const gguf_value& v, int depth) {
    TACHYON_ASSERT(depth < gguf_max_array_depth, "gguf_writer: arrays nested too deep for the reader");
    scalar<uint32_t>(static_cast<uint32_t>(v.elem_type));
    switch (v.elem_type) {
        case gguf_value_type::string: {
            const auto& items = expect<std::vector<std::string>>(v);
            scalar<uint64_t>(items.size());
            for (const auto& s : items) string(s);
            return;
        }
        case gguf_value_type::u8: case gguf_value_type::u16: case gguf_value_type::u32: case gguf_value_type::u64:
        case gguf_value_type::i8: case gguf_value_type::i16: case gguf_value_type::i32: case gguf_value_type::i64: {
            const auto& items = expect<std::vector<int64_t>>(v);
            scalar<uint64_t>(items.size());
            for (int64_t x : items) integer(v.elem_type, 0, x, true);
            return;
        }
        case gguf_value_type::f32: case gguf_value_type::f64: {
            const auto& items = expect<std::vector<double>>(v);
            scalar<uint64_t>(items.size());
            for (double x : items) {
                if (v.elem_type == gguf_value_type::f32) scalar<float>(static_cast<float>(x));
                else scalar<double>(x);
            }
            return;
        }
        case gguf_value_type::boolean: case gguf_value_type::array: {
            const auto& items = expect<std::vector<gguf_value>>(v);
            scalar<uint64_t>(items.size());
            for (const auto& x : items) {
                TACHYON_ASSERT(x.type == v.elem_type, "gguf_writer: array element of type " + x.type_name() +
                                                          " in an array of " + std::string(to_string(v.elem_type)));
                value(x, depth + 1);
            }
            return;
        }
    }
    TACHYON_ASSERT(false, "gguf_writer: unknown array element type");
}

gguf_value scalar_value(gguf_value_type type, decltype(gguf_value::data) data) {
    gguf_value v;
    v.type = type;
    v.data = std::move(data);
    return v;
}

gguf_value array_value(gguf_value_type elem_type, decltype(gguf_value::data) data) {
    gguf_value v;
    v.type = gguf_value_type::array;
    v.elem_type = elem_type;
    v.data = std::move(data);
    return v;
}

}  // namespace

void gguf_writer::set_uint32(std::string key, uint32_t v) { set_value(std::move(key), scalar_value(gguf_value_type::u32, uint64_t{v})); }
void gguf_writer::set_int32(std::string key, int32_t v) { set_value(std::move(key), scalar_value(gguf_value_type::i32, int64_t{v})); }
void gguf_writer::set_uint64(std::string key, uint64_t v) { set_value(std::move(key), scalar_value(gguf_value_type::u64, v)); }
void gguf_writer::set_float32(std::string key, float v) { set_value(std::move(key), scalar_value(gguf_value_type::f32, double{v})); }
void gguf_writer::set_bool(std::string key, bool v) { set_value(std::move(key), scalar_value(gguf_value_type::boolean, v)); }
void gguf_writer::set_string(std::string key, std::string v) { set_value(std::move(key), scalar_value(gguf_value_type::string, std::move(v))); }

void gguf_writer::set_string_array(std::string key, std::vector<std::string> v) {
    set_value(std::move(key), array_value(gguf_value_type::string, std::move(v)));
}
void gguf_writer::set_int32_array(std::string key, std::vector<int32_t> v) {
    set_value(std::move(key), array_value(gguf_value_type::i32, std::vector<int64_t>(v.begin(), v.end())));
}
void gguf_writer::set_float32_array(std::string key, std::vector<float> v) {
    set_value(std::move(key), array_value(gguf_value_type::f32, std::vector<double>(v.begin(), v.end())));
}

void gguf_writer::set_value(std::string key, gguf_value v) {
    for (auto& [k, existing] : kv_) {
        if (k == key) {
            existing = std::move(v);
            return;
        }
    }
    kv_.emplace_back(std::move(key), std::move(v));
}

void gguf_writer::add_tensor(std::string name, std::vector<int64_t> shape, tensor_type type, std::vector<std::byte> data) {
    for (const auto& t : tensors_) TACHYON_ASSERT(t.name != name, "gguf_writer: duplicate tensor '" + name + "'");
    TACHYON_ASSERT(!shape.empty() && shape.size() <= gguf_max_dims, "gguf_writer: tensor '" + name + "' needs 1..4 dims");
    const auto traits = traits_of(static_cast<uint32_t>(type));
    TACHYON_ASSERT(traits.has_value(), "gguf_writer: tensor '" + name + "' has an unknown type");
    int64_t n = 1;
    for (int64_t d : shape) {
        TACHYON_ASSERT(d > 0 && n <= std::numeric_limits<int64_t>::max() / d, "gguf_writer: bad shape of tensor '" + name + "'");
        n *= d;
    }
    TACHYON_ASSERT(shape[0] % traits->block_size == 0,
                   "gguf_writer: row length of tensor '" + name + "' is not a multiple of the block size");
    TACHYON_ASSERT(data.size() == row_bytes(*traits, n),
                   "gguf_writer: tensor '" + name + "' has " + std::to_string(data.size()) + " bytes, its shape needs " +
                       std::to_string(row_bytes(*traits, n)));
    tensors_.push_back(pending_tensor{std::move(name), std::move(shape), type, std::move(data)});
}

void gguf_writer::set_alignment(uint32_t alignment) {
    TACHYON_ASSERT(alignment != 0 && std::has_single_bit(alignment), "gguf_writer: alignment must be a power of two");
    alignment_ = alignment;
    set_uint32("general.alignment", alignment);
}

std::vector<std::byte> gguf_writer::to_bytes() const {
    std::vector<std::byte> out;
    byte_sink sink(out);
    sink.scalar<uint32_t>(0x46554747);  // "GGUF"
    sink.scalar<uint32_t>(3);
    sink.scalar<uint64_t>(tensors_.size());
    sink.scalar<uint64_t>(kv_.size());
    for (const auto& [key, v] : kv_) {
        sink.string(key);
        sink.scalar<uint32_t>(static_cast<uint32_t>(v.type));
        sink.value(v, 0);
    }
    uint64_t offset = 0;  // relative to the data section
    for (const auto& t : tensors_) {
        sink.string(t.name);
        sink.scalar<uint32_t>(static_cast<uint32_t>(t.shape.size()));
        for (int64_t d : t.shape) sink.scalar<uint64_t>(static_cast<uint64_t>(d));
        sink.scalar<uint32_t>(static_cast<uint32_t>(t.type));
        sink.scalar<uint64_t>(offset);
        offset += align_up(t.data.size(), alignment_);
    }
    sink.pad_to(alignment_);
    for (const auto& t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        sink.pad_to(alignment_);
    }
    return out;
}

status gguf_writer::write(const std::string& path) const {
    const std::vector<std::byte> bytes = to_bytes();  // whole image in memory: files we write are small
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return make_error(errc::io_error, path + ": cannot create: " + std::strerror(errno));
    const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
    const bool closed = std::fclose(f) == 0;
    if (written != bytes.size() || !closed) {
        return make_error(errc::io_error, path + ": write failed: " + std::strerror(errno));
    }
    return {};
}

}  // namespace tachyon
