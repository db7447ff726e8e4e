#include "tools/logs/log_store_cache.h"

#include <sys/stat.h>

#include <algorithm>

namespace tachyon::tools {
namespace fs = std::filesystem;

namespace {
void add_folder(const fs::path& dir, std::string& out) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return;
    std::vector<std::string> lines;
    for (const auto& item : fs::directory_iterator(dir, ec)) {
        struct stat st {};
        if (::stat(item.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        lines.push_back(item.path().filename().string() + " " + std::to_string(st.st_size) + " " +
                        std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec));
    }
    std::sort(lines.begin(), lines.end());
    out += dir.string() + "\n";
    for (const auto& l : lines) out += l + "\n";
}
}  // namespace

std::string directory_fingerprint(const fs::path& root) {
    std::string out;
    add_folder(root, out);
    for (const char* sub : {"logs", "traces", "changes"}) add_folder(root / sub, out);
    return out;
}

log_store_cache& log_store_cache::shared() {
    static log_store_cache cache;
    return cache;
}

std::size_t log_store_cache::size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
}

std::shared_ptr<log_store> log_store_cache::get(const fs::path& root, const log_store_options& options) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(root, ec);
    const std::string key = ec ? root.string() : canonical.string();
    // of the canonical path: the fingerprint names the folders it lists, and
    // two spellings of one directory must match
    std::string fingerprint = directory_fingerprint(key);
    std::lock_guard lock(mutex_);
    ++clock_;
    for (auto& it : items_) {
        if (it.root != key || !(it.options == options)) continue;
        if (it.fingerprint != fingerprint) {
            it.fingerprint = std::move(fingerprint);
            it.store = std::make_shared<log_store>(root, options);
        }
        it.last_used = clock_;
        return it.store;
    }
    if (items_.size() >= max_stores_) {
        auto oldest = std::min_element(items_.begin(), items_.end(),
                                       [](const item& a, const item& b) { return a.last_used < b.last_used; });
        items_.erase(oldest);
    }
    items_.push_back(item{key, options, std::move(fingerprint), std::make_shared<log_store>(root, options), clock_});
    return items_.back().store;
}

}  // namespace tachyon::tools
