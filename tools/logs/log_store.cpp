#include "tools/logs/log_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <system_error>
#include <unordered_map>

#include "tools/logformat/log_reader.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

namespace tachyon::tools {
namespace fs = std::filesystem;

// ---------------------------------------------------------------- mapped_file

mapped_file::~mapped_file() {
    if (data_ != nullptr) munmap(data_, size_);
}

status mapped_file::open(const fs::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error(errc::io_error, path.string() + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        ::close(fd);
        return make_error(errc::io_error, path.string() + ": cannot stat: " + std::strerror(errno));
    }
    size_ = std::size_t(st.st_size);
    if (size_ > 0) {
        void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            size_ = 0;
            return make_error(errc::io_error, path.string() + ": cannot map: " + std::strerror(errno));
        }
        data_ = p;
        madvise(data_, size_, MADV_SEQUENTIAL);
    }
    ::close(fd);
    return {};
}

// ------------------------------------------------------------------- log_file

std::string_view log_file::entry_text(std::size_t i) const {
    TACHYON_ASSERT(i < entries.size(), "entry index out of range");
    std::size_t begin = entries[i].offset;
    std::size_t end = i + 1 < entries.size() ? entries[i + 1].offset : text().size();
    while (end > begin && (text()[end - 1] == '\n' || text()[end - 1] == '\r')) --end;
    return text().substr(begin, end - begin);
}

std::size_t log_file::entry_of_line(std::uint32_t line) const {
    auto it = std::upper_bound(entries.begin(), entries.end(), line,
                               [](std::uint32_t l, const log_entry& e) { return l < e.line; });
    TACHYON_ASSERT(it != entries.begin(), "line before the first entry");
    return std::size_t(it - entries.begin()) - 1;
}

std::string_view log_file::line_text(std::uint32_t line) const {
    const log_entry& e = entries[entry_of_line(line)];
    std::string_view t = text();
    std::size_t pos = e.offset;
    for (std::uint32_t l = e.line; l < line; ++l) {
        std::size_t nl = t.find('\n', pos);
        if (nl == std::string_view::npos) return {};
        pos = nl + 1;
    }
    std::size_t end = t.find('\n', pos);
    if (end == std::string_view::npos) end = t.size();
    if (end > pos && t[end - 1] == '\r') --end;
    return t.substr(pos, end - pos);
}

// ------------------------------------------------------------------ scanning
namespace {

constexpr std::size_t chunk_bytes = std::size_t(8) << 20;

struct chunk_job {
    log_file* file = nullptr;
    std::size_t begin = 0, end = 0;
    std::vector<logformat::log_record> records;  // line numbers local to the chunk
    std::uint32_t n_lines = 0;
};

log_level coarse_level(logformat::severity s) {
    using logformat::severity;
    switch (s) {
        case severity::trace: case severity::debug: return log_level::debug;
        case severity::info: case severity::notice: return log_level::info;
        case severity::warn: return log_level::warn;
        case severity::error: case severity::critical: case severity::fatal: return log_level::error;
        case severity::unknown: break;
    }
    return log_level::none;
}

log_entry to_entry(const logformat::log_record& r) {
    log_entry e;
    e.offset = r.offset;
    e.ts_ms = r.time_us == logformat::no_time ? no_time : logformat::floor_div(r.time_us, 1000);
    e.line = r.first_line;
    e.first_len = r.first_len;
    e.msg_begin = r.message.begin;
    e.msg_len = r.message.len;
    if (r.trace.len > 0 && r.trace.begin <= 0xffff) {
        e.trace_begin = std::uint16_t(r.trace.begin);
        e.trace_len = std::uint8_t(std::min<std::uint32_t>(r.trace.len, 64));
    }
    e.level = coarse_level(r.level);
    e.severity = r.level;
    return e;
}

std::vector<fs::path> files_in(const fs::path& dir, std::initializer_list<std::string_view> extensions) {
    std::vector<fs::path> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return out;
    for (const auto& item : fs::directory_iterator(dir, ec)) {
        if (!item.is_regular_file(ec)) continue;
        std::string ext = item.path().extension().string();
        if (item.path().filename() == "answer.json") continue;  // the evaluator's file: never read
        for (auto e : extensions)
            if (ext == e) out.push_back(item.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The service every entry of a file names (syslog program, JSON "service",
// journald identifier), when at least nine in ten entries name one and all
// of those agree; empty otherwise.
std::string file_source(std::string_view text, const std::vector<logformat::log_record>& records) {
    std::string_view name;
    std::size_t n_named = 0;
    for (const auto& r : records) {
        if (r.service.empty()) continue;
        std::string_view s = r.service.in(text.substr(r.offset, r.first_len));
        if (name.empty()) name = s;
        else if (s != name) return {};
        ++n_named;
    }
    if (records.empty() || n_named * 10 < records.size() * 9) return {};
    return std::string(name);
}

// One span line; false when the line is not a span object.
bool parse_span(std::string_view line, std::size_t capacity, simdjson::ondemand::parser& parser, span& out,
                std::string& service) {
    simdjson::padded_string copy;
    simdjson::ondemand::document doc;
    simdjson::error_code err;
    if (capacity >= line.size() + simdjson::SIMDJSON_PADDING) {
        err = parser.iterate(line.data(), line.size(), capacity).get(doc);
    } else {
        copy = simdjson::padded_string(line);
        err = parser.iterate(copy).get(doc);
    }
    if (err) return false;
    simdjson::ondemand::object object;
    if (doc.get_object().get(object)) return false;
    for (auto field : object) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return false;
        simdjson::ondemand::value value;
        if (field.value().get(value)) return false;
        std::string_view s;
        bool is_string = !value.get_string().get(s);
        if (!is_string) {
            if (key == "duration_ms") {
                double d = 0;
                if (!value.get_double().get(d)) out.duration_ms = d;
            }
            continue;
        }
        if (key == "trace_id" || key == "traceId") out.trace_id = s;
        else if (key == "span_id" || key == "spanId") out.span_id = s;
        else if (key == "parent_id" || key == "parentId" || key == "parent_span_id") out.parent_id = s;
        else if (key == "service") service = s;
        else if (key == "operation" || key == "name") out.operation = s;
        else if (key == "start" || key == "start_time" || key == "ts") {
            if (auto t = parse_iso_time(s)) out.start_ms = *t;
        } else if (key == "status") out.failed = s == "error" || s == "ERROR";
        else if (key == "error") out.error = s;
    }
    if (!out.error.empty()) out.failed = true;
    return !out.trace_id.empty() && !out.span_id.empty();
}

struct span_chunk {
    std::size_t begin = 0, end = 0;
    std::vector<span> spans;
    std::vector<std::string> services;  // local service table; span.service indexes it
};

void scan_span_chunk(std::string_view text, span_chunk& job, simdjson::ondemand::parser& parser) {
    std::unordered_map<std::string, std::uint32_t> local;
    std::size_t pos = job.begin;
    std::string service;
    while (pos < job.end) {
        const char* nl = static_cast<const char*>(std::memchr(text.data() + pos, '\n', job.end - pos));
        std::size_t line_end = nl ? std::size_t(nl - text.data()) : job.end;
        std::string_view line = text.substr(pos, line_end - pos);
        if (!line.empty() && line.front() == '{') {
            span s;
            service.clear();
            if (parse_span(line, text.size() - pos, parser, s, service)) {
                auto [it, added] = local.emplace(service, std::uint32_t(job.services.size()));
                if (added) job.services.push_back(service);
                s.service = it->second;
                job.spans.push_back(std::move(s));
            }
        }
        pos = line_end + 1;
    }
}

}  // namespace

// ------------------------------------------------------------------ log_store

log_store::log_store(fs::path root, log_store_options options) : root_(std::move(root)), options_(options) {}

std::string normalise_service_name(std::string_view stem) {
    std::string out;
    for (char c : stem) {
        char l = (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
        bool keep = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
        if (keep) out += l;
        else if (!out.empty() && out.back() != '-') out += '-';
    }
    // a sample size as log collections name their files ("Apache_2k")
    auto dash = out.rfind('-');
    if (dash != std::string::npos && dash + 2 < out.size() + 1) {
        std::string_view tail = std::string_view(out).substr(dash + 1);
        bool size = tail.size() >= 2 && (tail.back() == 'k' || tail.back() == 'm') &&
                    std::all_of(tail.begin(), tail.end() - 1, [](char c) { return c >= '0' && c <= '9'; });
        if (size) out.resize(dash);
    }
    while (!out.empty() && !(out.front() >= 'a' && out.front() <= 'z')) out.erase(out.begin());
    while (!out.empty() && out.back() == '-') out.pop_back();
    if (out.empty()) out = "log";
    if (out.size() < 2) out += "-log";
    return out;
}

status log_store::ensure_loaded(const call_context& ctx) {
    std::lock_guard lock(load_mutex_);
    if (loaded_) return {};
    status s = load(ctx);
    if (!s) {
        services_.clear(), files_.clear(), change_files_.clear(), spans_.clear(), trace_order_.clear();
        edges_.clear();
        return s;
    }
    loaded_ = true;
    return {};
}

std::uint32_t log_store::intern_service(std::string_view name) {
    for (std::size_t i = 0; i < services_.size(); ++i)
        if (services_[i].name == name) return std::uint32_t(i);
    services_.push_back(service_info{std::string(name), -1, 0});
    return std::uint32_t(services_.size() - 1);
}

status log_store::load(const call_context& ctx) {
    auto t0 = std::chrono::steady_clock::now();
    std::error_code ec;
    if (!fs::is_directory(root_, ec))
        return make_error(errc::not_found, root_.string() + ": not a directory (expected an incident root with logs/)");
    fs::path logs_dir = fs::is_directory(root_ / "logs", ec) ? root_ / "logs" : root_;
    auto log_paths = logs_dir == root_ ? files_in(root_, {".log", ".txt"})
                                       : files_in(logs_dir, {".log", ".txt", ".jsonl", ".json"});
    auto change_paths = files_in(root_ / "changes", {".log", ".txt"});

    std::vector<log_file*> all;
    for (const auto& p : log_paths) {
        auto f = std::make_unique<log_file>();
        f->stem = p.stem().string();
        f->path = p;
        TACHYON_TRY(f->map.open(p));
        all.push_back(f.get());
        files_.push_back(std::move(f));
    }
    for (const auto& p : change_paths) {
        auto f = std::make_unique<log_file>();
        f->stem = p.stem().string();
        f->path = p;
        TACHYON_TRY(f->map.open(p));
        all.push_back(f.get());
        change_files_.push_back(std::move(f));
    }

    // each file's format from its first lines, then chunks that start at an entry
    std::vector<chunk_job> jobs;
    {
        logformat::line_parser scratch;
        for (log_file* f : all) {
            std::string_view t = f->text();
            f->format = logformat::detect_format(t, scratch);
            std::size_t begin = 0;
            while (begin < t.size()) {
                std::size_t end = t.size() - begin > chunk_bytes * 3 / 2
                                      ? logformat::next_entry_start(t, begin + chunk_bytes, f->format, scratch)
                                      : t.size();
                jobs.push_back(chunk_job{f, begin, end, {}, 0});
                begin = end;
            }
            if (t.empty()) jobs.push_back(chunk_job{f, 0, 0, {}, 0});
        }
    }
    tbb::parallel_for(std::size_t(0), jobs.size(), [&](std::size_t i) {
        if (ctx.cancelled()) return;
        logformat::line_parser scratch;
        auto& job = jobs[i];
        job.n_lines = logformat::scan_records(job.file->text(), job.begin, job.end, job.file->format, scratch, job.records);
    });
    if (ctx.cancelled()) return make_error(errc::cancelled, "loading " + root_.string() + ": cancelled");

    // stitch chunks: line numbers become file-global
    std::unordered_map<log_file*, std::vector<logformat::log_record>> records;
    for (auto& job : jobs) {
        log_file* f = job.file;
        auto& out = records[f];
        for (auto& r : job.records) {
            r.first_line += f->n_lines;
            r.last_line += f->n_lines;
        }
        if (out.empty()) out = std::move(job.records);  // a file's first (often only) chunk: no copy
        else out.insert(out.end(), job.records.begin(), job.records.end());
        f->n_lines += job.n_lines;
        stats_.n_bytes += job.end - job.begin;
    }
    jobs.clear();

    // traces
    for (const auto& p : files_in(root_ / "traces", {".jsonl", ".json"})) TACHYON_TRY(load_spans(p, ctx));

    // stamps without a year take the one year the other files and the traces
    // share; files of many years leave each file to its own modification time
    std::vector<int> years;
    for (log_file* f : all)
        for (const auto& r : records[f])
            if (r.time == logformat::time_kind::absolute || r.time == logformat::time_kind::local) {
                years.push_back(logformat::year_of(r.time_us));
                break;
            }
    for (const auto& sp : spans_)
        if (sp.start_ms != no_time) {
            years.push_back(logformat::year_of(sp.start_ms * 1000));
            break;
        }
    std::optional<int> context_year;
    if (!years.empty() && std::all_of(years.begin(), years.end(), [&](int y) { return y == years.front(); }))
        context_year = years.front();
    for (log_file* f : all) {
        auto& recs = records[f];
        logformat::time_hints hints;
        hints.year = options_.year;
        hints.zone_minutes = options_.zone_minutes;
        hints.context_year = context_year;
        struct stat st {};
        if (::stat(f->path.c_str(), &st) == 0)
            hints.mtime_us = std::int64_t(st.st_mtim.tv_sec) * 1000000 + st.st_mtim.tv_nsec / 1000;
        logformat::resolve_times(recs, hints);
        f->entries.reserve(recs.size());
        for (const auto& r : recs) f->entries.push_back(to_entry(r));
        f->source = file_source(f->text(), recs);
        std::vector<logformat::log_record>().swap(recs);
    }

    // names an agent can write: the file's own source, else its stem, normalised;
    // a name two files would share falls back to the stem, then gets a number
    std::vector<std::string> taken;
    auto name_file = [&](log_file& f, bool use_source) {
        std::string name = normalise_service_name(use_source && !f.source.empty() ? f.source : f.stem);
        if (std::find(taken.begin(), taken.end(), name) != taken.end()) name = normalise_service_name(f.stem);
        for (int n = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++n)
            name = normalise_service_name(f.stem) + "-" + std::to_string(n);
        taken.push_back(name);
        f.service = name;
    };
    for (auto& f : files_) name_file(*f, true);
    for (auto& f : change_files_) name_file(*f, false);
    std::sort(files_.begin(), files_.end(), [](const auto& a, const auto& b) { return a->service < b->service; });

    for (auto& f : files_) {
        for (const auto& e : f->entries) {
            if (e.ts_ms == no_time) continue;
            if (first_time_ == no_time || e.ts_ms < first_time_) first_time_ = e.ts_ms;
            if (last_time_ == no_time || e.ts_ms > last_time_) last_time_ = e.ts_ms;
        }
        stats_.n_lines += f->n_lines;
        stats_.n_entries += f->entries.size();
    }
    for (auto& f : change_files_) stats_.n_lines += f->n_lines;

    // services: log file stems and span services, sorted by name
    std::vector<std::string> span_services;
    span_services.reserve(services_.size());
    for (const auto& s : services_) span_services.push_back(s.name);
    std::vector<service_info> merged;
    for (std::size_t i = 0; i < files_.size(); ++i) merged.push_back(service_info{files_[i]->service, int(i), 0});
    for (const auto& name : span_services)
        if (std::none_of(merged.begin(), merged.end(), [&](const service_info& s) { return s.name == name; }))
            merged.push_back(service_info{name, -1, 0});
    std::sort(merged.begin(), merged.end(), [](const service_info& a, const service_info& b) { return a.name < b.name; });
    services_ = std::move(merged);
    std::vector<std::uint32_t> remap(span_services.size());
    for (std::size_t i = 0; i < span_services.size(); ++i) remap[i] = std::uint32_t(find_service(span_services[i]));
    for (auto& s : spans_) {
        s.service = remap[s.service];
        services_[s.service].n_spans++;
    }

    // trace index and caller -> callee edges
    trace_order_.resize(spans_.size());
    for (std::size_t i = 0; i < spans_.size(); ++i) trace_order_[i] = std::uint32_t(i);
    tbb::parallel_sort(trace_order_.begin(), trace_order_.end(), [&](std::uint32_t a, std::uint32_t b) {
        const span& x = spans_[a];
        const span& y = spans_[b];
        if (x.trace_id != y.trace_id) return x.trace_id < y.trace_id;
        if (x.start_ms != y.start_ms) return x.start_ms < y.start_ms;
        return x.span_id < y.span_id;
    });
    std::unordered_map<std::string_view, std::uint32_t> by_span_id;
    for (std::size_t g = 0; g < trace_order_.size();) {
        if (ctx.cancelled()) return make_error(errc::cancelled, "loading " + root_.string() + ": cancelled");
        std::size_t h = g;
        const std::string& id = spans_[trace_order_[g]].trace_id;
        by_span_id.clear();
        while (h < trace_order_.size() && spans_[trace_order_[h]].trace_id == id) {
            by_span_id.emplace(spans_[trace_order_[h]].span_id, trace_order_[h]);
            ++h;
        }
        for (std::size_t k = g; k < h; ++k) {
            const span& child = spans_[trace_order_[k]];
            if (child.parent_id.empty()) continue;
            auto it = by_span_id.find(child.parent_id);
            if (it == by_span_id.end()) continue;
            std::uint32_t caller = spans_[it->second].service;
            if (caller != child.service) edges_[{caller, child.service}]++;
        }
        g = h;
    }

    stats_.n_files = all.size();
    stats_.n_spans = spans_.size();
    stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return {};
}

status log_store::load_spans(const fs::path& path, const call_context& ctx) {
    auto file = std::make_unique<mapped_file>();
    TACHYON_TRY(file->open(path));
    std::string_view text = file->text();
    std::vector<span_chunk> jobs;
    for (std::size_t begin = 0; begin < text.size();) {
        std::size_t end = begin + chunk_bytes;
        if (end >= text.size()) end = text.size();
        else {
            std::size_t nl = text.find('\n', end);
            end = nl == std::string_view::npos ? text.size() : nl + 1;
        }
        jobs.push_back(span_chunk{begin, end, {}, {}});
        begin = end;
    }
    tbb::parallel_for(std::size_t(0), jobs.size(), [&](std::size_t i) {
        if (ctx.cancelled()) return;
        simdjson::ondemand::parser parser;
        scan_span_chunk(text, jobs[i], parser);
    });
    if (ctx.cancelled()) return make_error(errc::cancelled, "loading " + path.string() + ": cancelled");
    for (auto& job : jobs) {
        std::vector<std::uint32_t> ids;
        for (const auto& name : job.services) ids.push_back(intern_service(name));
        for (auto& s : job.spans) {
            s.service = ids[s.service];
            spans_.push_back(std::move(s));
        }
    }
    stats_.n_bytes += text.size();
    return {};
}

int log_store::find_service(std::string_view name) const {
    auto it = std::lower_bound(services_.begin(), services_.end(), name,
                               [](const service_info& s, std::string_view n) { return s.name < n; });
    return it != services_.end() && it->name == name ? int(it - services_.begin()) : -1;
}

const log_file* log_store::find_file(std::string_view name) const {
    for (const auto& f : files_)
        if (f->service == name) return f.get();
    for (const auto& f : change_files_)
        if (f->service == name) return f.get();
    // the file's own stem also finds it ("Apache_2k" for apache)
    for (const auto& f : files_)
        if (f->stem == name) return f.get();
    for (const auto& f : change_files_)
        if (f->stem == name) return f.get();
    return nullptr;
}

std::vector<const span*> log_store::trace(std::string_view trace_id) const {
    std::vector<const span*> out;
    auto lower = std::lower_bound(trace_order_.begin(), trace_order_.end(), trace_id,
                                  [&](std::uint32_t i, std::string_view id) { return spans_[i].trace_id < id; });
    auto it = lower;
    while (it != trace_order_.end() && spans_[*it].trace_id == trace_id) out.push_back(&spans_[*it++]);
    if (!out.empty() || trace_id.size() < 8) return out;
    // a unique prefix
    it = lower;
    std::string_view match;
    while (it != trace_order_.end() && std::string_view(spans_[*it].trace_id).starts_with(trace_id)) {
        if (match.empty()) match = spans_[*it].trace_id;
        else if (match != spans_[*it].trace_id) return {};  // ambiguous
        out.push_back(&spans_[*it++]);
    }
    return out;
}

std::vector<std::uint32_t> log_store::callees_transitive(std::uint32_t service) const {
    std::vector<bool> seen(services_.size(), false);
    std::vector<std::uint32_t> todo{service}, out;
    seen[service] = true;
    while (!todo.empty()) {
        std::uint32_t s = todo.back();
        todo.pop_back();
        for (const auto& [edge, n] : edges_) {
            if (edge.first != s || seen[edge.second]) continue;
            seen[edge.second] = true;
            out.push_back(edge.second);
            todo.push_back(edge.second);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

result<std::vector<service_health>> log_store::health(std::int64_t since, std::int64_t until,
                                                      const call_context& ctx) const {
    // a burst: at least 3 errors within 2 minutes; isolated noise errors do
    // not mark a service as failing
    constexpr std::size_t burst_errors = 3;
    constexpr std::int64_t burst_ms = 120000;
    auto in_window = [&](std::int64_t ts) {
        if (ts == no_time) return since == no_time && until == no_time;
        return (since == no_time || ts >= since) && (until == no_time || ts <= until);
    };
    std::vector<service_health> out(services_.size());
    std::vector<std::vector<std::int64_t>> error_times(services_.size());
    std::vector<std::int64_t> example_log_time(services_.size(), no_time);
    for (std::size_t s = 0; s < services_.size(); ++s) {
        if (ctx.cancelled()) return make_error(errc::cancelled, "error scan cancelled");
        if (services_[s].log_file < 0) continue;
        const log_file& f = *files_[std::size_t(services_[s].log_file)];
        service_health& h = out[s];
        for (const auto& e : f.entries) {
            if (e.level < log_level::warn || !in_window(e.ts_ms)) continue;
            if (e.level == log_level::warn) {
                h.n_warn++;
                continue;
            }
            h.n_error++;
            if (e.ts_ms != no_time) error_times[s].push_back(e.ts_ms);
            if (e.trace_len > 0 && (example_log_time[s] == no_time || e.ts_ms < example_log_time[s])) {
                example_log_time[s] = e.ts_ms;
                h.example_trace = std::string(f.trace_id(e));
            }
        }
    }
    std::vector<std::int64_t> example_span_time(services_.size(), no_time);
    for (const auto& sp : spans_) {
        // a span fails when it ends: a caller's span starts before its
        // callee's, so start times would make callers look first
        if (!sp.failed || sp.start_ms == no_time) continue;
        std::int64_t end = sp.start_ms + std::int64_t(std::max(0.0, std::min(sp.duration_ms, 1e12)));
        if (!in_window(end)) continue;
        error_times[sp.service].push_back(end);
        if (example_span_time[sp.service] == no_time || end < example_span_time[sp.service] ||
            (end == example_span_time[sp.service] && sp.trace_id < out[sp.service].example_trace)) {
            example_span_time[sp.service] = end;
            out[sp.service].example_trace = sp.trace_id;
        }
    }
    for (std::size_t s = 0; s < services_.size(); ++s) {
        auto& times = error_times[s];
        if (times.empty()) continue;
        std::sort(times.begin(), times.end());
        out[s].first_error_ms = times.front();
        for (std::size_t i = 0; i + burst_errors <= times.size(); ++i) {
            if (times[i + burst_errors - 1] - times[i] <= burst_ms) {
                out[s].onset_ms = times[i];
                break;
            }
        }
    }
    return out;
}

}  // namespace tachyon::tools
