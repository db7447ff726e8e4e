// incident-export: packages the trained model into a GGUF file.
//
// usage: incident-export HEADER.json OUT.gguf
//
// export.py writes HEADER.json (metadata in order, tensor list) and a raw
// data file of little-endian tensors already in their final type (F32, F16),
// so every decision (keys, names, types) is made once, in Python, and this
// program only validates and packages bytes with tachyon::gguf_writer, the
// same writer the project's tests use.
//
// HEADER.json:
//   {"data_file": "x.bin",
//    "metadata": [{"key": "general.architecture", "type": "string", "value": "llama"}, ...],
//    "tensors": [{"name": "token_embd.weight", "shape": [192, 2048], "type": "f16",
//                 "offset": 0, "n_bytes": 786432}, ...]}
// metadata types: string, u32, i32, f32, bool, string_array, i32_array, f32_array.
// shape is GGUF order: shape[0] is the row length (fastest-varying).

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <simdjson.h>

#include "base/result.h"
#include "inference/gguf/gguf.h"
#include "inference/gguf/tensor_type.h"

namespace {

using tachyon::errc;
using tachyon::make_error;
using tachyon::result;
using tachyon::status;

// Reading a tensor larger than this from the data file is refused: the model
// is a few MB; a header naming GBs is a broken header, not a model.
constexpr uint64_t max_tensor_bytes = uint64_t{1} << 30;

result<std::string> get_string(simdjson::dom::element e, const char* key, const std::string& where) {
    std::string_view v;
    if (e[key].get(v) != simdjson::SUCCESS) {
        return make_error(errc::parse_error, where + ": expected string field '" + key + "'");
    }
    return std::string(v);
}

result<uint64_t> get_u64(simdjson::dom::element e, const char* key, const std::string& where) {
    uint64_t v = 0;
    if (e[key].get(v) != simdjson::SUCCESS) {
        return make_error(errc::parse_error, where + ": expected non-negative integer field '" + key + "'");
    }
    return v;
}

// One metadata entry into the writer.
status add_metadata(tachyon::gguf_writer& w, simdjson::dom::element kv, const std::string& where) {
    auto key_r = get_string(kv, "key", where);
    if (!key_r) return key_r.err();
    const auto key = *key_r;
    auto type_r = get_string(kv, "type", where + " metadata");
    if (!type_r) return type_r.err();
    const auto type = *type_r;
    const std::string at = where + ": metadata '" + key + "'";
    simdjson::dom::element v;
    if (kv["value"].get(v) != simdjson::SUCCESS) {
        return make_error(errc::parse_error, at + ": no value");
    }
    if (type == "string") {
        std::string_view s;
        if (v.get(s) != simdjson::SUCCESS) return make_error(errc::parse_error, at + ": expected a string");
        w.set_string(key, std::string(s));
    } else if (type == "u32" || type == "i32") {
        int64_t x = 0;
        if (v.get(x) != simdjson::SUCCESS) return make_error(errc::parse_error, at + ": expected an integer");
        if (type == "u32") {
            if (x < 0 || x > std::numeric_limits<uint32_t>::max()) {
                return make_error(errc::out_of_range, at + ": value out of u32 range");
            }
            w.set_uint32(key, static_cast<uint32_t>(x));
        } else {
            if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
                return make_error(errc::out_of_range, at + ": value out of i32 range");
            }
            w.set_int32(key, static_cast<int32_t>(x));
        }
    } else if (type == "f32") {
        double x = 0;
        if (v.get(x) != simdjson::SUCCESS) return make_error(errc::parse_error, at + ": expected a number");
        w.set_float32(key, static_cast<float>(x));
    } else if (type == "bool") {
        bool x = false;
        if (v.get(x) != simdjson::SUCCESS) return make_error(errc::parse_error, at + ": expected true or false");
        w.set_bool(key, x);
    } else if (type == "string_array" || type == "i32_array" || type == "f32_array") {
        simdjson::dom::array arr;
        if (v.get(arr) != simdjson::SUCCESS) return make_error(errc::parse_error, at + ": expected an array");
        std::vector<std::string> strings;
        std::vector<int32_t> ints;
        std::vector<float> floats;
        for (simdjson::dom::element item : arr) {
            if (type == "string_array") {
                std::string_view s;
                if (item.get(s) != simdjson::SUCCESS) return make_error(errc::parse_error, at + ": expected strings");
                strings.emplace_back(s);
            } else if (type == "i32_array") {
                int64_t x = 0;
                if (item.get(x) != simdjson::SUCCESS || x < std::numeric_limits<int32_t>::min() ||
                    x > std::numeric_limits<int32_t>::max()) {
                    return make_error(errc::parse_error, at + ": expected i32 integers");
                }
                ints.push_back(static_cast<int32_t>(x));
            } else {
                double x = 0;
                if (item.get(x) != simdjson::SUCCESS) return make_error(errc::parse_error, at + ": expected numbers");
                floats.push_back(static_cast<float>(x));
            }
        }
        if (type == "string_array") w.set_string_array(key, std::move(strings));
        else if (type == "i32_array") w.set_int32_array(key, std::move(ints));
        else w.set_float32_array(key, std::move(floats));
    } else {
        return make_error(errc::unsupported, at + ": unknown type '" + type +
                                                 "' (expected string, u32, i32, f32, bool, string_array, i32_array, f32_array)");
    }
    return {};
}

// One tensor: its bytes are read from `data` at the header's offset.
status add_tensor(tachyon::gguf_writer& w, simdjson::dom::element t, std::ifstream& data, uint64_t data_size,
                  const std::string& where) {
    auto name_r = get_string(t, "name", where + " tensor");
    if (!name_r) return name_r.err();
    const auto name = *name_r;
    const std::string at = where + ": tensor '" + name + "'";
    auto type_name_r = get_string(t, "type", at);
    if (!type_name_r) return type_name_r.err();
    const auto type_name = *type_name_r;
    auto offset_r = get_u64(t, "offset", at);
    if (!offset_r) return offset_r.err();
    const auto offset = *offset_r;
    auto n_bytes_r = get_u64(t, "n_bytes", at);
    if (!n_bytes_r) return n_bytes_r.err();
    const auto n_bytes = *n_bytes_r;
    tachyon::tensor_type type;
    if (type_name == "f32") type = tachyon::tensor_type::f32;
    else if (type_name == "f16") type = tachyon::tensor_type::f16;
    else if (type_name == "q8_0") type = tachyon::tensor_type::q8_0;
    else return make_error(errc::unsupported, at + ": type '" + type_name + "' (expected f32, f16 or q8_0)");

    simdjson::dom::array dims;
    if (t["shape"].get(dims) != simdjson::SUCCESS) return make_error(errc::parse_error, at + ": expected shape array");
    std::vector<int64_t> shape;
    uint64_t n_elements = 1;
    for (simdjson::dom::element d : dims) {
        uint64_t n = 0;
        if (d.get(n) != simdjson::SUCCESS || n == 0 || n > max_tensor_bytes) {
            return make_error(errc::parse_error, at + ": shape entries must be positive integers");
        }
        n_elements *= n;
        if (n_elements > max_tensor_bytes) return make_error(errc::out_of_range, at + ": too many elements");
        shape.push_back(static_cast<int64_t>(n));
    }
    if (shape.empty() || shape.size() > 4) return make_error(errc::parse_error, at + ": expected 1 to 4 dimensions");
    const auto traits = tachyon::traits_of(type);
    if (shape[0] % traits.block_size != 0) {
        return make_error(errc::invalid_argument, at + ": row length is not a multiple of the block size");
    }
    const uint64_t expected = n_elements / traits.block_size * traits.type_size;
    if (n_bytes != expected) {
        return make_error(errc::invalid_argument, at + ": n_bytes " + std::to_string(n_bytes) + " but shape and type need " +
                                                      std::to_string(expected));
    }
    if (offset > data_size || n_bytes > data_size - offset) {
        return make_error(errc::out_of_range, at + ": bytes [" + std::to_string(offset) + ", +" + std::to_string(n_bytes) +
                                                  ") lie past the end of the data file");
    }
    std::vector<std::byte> bytes(n_bytes);  // [n_bytes] raw little-endian tensor data
    data.seekg(static_cast<std::streamoff>(offset));
    data.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(n_bytes));
    if (!data) return make_error(errc::io_error, at + ": reading the data file failed");
    w.add_tensor(name, std::move(shape), type, std::move(bytes));
    return {};
}

status run(const std::string& header_path, const std::string& out_path) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto e = parser.load(header_path).get(doc); e != simdjson::SUCCESS) {
        return make_error(errc::parse_error, header_path + ": " + simdjson::error_message(e));
    }
    auto data_name_r = get_string(doc, "data_file", header_path);
    if (!data_name_r) return data_name_r.err();
    const auto data_name = *data_name_r;
    const auto data_path = std::filesystem::path(header_path).parent_path() / data_name;
    std::ifstream data(data_path, std::ios::binary);
    if (!data) return make_error(errc::io_error, data_path.string() + ": cannot open");
    std::error_code ec;
    const uint64_t data_size = std::filesystem::file_size(data_path, ec);
    if (ec) return make_error(errc::io_error, data_path.string() + ": " + ec.message());

    tachyon::gguf_writer w;
    simdjson::dom::array metadata;
    simdjson::dom::array tensors;
    if (doc["metadata"].get(metadata) != simdjson::SUCCESS || doc["tensors"].get(tensors) != simdjson::SUCCESS) {
        return make_error(errc::parse_error, header_path + ": expected arrays 'metadata' and 'tensors'");
    }
    for (simdjson::dom::element kv : metadata) {
        TACHYON_TRY(add_metadata(w, kv, header_path));
    }
    size_t n_tensors = 0;
    for (simdjson::dom::element t : tensors) {
        TACHYON_TRY(add_tensor(w, t, data, data_size, header_path));
        ++n_tensors;
    }
    TACHYON_TRY(w.write(out_path));
    std::cout << out_path << ": " << metadata.size() << " metadata keys, " << n_tensors << " tensors, "
              << std::filesystem::file_size(out_path, ec) << " bytes\n";
    return {};
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: incident-export HEADER.json OUT.gguf\n";
        return 2;
    }
    if (auto s = run(argv[1], argv[2]); !s.ok()) {
        std::cerr << "incident-export: " << s.err().describe() << "\n";
        return 1;
    }
    return 0;
}
