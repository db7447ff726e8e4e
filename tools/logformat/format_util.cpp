#include "tools/logformat/format_util.h"

namespace tachyon::logformat::detail {

std::size_t read_program(std::string_view line, std::size_t i, line_fields& out) {
    const std::size_t begin = i;
    while (i < line.size() && !is_space(line[i]) && line[i] != '[' && line[i] != ':' && line[i] != '(') ++i;
    if (i == begin || i - begin > 128) return std::string_view::npos;
    const std::size_t name_end = i;
    if (i < line.size() && line[i] == '(') {  // "sshd(pam_unix)"
        std::size_t close = line.find(')', i);
        if (close == std::string_view::npos || close - i > 64) return std::string_view::npos;
        i = close + 1;
    }
    text_span pid;
    if (i < line.size() && line[i] == '[') {
        std::size_t close = line.find(']', i);
        if (close == std::string_view::npos || close - i > 24) return std::string_view::npos;
        pid = span_of(i + 1, close);
        i = close + 1;
    }
    if (i >= line.size() || line[i] != ':') return std::string_view::npos;
    out.service = span_of(begin, name_end);
    out.pid = pid;
    return i + 1;
}

std::size_t find_level_token(std::string_view line, std::size_t i, int max_tokens, line_fields& out) {
    for (int n = 0; n < max_tokens && i < line.size(); ++n) {
        i = skip_spaces(line, i);
        std::size_t e = token_end(line, i);
        std::string_view tok = line.substr(i, e - i);
        bool bracketed = false;
        while (!tok.empty() && (tok.front() == '[' || tok.front() == '<' || tok.front() == '(')) tok.remove_prefix(1), bracketed = true;
        while (!tok.empty() && (tok.back() == ']' || tok.back() == ':' || tok.back() == '>' || tok.back() == ')' || tok.back() == ','))
            tok.remove_suffix(1);
        bool upper = tok.size() >= 3;
        for (char c : tok) upper &= (c >= 'A' && c <= 'Z');
        if (upper || bracketed) {
            if (auto s = severity_from_word(tok)) {
                out.level = *s;
                return e;
            }
        }
        i = e;
    }
    return std::string_view::npos;
}

bool find_level_pair(std::string_view line, line_fields& out) {
    std::string_view head = line.substr(0, 400);
    for (std::string_view key : {"level=", "lvl=", "severity="}) {
        for (std::size_t at = head.find(key); at != std::string_view::npos; at = head.find(key, at + 1)) {
            if (at > 0 && !is_space(head[at - 1])) continue;
            std::size_t k = at + key.size();
            if (k < line.size() && line[k] == '"') ++k;
            std::size_t e = k;
            while (e < line.size() && is_alpha(line[e])) ++e;
            if (auto s = severity_from_word(line.substr(k, e - k))) {
                out.level = *s;
                return true;
            }
        }
    }
    return false;
}

void find_trace(std::string_view line, line_fields& out) {
    std::size_t at = 0;
    while ((at = line.find("trace", at)) != std::string_view::npos) {
        std::size_t k = at + 5;
        if (line.compare(k, 3, "_id") == 0 || line.compare(k, 3, "-id") == 0 || line.compare(k, 2, "Id") == 0 ||
            line.compare(k, 2, "ID") == 0)
            k += line[k] == '_' || line[k] == '-' ? 3 : 2;
        if (k < line.size() && (line[k] == '=' || line[k] == ':')) {
            ++k;
            while (k < line.size() && (line[k] == ' ' || line[k] == '"')) ++k;
            std::size_t e = k;
            while (e < line.size() && is_hex(line[e])) ++e;
            if (e - k >= 8 && k <= 0xffff) {
                out.trace = span_of(k, k + std::min<std::size_t>(e - k, 64));
                return;
            }
        }
        at += 5;
    }
}

}  // namespace tachyon::logformat::detail
