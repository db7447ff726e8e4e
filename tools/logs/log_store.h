// log_store: one incident directory loaded and indexed once, shared by every
// tool of that root. Layout (the default convention; any directory of plain
// text / JSON logs works):
//   ROOT/logs/*.log       one file per service, service = file stem
//                         (without logs/: the *.log files of ROOT itself)
//   ROOT/traces/*.jsonl   one span per line
//   ROOT/changes/*.log    deploys and config changes
// Nothing else under ROOT is ever opened (answer files stay unread).
//
// Log files are mapped read-only and scanned in parallel (oneTBB) over files
// and over ~8 MiB chunks of large files; the index keeps one 40-byte record
// per entry, not the text, so a 1 GB directory costs ~1 GB of page cache plus
// ~0.3 GB of index.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "tools/logformat/log_level.h"
#include "tools/logs/log_parse.h"
#include "tools/core/tool.h"

namespace tachyon::tools {

// One log entry: a first line plus its continuation lines (stack frames).
struct log_entry {
    std::uint64_t offset = 0;       // byte offset of the first line in the file
    std::int64_t ts_ms = no_time;
    std::uint32_t line = 0;         // 1-based number of the first line
    std::uint32_t first_len = 0;    // bytes of the first line, without '\n'
    std::uint32_t msg_begin = 0;    // message within the first line
    std::uint32_t msg_len = 0;
    std::uint16_t trace_begin = 0;  // trace id within the first line
    std::uint8_t trace_len = 0;     // 0: none
    log_level level = log_level::none;
    logformat::severity severity = logformat::severity::unknown;  // the finer level
};

class mapped_file {
public:
    mapped_file() = default;
    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;
    ~mapped_file();
    status open(const std::filesystem::path& path);
    std::string_view text() const { return {static_cast<const char*>(data_), size_}; }

private:
    void* data_ = nullptr;
    std::size_t size_ = 0;
};

struct log_file {
    std::string service;  // the file's source or its stem, normalised (normalise_service_name)
    std::string stem;     // the file name without extension
    std::string source;   // the service every entry names, empty when they do not agree
    int format = -1;      // index in logformat::log_formats() of most lines, -1: plain text
    std::filesystem::path path;
    mapped_file map;
    std::vector<log_entry> entries;  // [n_entry], by line
    std::uint32_t n_lines = 0;

    std::string_view text() const { return map.text(); }
    std::string_view first_line(const log_entry& e) const { return text().substr(e.offset, e.first_len); }
    std::string_view message(const log_entry& e) const { return first_line(e).substr(e.msg_begin, e.msg_len); }
    std::string_view trace_id(const log_entry& e) const { return first_line(e).substr(e.trace_begin, e.trace_len); }
    std::string_view entry_text(std::size_t i) const;  // first line and continuations
    std::size_t entry_of_line(std::uint32_t line) const;  // index of the entry holding `line` (1-based)
    std::string_view line_text(std::uint32_t line) const;  // one physical line
};

struct span {
    std::string trace_id, span_id, parent_id;  // parent_id empty for a root
    std::uint32_t service = 0;                  // index into log_store::services()
    std::string operation;
    std::string error;  // empty when none
    std::int64_t start_ms = no_time;
    double duration_ms = 0;
    bool failed = false;
};

struct service_info {
    std::string name;
    int log_file = -1;  // index into files(), -1: seen in traces only
    std::uint64_t n_spans = 0;
};

struct load_stats {
    std::uint64_t n_bytes = 0;  // log, trace and change files
    std::uint64_t n_files = 0;
    std::uint64_t n_lines = 0;
    std::uint64_t n_entries = 0;
    std::uint64_t n_spans = 0;
    double seconds = 0;
    double mb_per_s() const { return seconds > 0 ? double(n_bytes) / 1e6 / seconds : 0; }
};

// Per service health, from error-level log entries and failed spans.
struct service_health {
    std::uint64_t n_error = 0, n_warn = 0;
    std::int64_t first_error_ms = no_time;  // earliest error (log entry, or end of a failed span)
    std::int64_t onset_ms = no_time;        // start of the first burst (isolated noise errors skipped)
    std::string example_trace;              // a failing trace id, from spans first
};

// "Apache_2k" -> "apache", "hdfs-datanode-3" -> "hdfs-datanode-3",
// "OpenStack.nova" -> "openstack-nova": lower case, runs of other characters
// as one '-', a trailing sample size ("_2k") dropped, at least two
// characters, starting with a letter: what ^[a-z][a-z0-9-]*[a-z0-9]$ accepts.
std::string normalise_service_name(std::string_view stem);

// Hints for stamps that leave out their year or zone (tool settings).
struct log_store_options {
    std::optional<int> year;
    std::optional<int> zone_minutes;
    bool operator==(const log_store_options&) const = default;
};

class log_store {
public:
    explicit log_store(std::filesystem::path root, log_store_options options = {});
    log_store(const log_store&) = delete;
    log_store& operator=(const log_store&) = delete;

    const std::filesystem::path& root() const { return root_; }

    // Loads on the first call, then returns at once. Thread-safe. A
    // cancelled load leaves the store unloaded for the next caller.
    status ensure_loaded(const call_context& ctx);
    load_stats stats() const { return stats_; }  // figures of the last load: bytes, seconds, MB/s

    const std::vector<service_info>& services() const { return services_; }
    int find_service(std::string_view name) const;  // -1 when unknown
    const std::vector<std::unique_ptr<log_file>>& files() const { return files_; }
    const std::vector<std::unique_ptr<log_file>>& change_files() const { return change_files_; }
    const log_file* find_file(std::string_view name) const;  // by service, then by stem; log files, then change files
    const log_store_options& options() const { return options_; }
    const std::vector<span>& spans() const { return spans_; }

    // Spans of one trace, by start time; empty when unknown. A unique prefix
    // of at least 8 characters also matches (log lines often cut ids).
    std::vector<const span*> trace(std::string_view trace_id) const;
    // caller -> callee service pairs seen in traces, with span counts.
    const std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t>& edges() const { return edges_; }
    std::vector<std::uint32_t> callees_transitive(std::uint32_t service) const;

    // Earliest and latest timestamps over all log entries (no_time if none).
    std::int64_t first_time() const { return first_time_; }
    std::int64_t last_time() const { return last_time_; }

    // Health of every service within [since, until] (inclusive; no_time: open).
    result<std::vector<service_health>> health(std::int64_t since, std::int64_t until, const call_context& ctx) const;

private:
    status load(const call_context& ctx);
    status load_spans(const std::filesystem::path& path, const call_context& ctx);
    std::uint32_t intern_service(std::string_view name);

    std::filesystem::path root_;
    log_store_options options_;
    std::mutex load_mutex_;
    bool loaded_ = false;
    load_stats stats_;

    std::vector<service_info> services_;  // sorted by name after the load
    std::vector<std::unique_ptr<log_file>> files_;         // [n_log_file], by service name
    std::vector<std::unique_ptr<log_file>> change_files_;  // [n_change_file], by name
    std::vector<span> spans_;                              // [n_span], in file order
    std::vector<std::uint32_t> trace_order_;               // [n_span] span indices sorted by (trace_id, start)
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> edges_;
    std::int64_t first_time_ = no_time, last_time_ = no_time;
};

}  // namespace tachyon::tools
