// One log store per directory per process: every tool and verify check of a
// run, and later runs on the same directory, share one loaded index while no
// file it read changed (the key: the root, the hints, and each file's name,
// size and modification time). A changed directory loads afresh; the cache
// keeps the most recently used few stores.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tools/logs/log_store.h"

namespace tachyon::tools {

// Names, sizes and modification times of the files a store of `root` reads.
std::string directory_fingerprint(const std::filesystem::path& root);

class log_store_cache {
public:
    explicit log_store_cache(std::size_t max_stores = 8) : max_stores_(max_stores) {}

    // The process-wide cache the built-in log tools use.
    static log_store_cache& shared();

    // The store of `root` with `options`: the cached one while the directory
    // is unchanged, else a new (not yet loaded) one. Thread-safe.
    std::shared_ptr<log_store> get(const std::filesystem::path& root, const log_store_options& options);
    std::size_t size() const;

private:
    struct item {
        std::string root;
        log_store_options options;
        std::string fingerprint;
        std::shared_ptr<log_store> store;
        std::uint64_t last_used = 0;
    };
    std::size_t max_stores_;
    mutable std::mutex mutex_;
    std::vector<item> items_;
    std::uint64_t clock_ = 0;
};

}  // namespace tachyon::tools
