#include "runtime/constrain/json_grammar.h"

#include "runtime/common/json_util.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tachyon {

namespace {

// Frame stages (finished frames, k_done, are popped at once).
// object / array
constexpr uint8_t k_first = 0, k_in_key = 1, k_in_value = 2, k_after_value = 3, k_comma = 4, k_need_next = 5;
// string
constexpr uint8_t k_normal = 0, k_escape = 1, k_hex = 2, k_utf8 = 3;
// number
constexpr uint8_t k_start = 0, k_minus = 1, k_zero = 2, k_int = 3, k_dot = 4, k_frac = 5, k_e = 6, k_esign = 7, k_exp = 8;
constexpr uint32_t k_max_int_digits = 18;
constexpr uint32_t k_max_frac_digits = 20;

bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

std::string json_quote(std::string_view s) { return json::quote(s); }

// --- compilation --------------------------------------------------------------

int32_t json_grammar::add_list(std::vector<std::pair<std::string, uint8_t>> items) {
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
                items.end());
    choice_list l;
    for (auto& [text, payload] : items) {
        l.texts.push_back(std::move(text));
        l.payload.push_back(payload);
    }
    lists_.push_back(std::move(l));
    return static_cast<int32_t>(lists_.size() - 1);
}

int32_t json_grammar::add_literal(std::string text) {
    literals_.push_back(std::move(text));
    return static_cast<int32_t>(literals_.size() - 1);
}

result<int32_t> json_grammar::add_schema(const json_schema& schema, const grounded_values& grounding) {
    const auto base = static_cast<int32_t>(nodes_.size());
    for (size_t i = 0; i < schema.n_nodes(); ++i) nodes_.push_back(gnode{&schema.node(static_cast<int>(i)), base});
    // Walk the tree from the root to know each node's grounding path.
    std::vector<std::pair<int, std::string>> todo{{0, ""}};
    while (!todo.empty()) {
        auto [local, path] = std::move(todo.back());
        todo.pop_back();
        gnode& n = nodes_[static_cast<size_t>(base + local)];
        const schema_node& s = *n.s;
        if (s.properties.size() > 64)
            return make_error(errc::unsupported, "schema of " + schema.label() + ": more than 64 properties at '" + path + "'");
        if (!s.properties.empty()) {
            std::vector<std::pair<std::string, uint8_t>> keys;
            for (size_t p = 0; p < s.properties.size(); ++p) keys.emplace_back(json_quote(s.properties[p].first), static_cast<uint8_t>(p));
            n.keys = add_list(std::move(keys));
            for (uint8_t p : lists_[static_cast<size_t>(n.keys)].payload) n.key_mask |= uint64_t{1} << p;
            for (const auto& r : s.required) {
                for (size_t p = 0; p < s.properties.size(); ++p)
                    if (s.properties[p].first == r) n.required_mask |= uint64_t{1} << p;
            }
            n.required_mask &= n.key_mask;  // a repeated name is one key, written once
        }
        if (s.has_enum) {
            // Only the values the rest of the node allows (an enum of several
            // types under a "type"); none leaves the node without a value.
            std::vector<std::pair<std::string, uint8_t>> values;
            for (const auto& e : s.enum_json)
                if (schema.node_accepts(local, e)) values.emplace_back(e, 0);
            n.values = add_list(std::move(values));
        } else if (s.grounded && (s.types & json_types::string)) {
            const auto& candidates = grounding.for_path(path);
            if (!candidates.empty()) {
                std::vector<std::pair<std::string, uint8_t>> values;
                for (const auto& c : candidates) values.emplace_back(json_quote(c), 0);
                if (s.types & json_types::null) values.emplace_back("null", 0);
                n.values = add_list(std::move(values));
            }
        }
        for (const auto& [name, child] : s.properties) todo.emplace_back(child, path.empty() ? name : path + "." + name);
        if (s.items >= 0) todo.emplace_back(s.items, path + "[]");
    }
    if (auto st = add_anchors(base, schema.n_nodes(), grounding); !st.ok()) return st.err();
    return base;
}

namespace {

bool word_byte(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// `needle` occurs in `line` with no word byte right before or after it.
bool names(std::string_view line, std::string_view needle) {
    for (size_t at = line.find(needle); at != std::string_view::npos; at = line.find(needle, at + 1)) {
        const size_t end = at + needle.size();
        if ((at == 0 || !word_byte(line[at - 1])) && (end == line.size() || !word_byte(line[end]))) return true;
    }
    return false;
}

// The text of a quoted candidate, "" for one with escapes (or "null").
std::string_view unquoted(std::string_view q) {
    if (q.size() < 2 || q.front() != '"' || q.back() != '"') return {};
    q = q.substr(1, q.size() - 2);
    return q.find('\\') == std::string_view::npos ? q : std::string_view{};
}

}  // namespace

// "x-grounded-with": for each candidate of the anchor property, the list of
// this node's candidates seen on a line of the run that names it.
status json_grammar::add_anchors(int32_t base, size_t n_nodes, const grounded_values& grounding) {
    std::vector<std::string_view> lines;
    for (size_t i = 0; i < n_nodes; ++i) {
        gnode& obj = nodes_[static_cast<size_t>(base) + i];
        const auto& props = obj.s->properties;
        for (size_t q = 0; q < props.size(); ++q) {
            int32_t target = obj.child(props[q].second);
            const schema_node* ts = nodes_[static_cast<size_t>(target)].s;
            if (ts->grounded_with.empty() && ts->items >= 0) {
                target = obj.child(ts->items);
                ts = nodes_[static_cast<size_t>(target)].s;
            }
            if (ts->grounded_with.empty()) continue;
            int32_t p = -1;
            for (size_t k = 0; k < props.size(); ++k)
                if (props[k].first == ts->grounded_with) p = static_cast<int32_t>(k);
            if (p < 0) return make_error(errc::invalid_argument, "'x-grounded-with' names '" + ts->grounded_with + "', not a property beside it");
            if (obj.anchor >= 0 && obj.anchor != p)
                return make_error(errc::unsupported, "'x-grounded-with': one anchor property per object");
            obj.anchor = p;
            const int32_t anchor_list = nodes_[static_cast<size_t>(obj.child(props[static_cast<size_t>(p)].second))].values;
            const int32_t value_list = nodes_[static_cast<size_t>(target)].values;
            if (anchor_list < 0 || value_list < 0) continue;  // no candidates: nothing to narrow
            if (lines.empty()) {
                for (const auto& t : grounding.texts) {
                    std::string_view rest = t;
                    while (!rest.empty()) {
                        const size_t nl = rest.find('\n');
                        lines.push_back(rest.substr(0, nl));
                        rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
                    }
                }
            }
            // The values on each line first (few), then the anchors naming them.
            // Copies: add_list below grows lists_.
            const auto vtexts = lists_[static_cast<size_t>(value_list)].texts;
            const auto atexts = lists_[static_cast<size_t>(anchor_list)].texts;
            std::vector<std::vector<std::pair<std::string, uint8_t>>> seen(atexts.size());  // [n_anchor]
            for (std::string_view line : lines) {
                std::vector<size_t> on_line;
                for (size_t v = 0; v < vtexts.size(); ++v) {
                    const std::string_view text = unquoted(vtexts[v]);
                    if (!text.empty() && names(line, text)) on_line.push_back(v);
                }
                if (on_line.empty()) continue;
                for (size_t a = 0; a < atexts.size(); ++a) {
                    const std::string_view text = unquoted(atexts[a]);
                    if (text.empty() || !names(line, text)) continue;
                    for (size_t v : on_line) seen[a].emplace_back(vtexts[v], 0);
                }
            }
            std::vector<int32_t> row(atexts.size(), -1);
            for (size_t a = 0; a < atexts.size(); ++a)
                if (!seen[a].empty()) row[a] = add_list(std::move(seen[a]));
            nodes_[static_cast<size_t>(target)].anchored = static_cast<int32_t>(anchored_.size());
            anchored_.push_back(std::move(row));
        }
    }
    return {};
}

result<std::shared_ptr<const json_grammar>> json_grammar::build(std::vector<grammar_tool> tools,
                                                               std::shared_ptr<const json_schema> answer,
                                                               const grounded_values& grounding,
                                                               tool_call_syntax syntax) {
    if (tools.size() > 64) return make_error(errc::unsupported, "constrained decoding: more than 64 tools");
    auto g = std::make_shared<json_grammar>();
    // Schemas without one (tools that declared none) share an "any object" schema.
    auto any_object = std::make_shared<const json_schema>(json_schema::any_object());
    g->add_call_region(syntax);
    std::vector<std::pair<std::string, uint8_t>> names;
    for (size_t t = 0; t < tools.size(); ++t) {
        const auto& schema = tools[t].schema ? tools[t].schema : any_object;
        auto root = g->add_schema(*schema, grounding);
        if (!root.ok()) return root.err();
        g->tools_.push_back(*root);
        names.emplace_back(g->bare_names_ ? tools[t].name : json_quote(tools[t].name), static_cast<uint8_t>(t));
    }
    if (!tools.empty()) g->tool_names_ = g->add_list(std::move(names));
    if (answer) {
        auto root = g->add_schema(*answer, grounding);
        if (!root.ok()) return root.err();
        g->answer_root_ = *root;
    }
    g->any_node_ = static_cast<int32_t>(g->nodes_.size());
    g->nodes_.push_back(gnode{&g->any_schema_, g->any_node_});
    g->lit_colon_ = g->add_literal(": ");
    g->lit_true_ = g->add_literal("true");
    g->lit_false_ = g->add_literal("false");
    g->lit_null_ = g->add_literal("null");
    // Schemas are owned by the caller's tools and answer; keep them alive with the grammar.
    g->owned_.push_back(any_object);
    for (auto& t : tools)
        if (t.schema) g->owned_.push_back(t.schema);
    if (answer) g->owned_.push_back(answer);
    return std::shared_ptr<const json_grammar>(std::move(g));
}

// --- automaton ----------------------------------------------------------------

bool json_automaton::push(const frame& f) {
    if (depth_ >= max_depth) return false;
    stack_[static_cast<size_t>(depth_++)] = f;
    return true;
}

bool json_automaton::push_literal(int32_t lit) {
    frame f;
    f.k = kind::literal;
    f.id = lit;
    return push(f);
}

bool json_automaton::push_value(int32_t node) {
    frame f;
    f.k = kind::value;
    f.id = node;
    return push(f);
}

bool json_automaton::push_choice(int32_t list, uint64_t excluded) {
    frame f;
    f.k = kind::choice;
    f.id = list;
    f.a = 0;
    f.b = static_cast<uint32_t>(g_->lists_[static_cast<size_t>(list)].texts.size());
    f.bits = excluded;
    return push(f);
}

void json_automaton::start_answer() {
    depth_ = 0;
    push_value(g_->answer_root_);
}

namespace {
bool excluded(uint64_t bits, uint32_t i) { return i < 64 && ((bits >> i) & 1) != 0; }
}  // namespace

bool json_automaton::frame_finished(const frame& f) const {
    switch (f.k) {
        case kind::literal: return f.pos == g_->literals_[static_cast<size_t>(f.id)].size();
        case kind::choice: {
            const auto& texts = g_->lists_[static_cast<size_t>(f.id)].texts;
            if (f.a >= f.b || f.a >= texts.size()) return false;  // an empty list: nothing to finish
            if (texts[f.a].size() != f.pos || excluded(f.bits, f.a)) return false;
            for (uint32_t i = f.a + 1; i < f.b; ++i)
                if (!excluded(f.bits, i)) return false;  // a longer candidate may still follow
            return true;
        }
        case kind::number:
        case kind::value: return false;
        case kind::call_id: return f.pos == call_id_length;
        default: return f.stage == k_done;
    }
}

bool json_automaton::frame_can_end(const frame& f) const {
    if (f.k == kind::choice) {
        const auto& texts = g_->lists_[static_cast<size_t>(f.id)].texts;
        return f.a < f.b && f.a < texts.size() && texts[f.a].size() == f.pos && !excluded(f.bits, f.a);
    }
    if (f.k == kind::number) {
        if (f.stage != k_zero && f.stage != k_int && f.stage != k_frac && f.stage != k_exp) return false;
        if (f.stage == k_zero && (f.aux & 1) != 0) return false;  // "-0" goes on to a fraction
        const schema_node& s = *g_->nodes_[static_cast<size_t>(f.id)].s;
        if (!s.minimum && !s.maximum) return true;
        return number_feasible(s, f, true);
    }
    return frame_finished(f);
}

void json_automaton::pop_finished() {
    while (depth_ > 0 && frame_finished(top())) {
        const frame child = top();
        --depth_;
        if (depth_ > 0) resume_parent(child);
    }
}

uint32_t json_automaton::narrowed_list(const frame& object, int32_t value_node) const {
    if (object.a == 0) return 0;
    const json_grammar::gnode* t = &g_->nodes_[static_cast<size_t>(value_node)];
    if (t->anchored < 0 && t->s->items >= 0) t = &g_->nodes_[static_cast<size_t>(t->child(t->s->items))];
    if (t->anchored < 0) return 0;
    const auto& row = g_->anchored_[static_cast<size_t>(t->anchored)];
    const size_t chosen = object.a - 1;
    return chosen < row.size() && row[chosen] >= 0 ? static_cast<uint32_t>(row[chosen] + 1) : 0;
}

void json_automaton::resume_parent(const frame& child) {
    frame& f = top();
    // A value not started yet sits under the literal before it (": ", the
    // call's `, "arguments": `), as does a call's id: it is simply next.
    if (f.k == kind::value || f.k == kind::call_id) return;
    const json_grammar::gnode* n = f.k == kind::call ? nullptr : &g_->nodes_[static_cast<size_t>(f.id)];
    switch (f.k) {
        case kind::call: resume_call(f, child); break;
        case kind::object:
            if (f.stage == k_in_key) {
                int32_t value_node = g_->any_node_;
                uint32_t narrowed = 0;
                if (child.k == kind::choice) {
                    const uint8_t p = g_->lists_[static_cast<size_t>(n->keys)].payload[child.a];
                    f.bits |= uint64_t{1} << p;
                    f.b = p;
                    value_node = n->child(n->s->properties[p].second);
                    narrowed = narrowed_list(f, value_node);
                }
                f.stage = k_in_value;
                // A failed push (too deep) leaves the object waiting; the next byte is rejected.
                if (push_value(value_node)) {
                    top().b = narrowed;
                    push_literal(g_->lit_colon_);
                }
            } else if (f.stage == k_in_value) {
                // the anchor's value chosen: remember which candidate it was
                if (n->anchor >= 0 && f.b == static_cast<uint32_t>(n->anchor) && child.k == kind::choice &&
                    child.id == g_->nodes_[static_cast<size_t>(n->child(n->s->properties[f.b].second))].values)
                    f.a = child.a + 1;
                f.stage = k_after_value;
            }
            break;
        case kind::array:
            if (f.stage == k_in_value) {
                // uniqueItems: the candidate an item took is excluded for the next ones
                if (n->s->unique_items && child.k == kind::choice && child.a < 64) f.bits |= uint64_t{1} << child.a;
                ++f.a;
                f.stage = k_after_value;
            }
            break;
        default: TACHYON_ASSERT(false, "a frame of this kind has no children");
    }
}

json_automaton::step json_automaton::consume(frame& f, uint8_t c) {
    switch (f.k) {
        case kind::literal: {
            const std::string& lit = g_->literals_[static_cast<size_t>(f.id)];
            if (f.pos < lit.size() && static_cast<uint8_t>(lit[f.pos]) == c) {
                ++f.pos;
                return step::consumed;
            }
            return step::reject;
        }
        case kind::choice: return consume_choice(f, c);
        case kind::value: return consume_value(f, c);
        case kind::string: return consume_string(f, c);
        case kind::number: return consume_number(f, c);
        case kind::call:
        case kind::call_id: return consume_call(f, c);
        case kind::object: {
            const json_grammar::gnode& n = g_->nodes_[static_cast<size_t>(f.id)];
            const schema_node& s = *n.s;
            const bool required_done = (f.bits & n.required_mask) == n.required_mask;
            const bool more_keys = n.keys >= 0 ? (f.bits & n.key_mask) != n.key_mask : s.additional_properties;
            if (f.stage == k_first || f.stage == k_after_value) {
                if (c == '}' && required_done) {
                    f.stage = k_done;
                    return step::consumed;
                }
                if (f.stage == k_after_value) {
                    if (c != ',' || !more_keys) return step::reject;
                    f.stage = k_comma;
                    return step::consumed;
                }
            }
            if (f.stage == k_comma) {
                if (c != ' ') return step::reject;
                f.stage = k_need_next;
                return step::consumed;
            }
            // A key takes a frame, then its value and ": " two: room for them first.
            if ((f.stage == k_first || f.stage == k_need_next) && c == '"' && more_keys && depth_ + 2 <= max_depth) {
                f.stage = k_in_key;
                if (n.keys >= 0) {
                    const auto& l = g_->lists_[static_cast<size_t>(n.keys)];
                    uint64_t ex = 0;
                    for (size_t i = 0; i < l.payload.size(); ++i)
                        if ((f.bits >> l.payload[i]) & 1) ex |= uint64_t{1} << i;
                    return push_choice(n.keys, ex) ? step::retry : step::reject;
                }
                frame key;  // a free key: a string frame after the quote consumed here
                key.k = kind::string;
                key.id = g_->any_node_;
                return push(key) ? step::consumed : step::reject;
            }
            return step::reject;
        }
        case kind::array: {
            const schema_node& s = *g_->nodes_[static_cast<size_t>(f.id)].s;
            const int32_t item = s.items >= 0 ? g_->nodes_[static_cast<size_t>(f.id)].child(s.items) : g_->any_node_;
            const bool more = item_left(f) && depth_ + 1 <= max_depth;
            // Below minItems, an array whose unique candidates ran out closes all the same.
            const bool enough = !s.min_items || f.a >= *s.min_items || !item_left(f);
            if ((f.stage == k_first || f.stage == k_after_value) && c == ']' && enough) {
                f.stage = k_done;
                return step::consumed;
            }
            if (f.stage == k_after_value) {
                if (c != ',' || !more) return step::reject;
                f.stage = k_comma;
                return step::consumed;
            }
            if (f.stage == k_comma) {
                if (c != ' ') return step::reject;
                f.stage = k_need_next;
                return step::consumed;
            }
            if ((f.stage == k_first || f.stage == k_need_next) && more) {
                f.stage = k_in_value;
                if (!push_value(item)) return step::reject;
                top().b = f.b;     // the items' values narrowed as the array's
                top().bits = f.bits;  // and without the candidates earlier items took (uniqueItems)
                return step::retry;
            }
            return step::reject;
        }
    }
    return step::reject;
}

json_automaton::step json_automaton::consume_choice(frame& f, uint8_t c) {
    const auto& texts = g_->lists_[static_cast<size_t>(f.id)].texts;
    const uint32_t pos = f.pos;
    // Candidates in [a, b) share their first pos bytes; those continuing
    // with c are contiguous. key(i): the byte at pos, -1 for a text that ends.
    auto key = [&](uint32_t i) { return texts[i].size() > pos ? static_cast<int>(static_cast<uint8_t>(texts[i][pos])) : -1; };
    uint32_t lo = f.a, hi = f.b;
    {
        uint32_t l = lo, h = hi;
        while (l < h) {
            const uint32_t m = l + (h - l) / 2;
            if (key(m) < c) l = m + 1;
            else h = m;
        }
        lo = l;
        h = hi;
        while (l < h) {
            const uint32_t m = l + (h - l) / 2;
            if (key(m) <= c) l = m + 1;
            else h = m;
        }
        hi = l;
    }
    if (lo == hi) return step::reject;
    if (f.bits != 0) {
        bool any = false;
        for (uint32_t i = lo; i < hi && !any; ++i) any = !excluded(f.bits, i);
        if (!any) return step::reject;
    }
    f.a = lo;
    f.b = hi;
    ++f.pos;
    return step::consumed;
}

json_automaton::step json_automaton::consume_value(frame& f, uint8_t c) {
    const json_grammar::gnode& n = g_->nodes_[static_cast<size_t>(f.id)];
    const uint8_t t = n.s->types;
    const int32_t node = f.id;
    const uint32_t narrowed = f.b;
    if (n.values >= 0) {
        const uint64_t excluded_candidates = f.bits;  // set by a uniqueItems array
        const int32_t list = narrowed != 0 ? static_cast<int32_t>(narrowed - 1) : n.values;
        f = frame{};
        f.k = kind::choice;
        f.id = list;
        f.b = static_cast<uint32_t>(g_->lists_[static_cast<size_t>(list)].texts.size());
        f.bits = excluded_candidates;
        return consume_choice(f, c);
    }
    auto become = [&](kind k, int32_t id, uint32_t pos) {
        f = frame{};
        f.k = k;
        f.id = id;
        f.pos = pos;
        if (k == kind::array) f.b = narrowed;
        return step::consumed;
    };
    // A kind whose bounds cross (an untyped node may carry them: its other
    // kinds still fit) is not started: it could never be finished.
    const schema_node& ns = *n.s;
    const bool strings = (t & json_types::string) && !(ns.min_length && ns.max_length && *ns.min_length > *ns.max_length);
    const bool arrays = (t & json_types::array) && !(ns.min_items && ns.max_items && *ns.min_items > *ns.max_items);
    switch (c) {
        case '{': return (t & json_types::object) ? become(kind::object, node, 0) : step::reject;
        case '[': return arrays ? become(kind::array, node, 0) : step::reject;
        case '"': return strings ? become(kind::string, node, 0) : step::reject;
        case 't': return (t & json_types::boolean) ? become(kind::literal, g_->lit_true_, 1) : step::reject;
        case 'f': return (t & json_types::boolean) ? become(kind::literal, g_->lit_false_, 1) : step::reject;
        case 'n': return (t & json_types::null) ? become(kind::literal, g_->lit_null_, 1) : step::reject;
        default:
            if ((c == '-' || is_digit(c)) && (t & (json_types::integer | json_types::number))) {
                become(kind::number, node, 0);
                return consume_number(f, c);
            }
            return step::reject;
    }
}

json_automaton::step json_automaton::consume_string(frame& f, uint8_t c) {
    const schema_node& s = *g_->nodes_[static_cast<size_t>(f.id)].s;
    // A string never holds "<tool_call>" or "</tool_call>" raw: the
    // tool-call parser reads the text, not the JSON, and would cut there
    // (JSON can write them as "<\/tool_call>"). f.pos packs how much of
    // each tag the string ends with ('<' occurs only first in both).
    {
        constexpr std::string_view open = "<tool_call>", close = "</tool_call>";
        uint32_t p = f.pos & 0xFF, q = f.pos >> 8;
        p = open[p] == static_cast<char>(c) ? p + 1 : (c == '<' ? 1 : 0);
        q = close[q] == static_cast<char>(c) ? q + 1 : (c == '<' ? 1 : 0);
        if (p == open.size() || q == close.size()) return step::reject;
        f.pos = p | (q << 8);
    }
    auto count_char = [&] {
        if (s.max_length && f.a + 1 > *s.max_length) return false;
        ++f.a;
        return true;
    };
    switch (f.stage) {
        case k_normal:
            if (c == '"') {
                if (s.min_length && f.a < *s.min_length) return step::reject;
                f.stage = k_done;
                return step::consumed;
            }
            if (c < 0x20) return step::reject;
            if (c == '\\') {
                if (!count_char()) return step::reject;
                f.stage = k_escape;
                return step::consumed;
            }
            if (c < 0x80) return count_char() ? step::consumed : step::reject;
            {
                uint8_t need = 0;
                if (c >= 0xC2 && c <= 0xDF) need = 1;
                else if (c >= 0xE0 && c <= 0xEF) need = 2;
                else if (c >= 0xF0 && c <= 0xF4) need = 3;
                else return step::reject;
                if (!count_char()) return step::reject;
                f.aux = c;
                f.aux2 = need;
                f.stage = k_utf8;
                return step::consumed;
            }
        case k_escape:
            if (c == 'u') {
                f.aux2 = 4;
                f.stage = k_hex;
                return step::consumed;
            }
            if (std::string_view("\"\\/bfnrt").find(static_cast<char>(c)) == std::string_view::npos) return step::reject;
            f.stage = k_normal;
            return step::consumed;
        case k_hex:
            // \uD800-\uDFFF would need a surrogate pair: not offered (nor \uDxxx at all, for simplicity).
            if (!is_hex(c) || (f.aux2 == 4 && (c == 'd' || c == 'D'))) return step::reject;
            if (--f.aux2 == 0) f.stage = k_normal;
            return step::consumed;
        case k_utf8: {
            uint8_t lo = 0x80, hi = 0xBF;  // the second byte of some leads has a narrower range (no overlongs, surrogates)
            if (f.aux == 0xE0) lo = 0xA0;
            else if (f.aux == 0xED) hi = 0x9F;
            else if (f.aux == 0xF0) lo = 0x90;
            else if (f.aux == 0xF4) hi = 0x8F;
            if (c < lo || c > hi) return step::reject;
            f.aux = 0;
            if (--f.aux2 == 0) f.stage = k_normal;
            return step::consumed;
        }
        default: return step::reject;
    }
}

// Can the number written so far (f) still become, or be (final_only), a
// value within the node's bounds? The values a decimal prefix can reach are
// a few ranges of the grid bounded numbers are written on
// (number_grid_index): the prefix itself, more integer digits, a fraction.
bool json_automaton::number_feasible(const schema_node& s, const frame& f, bool final_only) const {
    const bool integer_only = (s.types & json_types::number) == 0;
    const bool neg = (f.aux & 1) != 0;
    constexpr number_grid_index unit = k_grid_fraction;
    auto in = [&](number_grid_index g0, number_grid_index g1) { return bounded_number_in(s, neg, g0, g1); };
    // A whole integer part w, with any fraction after it unless integers only.
    auto units = [&](number_grid_index w0, number_grid_index w1) { return in(w0 * unit, w1 * unit + (integer_only ? 0 : unit - 1)); };
    const number_grid_index v = f.bits;
    switch (f.stage) {
        case k_minus: return !final_only && units(integer_only ? 1 : 0, k_grid_integer_limit - 1);
        case k_zero:
            if (final_only) return !neg && in(0, 0);
            return (!neg && in(0, 0)) || (!integer_only && in(0, unit - 1));
        case k_int: {
            if (in(v * unit, v * unit)) return true;
            if (final_only) return false;
            if (!integer_only && in(v * unit, v * unit + unit - 1)) return true;  // a fraction follows
            number_grid_index p = 1;
            for (uint32_t e = 1; f.a + e <= k_max_int_digits; ++e) {
                p *= 10;
                if (units(v * p, (v + 1) * p - 1)) return true;
            }
            return false;
        }
        case k_dot:
        case k_frac: {
            number_grid_index scale = 1;  // grid steps per unit of the last digit written
            for (uint32_t i = f.pos; i < 9; ++i) scale *= 10;
            const number_grid_index g = v * unit + static_cast<number_grid_index>(f.b) * scale;
            if (final_only) return f.stage == k_frac && in(g, g);
            return in(g, g + (f.stage == k_dot ? unit : scale) - 1);
        }
        default: return true;
    }
}

json_automaton::step json_automaton::consume_number(frame& f, uint8_t c) {
    const schema_node& s = *g_->nodes_[static_cast<size_t>(f.id)].s;
    const bool integer_only = (s.types & json_types::number) == 0;
    // Bounded numbers are checked digit by digit; they take no exponent and
    // at most 9 fraction digits (kept exactly in f.b).
    const bool bounded = s.minimum || s.maximum;
    frame g = f;  // the state after c, committed if feasible
    const bool neg = (g.aux & 1) != 0;
    switch (g.stage) {
        case k_start:
            if (c == '-') {
                g.aux |= 1;
                g.stage = k_minus;
                break;
            }
            [[fallthrough]];
        case k_minus:
        case k_int:
            if (!is_digit(c)) {
                if (g.stage != k_int || integer_only) return step::reject;
                if (c == '.') g.stage = k_dot;
                else if ((c == 'e' || c == 'E') && !bounded) g.stage = k_e;
                else return step::reject;
                break;
            }
            if (g.stage != k_int && c == '0') {
                if (neg && integer_only) return step::reject;  // no "-0"; "-0.5" is a number
                g.stage = k_zero;
                g.a = 1;
                g.bits = 0;
                break;
            }
            if (g.a >= k_max_int_digits) return step::reject;
            g.bits = g.bits * 10 + (c - '0');
            ++g.a;
            g.stage = k_int;
            break;
        case k_zero:
            if (integer_only) return step::reject;
            if (c == '.') g.stage = k_dot;
            else if ((c == 'e' || c == 'E') && !bounded) g.stage = k_e;
            else return step::reject;
            break;
        case k_dot:
        case k_frac:
            if (is_digit(c) && g.pos < (bounded ? 9u : k_max_frac_digits)) {
                ++g.pos;
                if (bounded) g.b = g.b * 10 + (c - '0');
                g.stage = k_frac;
                break;
            }
            if (g.stage == k_frac && (c == 'e' || c == 'E') && !bounded) {
                g.stage = k_e;
                break;
            }
            return step::reject;
        case k_e:
            if (c == '+' || c == '-') {
                g.stage = k_esign;
                break;
            }
            [[fallthrough]];
        case k_esign:
        case k_exp:
            if (!is_digit(c) || g.b >= 2) return step::reject;  // exponents up to 2 digits: within a double
            ++g.b;
            g.stage = k_exp;
            break;
        default: return step::reject;
    }
    if (bounded && !number_feasible(s, g, false)) return step::reject;
    f = g;
    return step::consumed;
}

bool json_automaton::advance(uint8_t c) {
    for (int guard = 0; guard < 4 * max_depth; ++guard) {
        if (depth_ == 0) return false;
        frame& f = top();
        const step s = consume(f, c);
        if (s == step::consumed) {
            pop_finished();
            return true;
        }
        if (s == step::retry) continue;  // frames were pushed: offer the byte to the new top
        if (!frame_can_end(f)) return false;
        // A frame that may end here (a number, a complete choice) ends, and its parent takes the byte.
        const frame child = f;
        --depth_;
        if (depth_ > 0) resume_parent(child);
        pop_finished();
    }
    return false;
}

bool json_automaton::can_end() const {
    json_automaton t;
    t.copy_from(*this);
    while (t.depth_ > 0) {
        if (!t.frame_can_end(t.top())) return false;
        const frame child = t.top();
        --t.depth_;
        if (t.depth_ > 0) t.resume_parent(child);
        t.pop_finished();
    }
    return true;
}

bool json_automaton::item_left(const frame& f) const {
    const json_grammar::gnode& n = g_->nodes_[static_cast<size_t>(f.id)];
    const schema_node& s = *n.s;
    if (s.max_items && f.a >= *s.max_items) return false;
    if (!s.unique_items || s.items < 0) return true;
    const int32_t values = g_->nodes_[static_cast<size_t>(n.child(s.items))].values;
    if (values < 0) return true;  // items not chosen from a list: not tracked
    const int32_t list = f.b != 0 ? static_cast<int32_t>(f.b - 1) : values;
    const size_t n_candidates = g_->lists_[static_cast<size_t>(list)].texts.size();
    if (n_candidates > 64) return true;  // candidates past the 64th are never excluded
    const uint64_t all = n_candidates == 64 ? ~uint64_t{0} : (uint64_t{1} << n_candidates) - 1;
    return (f.bits & all) != all;
}

bool json_automaton::in_plain_string() const {
    if (depth_ == 0) return false;
    const frame& f = top();
    if (f.k != kind::string || f.stage != k_normal || f.pos != 0) return false;
    const schema_node& s = *g_->nodes_[static_cast<size_t>(f.id)].s;
    return !s.max_length && (!s.min_length || f.a >= *s.min_length);
}

}  // namespace tachyon
