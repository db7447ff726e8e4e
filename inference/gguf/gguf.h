// GGUF files (v2 and v3): a reader over a read-only mmap and a writer.
//
// The reader validates the whole header before returning: every string and
// array length, every tensor's shape, type, offset and size is checked
// against the file, so a corrupt file yields an error naming the file and the
// key or tensor, never a crash or an unbounded allocation. Tensor data is
// used in place from the mapping (no copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "inference/gguf/tensor_type.h"

namespace tachyon {

// GGUF metadata value types (gguf_type).
enum class gguf_value_type : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
    string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};

class mapped_file;

// "u32", "string", "array" ...
std::string_view to_string(gguf_value_type type);

struct gguf_value;
using gguf_array = std::vector<gguf_value>;

// One metadata value. Large arrays of scalars/strings (vocabularies: 100k+
// entries) are kept as typed vectors rather than vectors of gguf_value.
//
// Which alternative `data` holds follows from `type` (and `elem_type`):
//   u8 u16 u32 u64 → uint64_t     i8 i16 i32 i64 → int64_t
//   f32 f64 → double   boolean → bool   string → std::string
//   array of string → vector<string>; of any integer type → vector<int64_t>
//   (a u64 element above INT64_MAX is rejected by the reader); of f32/f64 →
//   vector<double>; of booleans or arrays → vector<gguf_value>.
// The writer asserts this correspondence; the reader always produces it.
struct gguf_value {
    gguf_value_type type = gguf_value_type::u8;
    gguf_value_type elem_type = gguf_value_type::u8;  // for arrays
    std::variant<uint64_t, int64_t, double, bool, std::string,
                 std::vector<std::string>,     // array of strings
                 std::vector<int64_t>,         // array of signed/unsigned ints (u64 > INT64_MAX not representable)
                 std::vector<double>,          // array of floats
                 std::vector<gguf_value>>      // array of arrays / bools
        data;

    // "u32", "string", "array of string", "array of array of f32" ...
    std::string type_name() const;

    bool operator==(const gguf_value&) const = default;
};

struct gguf_tensor_info {
    std::string name;
    std::vector<int64_t> shape;   // ne[0] is the fastest-varying (row length)
    tensor_type type = tensor_type::f32;
    uint64_t offset = 0;          // relative to the data section
    uint64_t n_bytes = 0;
    const std::byte* data = nullptr;  // into the mapping (reader) or nullptr

    int64_t n_elements() const;
};

// Limits of the reader (and of what the writer accepts).
inline constexpr uint32_t gguf_max_dims = 4;
inline constexpr int gguf_max_array_depth = 16;  // arrays of arrays nest at most this deep
inline constexpr uint64_t gguf_default_alignment = 32;

class gguf_file {
public:
    // Maps and validates `path`. Errors name the file and what was wrong.
    static result<std::unique_ptr<gguf_file>> open(const std::string& path);
    // Parses an in-memory image (tests, fuzzing); `bytes` must outlive the file.
    // Tensor data pointers point into `bytes`.
    static result<std::unique_ptr<gguf_file>> parse(std::span<const std::byte> bytes, std::string name = "<memory>");

    ~gguf_file();
    gguf_file(const gguf_file&) = delete;
    gguf_file& operator=(const gguf_file&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }

    // Metadata, in file order.
    const std::vector<std::pair<std::string, gguf_value>>& metadata() const { return kv_; }
    const gguf_value* find(std::string_view key) const;

    // Typed lookups. A missing key (errc::not_found) or a wrong type
    // (errc::parse_error) is an error that names the file, the key and the
    // expected type; a value that does not fit (a negative value for
    // get_uint, a u64 above INT64_MAX for get_int) is errc::out_of_range.
    result<std::string> get_string(std::string_view key) const;
    result<uint64_t> get_uint(std::string_view key) const;   // any non-negative integer type
    result<int64_t> get_int(std::string_view key) const;     // any integer type
    result<double> get_float(std::string_view key) const;    // f32/f64 (and integers)
    result<bool> get_bool(std::string_view key) const;
    result<std::vector<std::string>> get_string_array(std::string_view key) const;
    result<std::vector<int64_t>> get_int_array(std::string_view key) const;
    result<std::vector<double>> get_float_array(std::string_view key) const;

    const std::vector<gguf_tensor_info>& tensors() const { return tensors_; }
    const gguf_tensor_info* find_tensor(std::string_view name) const;

    // Lets the mapped pages wholly inside [p, p + n) go from memory (a model
    // that uses a packed copy of a tensor instead); touched again, they are
    // read back from the file. Does nothing for a parsed in-memory image.
    void release_pages(const void* p, size_t n) const;

    // Copies [p, p + n) of the file's data to dst without mapping its pages
    // into memory (mapped_file::copy); a plain copy for an in-memory image.
    void copy_bytes(const void* p, size_t n, void* dst) const;

private:
    gguf_file() = default;

    std::string path_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    std::vector<std::pair<std::string, gguf_value>> kv_;
    std::map<std::string, size_t, std::less<>> kv_index_;
    std::vector<gguf_tensor_info> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
    std::unique_ptr<mapped_file> map_;  // set when opened from a path
};

// Builds a GGUF v3 file: metadata in insertion order, tensors aligned.
class gguf_writer {
public:
    void set_uint32(std::string key, uint32_t v);
    void set_int32(std::string key, int32_t v);
    void set_uint64(std::string key, uint64_t v);
    void set_float32(std::string key, float v);
    void set_bool(std::string key, bool v);
    void set_string(std::string key, std::string v);
    void set_string_array(std::string key, std::vector<std::string> v);
    void set_int32_array(std::string key, std::vector<int32_t> v);
    void set_float32_array(std::string key, std::vector<float> v);
    void set_value(std::string key, gguf_value v);  // any value, incl. nested arrays
    // Setting a key again replaces its value in place (keeps its position).

    // `data` must hold exactly the bytes of `shape` in `type`; the shape and
    // a unique name follow the reader's rules (asserted: a bad tensor here is
    // a bug, so callers with untrusted input validate first). llama.cpp also
    // needs names of at most 63 bytes; not checked here.
    void add_tensor(std::string name, std::vector<int64_t> shape, tensor_type type, std::vector<std::byte> data);

    void set_alignment(uint32_t alignment);  // a power of two; also written as general.alignment
    std::vector<std::byte> to_bytes() const;
    status write(const std::string& path) const;

private:
    struct pending_tensor {
        std::string name;
        std::vector<int64_t> shape;
        tensor_type type;
        std::vector<std::byte> data;
    };
    std::vector<std::pair<std::string, gguf_value>> kv_;
    std::vector<pending_tensor> tensors_;
    uint32_t alignment_ = 32;
};

}  // namespace tachyon
