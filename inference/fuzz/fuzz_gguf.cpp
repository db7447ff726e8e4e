// libFuzzer target for the GGUF reader: any byte string must parse to a file
// or to an error, never crash, read out of bounds or allocate without bound.
//
// Build (clang; a separate build dir):
//   CXX=clang++ cmake -S . -B build/fuzz -DTACHYON_FUZZ=ON -DTACHYON_BUILD_TESTS=OFF \
//       -DTACHYON_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target fuzz_gguf -j2
// Seed a corpus from real files, cut to their first 64 KiB (the header is
// where the parsing is; the data section is only bounds-checked):
//   mkdir -p /tmp/gguf_corpus
//   for f in ../shared/conformance/models/*.gguf ../shared/conformance/tokenizer/*.gguf; do
//       head -c 65536 "$f" > /tmp/gguf_corpus/$(basename "$f"); done
// Run for five minutes:
//   ./build/fuzz/inference/fuzz_gguf /tmp/gguf_corpus -max_len=65536 -max_total_time=300 -rss_limit_mb=2048
#include <cstddef>
#include <cstdint>
#include <span>

#include "inference/gguf/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto file = tachyon::gguf_file::parse(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz");
    if (!file.ok()) return 0;
    // Touch what a loader would: every tensor's bytes and every getter.
    unsigned sum = 0;
    for (const auto& t : (*file)->tensors()) {
        if (t.n_bytes > 0) sum += static_cast<unsigned>(t.data[0]) + static_cast<unsigned>(t.data[t.n_bytes - 1]);
        sum += static_cast<unsigned>(t.n_elements());
    }
    for (const auto& [key, value] : (*file)->metadata()) {
        sum += static_cast<unsigned>(value.type_name().size());
        (void)(*file)->get_uint(key);
        (void)(*file)->get_float(key);
        (void)(*file)->get_int_array(key);
        (void)(*file)->get_float_array(key);
    }
    return static_cast<int>(sum & 0);
}
