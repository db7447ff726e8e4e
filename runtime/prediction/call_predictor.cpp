#include "runtime/prediction/call_predictor.h"

#include <algorithm>
#include <set>

#include "runtime/common/json_util.h"

namespace tachyon {
namespace {

constexpr char k_mark = '\x01';   // opens and closes a placeholder (no JSON text holds it raw)
constexpr char k_field = '\x02';  // separates a locator's fields
constexpr size_t k_max_templates = 2048;  // per kind of turn; the rarest are dropped beyond it
constexpr size_t k_max_line_keys = 16;  // per value, over the lines holding it

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

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The kind of an identifier, by its characters: a hex id, a time, a line id
// (name:number), a number, a lowercase name, or other.
char shape_of(std::string_view w) {
    if (w.size() >= 8 && std::all_of(w.begin(), w.end(), is_hex) && std::any_of(w.begin(), w.end(), is_digit)) return 'h';
    if (w.size() >= 10 && is_digit(w[0]) && w[4] == '-' && w.find('T') != std::string_view::npos) return 't';
    if (std::all_of(w.begin(), w.end(), [](char c) { return is_digit(c) || c == '.' || c == ':'; })) return 'n';
    const size_t colon = w.rfind(':');
    if (colon != std::string_view::npos && colon + 1 < w.size() &&
        std::all_of(w.begin() + static_cast<std::ptrdiff_t>(colon) + 1, w.end(), is_digit))
        return 'l';
    if (std::all_of(w.begin(), w.end(), [](char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-'; })) return 'w';
    return 'o';
}

}  // namespace

// What a prediction reads an argument from: the previous turn's text, as
// distinct identifiers, and as lines of identifiers.
struct call_predictor::context {
    std::vector<std::string> ids;                  // distinct, in order
    std::vector<std::vector<std::string>> lines;   // [n_lines] identifiers of each line
    std::map<std::string, int, std::less<>> line_count;  // identifier -> lines holding it

    explicit context(std::string_view text) {
        ids = identifiers_in(text);
        for (std::string_view rest = text; !rest.empty();) {
            const size_t nl = rest.find('\n');
            lines.push_back(identifiers_in(rest.substr(0, nl)));
            for (const auto& w : lines.back()) ++line_count[w];
            rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
        }
    }

    // Ways to find `v` again in another turn's text: its index among all
    // identifiers, its rank among those of its shape (from either end), and
    // its place on a line that holds a word no other line holds.
    std::vector<std::string> locators(std::string_view v) const {
        std::vector<std::string> out;
        const auto at = std::find(ids.begin(), ids.end(), v);
        if (at == ids.end()) return out;
        std::string index = "i";
        index.append(std::to_string(at - ids.begin()));
        out.push_back(std::move(index));
        const char shape = shape_of(v);
        int rank = 0, n_shape = 0;
        for (const auto& w : ids) {
            if (shape_of(w) != shape) continue;
            if (w == v) rank = n_shape;
            ++n_shape;
        }
        for (int r : {rank, rank - n_shape}) {
            std::string loc = "s";
            loc.push_back(shape);
            loc.push_back(k_field);
            loc.append(std::to_string(r));
            out.push_back(std::move(loc));
        }
        size_t keys = 0;
        for (const auto& line : lines) {  // every line holding v: which one marks it is learned
            const auto pos = std::find(line.begin(), line.end(), v);
            if (pos == line.end()) continue;
            for (const auto& w : line) {
                if (keys >= k_max_line_keys) break;
                if (w == v || line_count.at(w) != 1) continue;
                std::string loc = "l";
                loc.append(w);
                loc.push_back(k_field);
                loc.append(std::to_string(pos - line.begin()));
                out.push_back(std::move(loc));
                ++keys;
            }
        }
        return out;
    }

    // The identifier a locator names here; nullopt when there is none.
    std::optional<std::string> resolve(std::string_view loc) const {
        if (loc.empty()) return std::nullopt;
        const size_t f = loc.find(k_field);
        if (loc[0] == 'i') {
            const auto k = std::stoul(std::string(loc.substr(1)));
            return k < ids.size() ? std::optional<std::string>(ids[k]) : std::nullopt;
        }
        if (f == std::string_view::npos) return std::nullopt;
        const long k = std::stol(std::string(loc.substr(f + 1)));
        if (loc[0] == 's') {
            std::vector<const std::string*> same;
            for (const auto& w : ids)
                if (shape_of(w) == loc[1]) same.push_back(&w);
            const long n = static_cast<long>(same.size());
            const long i = k >= 0 ? k : n + k;
            return i >= 0 && i < n ? std::optional<std::string>(*same[static_cast<size_t>(i)]) : std::nullopt;
        }
        if (loc[0] == 'l') {
            const std::string_view key = loc.substr(1, f - 1);
            auto c = line_count.find(key);
            if (c == line_count.end() || c->second != 1) return std::nullopt;
            for (const auto& line : lines) {
                if (std::find(line.begin(), line.end(), key) == line.end()) continue;
                return k >= 0 && static_cast<size_t>(k) < line.size() ? std::optional<std::string>(line[static_cast<size_t>(k)])
                                                                       : std::nullopt;
            }
        }
        return std::nullopt;
    }
};

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

void call_predictor::learn(const std::string& key, std::string_view previous, const std::string& name,
                           const std::string& arguments) {
    // Each string value found in the previous text becomes a placeholder,
    // once per way of locating it: one template per combination (the string
    // values of a call are few; the combinations are capped).
    const context ctx(previous);
    std::vector<std::string> templates{name + std::string(1, '\0')};
    size_t copied = 0;
    for_each_string(arguments, [&](size_t begin, size_t end, bool is_key) {
        if (is_key) return;
        const auto locs = ctx.locators(std::string_view(arguments).substr(begin + 1, end - begin - 2));
        if (locs.empty()) return;
        const std::string between = arguments.substr(copied, begin - copied);
        std::vector<std::string> next;
        for (const auto& t : templates)
            for (const auto& l : locs)
                if (next.size() < 64) next.push_back(t + between + k_mark + l + k_mark);
        templates.swap(next);
        copied = end;
    });
    std::lock_guard lock(mutex_);
    auto& seen = seen_[key];
    for (auto& t : templates) ++seen[t + arguments.substr(copied)];
    if (seen.size() > k_max_templates) {  // drop the templates seen once: incident-specific words
        for (auto it = seen.begin(); it != seen.end();) it = it->second <= 1 ? seen.erase(it) : std::next(it);
    }
}

void call_predictor::count_turn(const std::string& key) {
    std::lock_guard lock(mutex_);
    ++turns_[key];
}

std::vector<predicted_call> call_predictor::predict(const std::string& key, std::string_view previous) const {
    std::vector<std::pair<int, std::string>> ranked;  // (count, template)
    {
        std::lock_guard lock(mutex_);
        auto t = turns_.find(key);
        auto s = seen_.find(key);
        if (t == turns_.end() || s == seen_.end()) return {};
        const double share = key.rfind(two_ahead_prefix, 0) == 0 ? options_.min_share_two_ahead : options_.min_share;
        for (const auto& [tmpl, n] : s->second)
            if (n >= options_.min_support && n >= share * t->second) ranked.emplace_back(n, tmpl);
    }
    if (ranked.empty()) return {};
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const context ctx(previous);
    std::vector<predicted_call> out;
    std::vector<std::string> shapes;  // a call's template with its placeholders blanked: one prediction each
    for (const auto& [n, tmpl] : ranked) {
        if (static_cast<int>(out.size()) >= options_.max_calls) break;
        const size_t sep = tmpl.find('\0');
        predicted_call call;
        call.name = tmpl.substr(0, sep);
        std::string shape = call.name + '\0';
        const std::string_view body = std::string_view(tmpl).substr(sep + 1);
        bool ok = true;
        for (size_t i = 0; i < body.size() && ok;) {
            if (body[i] != k_mark) {
                call.arguments += body[i];
                shape += body[i++];
                continue;
            }
            const size_t close = body.find(k_mark, i + 1);
            const auto value = ctx.resolve(body.substr(i + 1, close - i - 1));
            ok = value.has_value();
            if (ok) call.arguments += json::quote(*value);
            shape += k_mark;
            i = close + 1;
        }
        if (!ok || std::find(shapes.begin(), shapes.end(), shape) != shapes.end()) continue;
        shapes.push_back(shape);
        out.push_back(std::move(call));
    }
    return out;
}

}  // namespace tachyon
