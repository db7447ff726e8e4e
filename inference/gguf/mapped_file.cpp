#include "inference/gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace tachyon {
namespace {

error os_error(const std::string& path, const char* what) {
    return make_error(errc::io_error, path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

result<std::unique_ptr<mapped_file>> mapped_file::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return make_error(errc::not_found, path + ": no such file");
        return os_error(path, "cannot open");
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        auto e = os_error(path, "cannot stat");
        ::close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error(errc::io_error, path + ": not a regular file");
    }
    std::unique_ptr<mapped_file> file(new mapped_file());
    file->path_ = path;
    file->size_ = static_cast<size_t>(st.st_size);
    if (file->size_ > 0) {
        void* base = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (base == MAP_FAILED) {
            auto e = os_error(path, "cannot mmap");
            ::close(fd);
            return e;
        }
        file->base_ = base;
    }
    file->fd_ = fd;
    return file;
}

void mapped_file::release(const void* p, size_t n) const {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto lo = reinterpret_cast<uintptr_t>(base_), hi = lo + size_;
    auto begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
    if (base_ == nullptr || begin < lo || end > hi) return;
    begin = (begin + page - 1) / page * page;
    end = end / page * page;
    // advice only: a failure leaves the pages where they are
    if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void mapped_file::copy(const void* p, size_t n, void* dst) const {
    const auto* src = static_cast<const std::byte*>(p);
    const auto* lo = static_cast<const std::byte*>(base_);
    auto* out = static_cast<std::byte*>(dst);
    size_t done = 0;
    if (fd_ >= 0 && src >= lo && src + n <= lo + size_) {
        const auto offset = static_cast<off_t>(src - lo);
        while (done < n) {
            const ssize_t got = ::pread(fd_, out + done, n - done, offset + static_cast<off_t>(done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            done += static_cast<size_t>(got);
        }
    }
    if (done < n) std::memcpy(out + done, src + done, n - done);
}

mapped_file::~mapped_file() {
    if (base_ != nullptr) ::munmap(base_, size_);
    if (fd_ >= 0) ::close(fd_);
}

}  // namespace tachyon
