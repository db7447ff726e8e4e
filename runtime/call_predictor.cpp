#include "runtime/call_predictor.h"

#include <algorithm>
#include <set>

#include "runtime/json_util.h"

namespace tachyon {
namespace {

// A placeholder for identifier i inside a template: bytes no JSON text holds raw.
std::string placeholder(size_t i) {
    std::string p(1, '\x01');
    p += std::to_string(i);
    p.push_back('\x01');
    return p;
}

// Calls `f(begin, end, is_key)` for each string literal of minified JSON
// [begin, end) including its quotes.
template <typename F>
void for_each_string(std::string_view json, F&& f) {
    size_t i = 0;
    while (i < json.size()) {
        if (json[i] != '"') {
            ++i;
            continue;
        }
        size_t j = i + 1;
        while (j < json.size() && json[j] != '"') j += json[j] == '\\' ? 2 : 1;
        if (j >= json.size()) return;
        const bool is_key = j + 1 < json.size() && json[j + 1] == ':';
        f(i, j + 1, is_key);
        i = j + 1;
    }
}

}  // namespace

std::vector<std::string> identifiers_in(std::string_view text) {
    auto word_char = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.' || c == ':' || c == '/';
    };
    auto edge_char = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    std::vector<std::string> out;
    std::set<std::string_view> seen;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && !word_char(text[i])) ++i;
        size_t j = i;
        while (j < text.size() && word_char(text[j])) ++j;
        size_t a = i, b = j;
        while (a < b && !edge_char(text[a])) ++a;
        while (b > a && !edge_char(text[b - 1])) --b;
        if (b - a >= 2 && b - a <= 80 && seen.insert(text.substr(a, b - a)).second) out.emplace_back(text.substr(a, b - a));
        i = j;
    }
    return out;
}

void call_predictor::learn(const std::string& key, const std::vector<std::string>& identifiers, const std::string& name,
                           const std::string& arguments) {
    // String values that are identifiers of the previous results become placeholders.
    std::map<std::string_view, size_t> index;
    for (size_t i = 0; i < identifiers.size(); ++i) index.emplace(identifiers[i], i);
    std::string tmpl = name;
    tmpl.push_back('\0');
    size_t copied = 0;
    for_each_string(arguments, [&](size_t begin, size_t end, bool is_key) {
        if (is_key) return;
        auto it = index.find(std::string_view(arguments).substr(begin + 1, end - begin - 2));
        if (it == index.end()) return;
        tmpl.append(arguments, copied, begin - copied);
        tmpl += placeholder(it->second);
        copied = end;
    });
    tmpl.append(arguments, copied);
    std::lock_guard lock(mutex_);
    ++seen_[key][tmpl];
}

void call_predictor::count_turn(const std::string& key) {
    std::lock_guard lock(mutex_);
    ++turns_[key];
}

std::vector<predicted_call> call_predictor::predict(const std::string& key, const std::vector<std::string>& identifiers) const {
    std::vector<std::pair<int, std::string>> ranked;  // (count, template)
    {
        std::lock_guard lock(mutex_);
        auto t = turns_.find(key);
        auto s = seen_.find(key);
        if (t == turns_.end() || s == seen_.end()) return {};
        for (const auto& [tmpl, n] : s->second)
            if (n >= options_.min_support && n >= options_.min_share * t->second) ranked.emplace_back(n, tmpl);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<predicted_call> out;
    for (const auto& [n, tmpl] : ranked) {
        if (static_cast<int>(out.size()) >= options_.max_calls) break;
        const size_t sep = tmpl.find('\0');
        predicted_call call;
        call.name = tmpl.substr(0, sep);
        const std::string_view body = std::string_view(tmpl).substr(sep + 1);
        bool ok = true;
        for (size_t i = 0; i < body.size() && ok;) {
            if (body[i] != '\x01') {
                call.arguments += body[i++];
                continue;
            }
            const size_t close = body.find('\x01', i + 1);
            const size_t k = static_cast<size_t>(std::stoul(std::string(body.substr(i + 1, close - i - 1))));
            ok = k < identifiers.size();
            if (ok) call.arguments += json::quote(identifiers[k]);
            i = close + 1;
        }
        if (ok) out.push_back(std::move(call));
    }
    return out;
}

}  // namespace tachyon
