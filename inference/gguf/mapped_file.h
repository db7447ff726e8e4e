// A read-only, private memory mapping of a whole file. The pages are shared
// with the page cache, so opening a multi-GB model costs no copy and no RAM
// beyond what is touched.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "base/result.h"

namespace tachyon {

class mapped_file {
public:
    // Maps `path` with PROT_READ / MAP_PRIVATE. An empty file maps to an
    // empty span (mmap refuses length 0).
    static result<std::unique_ptr<mapped_file>> open(const std::string& path);

    ~mapped_file();
    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;

    std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(base_), size_}; }
    const std::string& path() const { return path_; }

    // Lets the pages wholly inside [p, p + n) go from this process's memory
    // (a copy of them is used instead); they are read back from the file if
    // touched again. p must lie in the mapping.
    void release(const void* p, size_t n) const;

    // Copies [p, p + n) of the mapping to dst by reading the file, so no page
    // of it is mapped into this process: rows looked up in a tensor whose
    // pages were released add nothing to the resident set (a mapped read
    // would bring back the page cache's whole folio around them, up to
    // megabytes on current kernels). Falls back to copying from the mapping
    // when the read fails. p must lie in the mapping.
    void copy(const void* p, size_t n, void* dst) const;

private:
    mapped_file() = default;

    std::string path_;
    void* base_ = nullptr;  // nullptr for an empty file
    size_t size_ = 0;
    int fd_ = -1;  // kept open for copy()
};

}  // namespace tachyon
