#include "runtime/telemetry/trace_context.h"

#include <algorithm>
#include <random>

namespace tachyon::telemetry {
namespace {

constexpr char k_hex[] = "0123456789abcdef";

template <size_t N>
std::string hex_of(const std::array<uint8_t, N>& bytes) {
    std::string out(2 * N, '0');
    for (size_t i = 0; i < N; ++i) {
        out[2 * i] = k_hex[bytes[i] >> 4];
        out[2 * i + 1] = k_hex[bytes[i] & 0xf];
    }
    return out;
}

// Lower-case hex only: the spec forbids upper case in traceparent.
int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

template <size_t N>
bool read_hex(std::string_view text, std::array<uint8_t, N>& out) {
    if (text.size() != 2 * N) return false;
    for (size_t i = 0; i < N; ++i) {
        const int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return true;
}

template <size_t N>
bool all_zero(const std::array<uint8_t, N>& a) {
    return std::all_of(a.begin(), a.end(), [](uint8_t b) { return b == 0; });
}

std::mt19937_64& rng() {
    thread_local std::mt19937_64 g{(static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()};
    return g;
}

template <size_t N>
std::array<uint8_t, N> random_id() {
    std::array<uint8_t, N> id{};
    do {
        for (size_t i = 0; i < N; i += 8) {
            uint64_t v = rng()();
            for (size_t k = 0; k < 8 && i + k < N; ++k) id[i + k] = static_cast<uint8_t>(v >> (8 * k));
        }
    } while (all_zero(id));
    return id;
}

}  // namespace

bool span_context::valid() const { return !all_zero(trace) && !all_zero(span); }

std::string to_hex(const trace_id& id) { return hex_of(id); }
std::string to_hex(const span_id& id) { return hex_of(id); }

result<span_context> parse_traceparent(std::string_view header) {
    const auto bad = [&](const std::string& why) {
        return make_error(errc::invalid_argument, "traceparent '" + std::string(header.substr(0, 80)) + "': " + why +
                                                      " (expected 00-<32 lower-case hex>-<16 lower-case hex>-<2 hex flags>)");
    };
    // version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55 characters.
    if (header.size() < 55) return bad("too short");
    uint8_t version = 0;
    {
        std::array<uint8_t, 1> v{};
        if (!read_hex(header.substr(0, 2), v)) return bad("the version is not two hex digits");
        version = v[0];
    }
    if (version == 0xff) return bad("version ff is invalid");
    if (version == 0 && header.size() != 55) return bad("version 00 has exactly four fields");
    // A later version may append fields after a '-'.
    if (version != 0 && header.size() > 55 && header[55] != '-') return bad("a field of a later version must follow a '-'");
    if (header[2] != '-' || header[35] != '-' || header[52] != '-') return bad("the fields are not separated by '-'");
    span_context ctx;
    if (!read_hex(header.substr(3, 32), ctx.trace)) return bad("the trace id is not 32 lower-case hex digits");
    if (!read_hex(header.substr(36, 16), ctx.span)) return bad("the parent id is not 16 lower-case hex digits");
    std::array<uint8_t, 1> flags{};
    if (!read_hex(header.substr(53, 2), flags)) return bad("the flags are not two hex digits");
    if (all_zero(ctx.trace)) return bad("the trace id is all zeros");
    if (all_zero(ctx.span)) return bad("the parent id is all zeros");
    ctx.sampled = (flags[0] & 1) != 0;
    return ctx;
}

std::string format_traceparent(const span_context& ctx) {
    return "00-" + to_hex(ctx.trace) + "-" + to_hex(ctx.span) + (ctx.sampled ? "-01" : "-00");
}

trace_id new_trace_id() { return random_id<16>(); }
span_id new_span_id() { return random_id<8>(); }

}  // namespace tachyon::telemetry
