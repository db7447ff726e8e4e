#include "runtime/cli/logits_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

namespace tachyon {
namespace {

constexpr char magic[4] = {'T', 'L', 'O', 'G'};
constexpr uint32_t version = 1;

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const unsigned char* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

status write_logits_file(const std::string& path, const logits_table& t) {
    if (t.values.size() != size_t{t.n_pos} * t.n_vocab) return make_error(errc::invalid_argument, path + ": logits table shape does not match its values");
    std::string header(magic, 4);
    put_u32(header, version);
    put_u32(header, t.n_pos);
    put_u32(header, t.n_vocab);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(errc::io_error, path + ": cannot open for writing");
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    static_assert(sizeof(float) == 4);
    out.write(reinterpret_cast<const char*>(t.values.data()), static_cast<std::streamsize>(t.values.size() * sizeof(float)));
    out.flush();
    if (!out) return make_error(errc::io_error, path + ": write failed");
    return {};
}

result<logits_table> read_logits_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(errc::io_error, path + ": cannot open for reading");
    unsigned char h[16];
    in.read(reinterpret_cast<char*>(h), sizeof h);
    if (in.gcount() != sizeof h || std::memcmp(h, magic, 4) != 0)
        return make_error(errc::parse_error, path + ": not a TLOG logits file (expected the magic \"TLOG\" and a 16-byte header)");
    logits_table t;
    const uint32_t v = get_u32(h + 4);
    if (v != version) return make_error(errc::unsupported, path + ": TLOG version " + std::to_string(v) + " (expected 1)");
    t.n_pos = get_u32(h + 8);
    t.n_vocab = get_u32(h + 12);
    const uint64_t n = uint64_t{t.n_pos} * t.n_vocab;
    in.seekg(0, std::ios::end);
    const auto size = static_cast<uint64_t>(in.tellg());
    if (n > (uint64_t{1} << 34) || size != 16 + n * 4) {
        return make_error(errc::parse_error, path + ": " + std::to_string(size) + " bytes, expected 16 + 4 * " + std::to_string(t.n_pos) + " * " +
                                                 std::to_string(t.n_vocab) + " for the header's shape");
    }
    in.seekg(16);
    t.values.resize(static_cast<size_t>(n));
    in.read(reinterpret_cast<char*>(t.values.data()), static_cast<std::streamsize>(n * 4));
    if (!in) return make_error(errc::io_error, path + ": read failed");
    return t;
}

result<logits_difference> compare_logits(const logits_table& a, const logits_table& ref) {
    if (a.n_pos != ref.n_pos || a.n_vocab != ref.n_vocab) {
        return make_error(errc::invalid_argument, "logits of " + std::to_string(a.n_pos) + " positions x " + std::to_string(a.n_vocab) +
                                                      " ids cannot be compared with a reference of " + std::to_string(ref.n_pos) + " x " +
                                                      std::to_string(ref.n_vocab));
    }
    logits_difference d;
    double num = 0, den = 0;
    for (uint32_t p = 0; p < a.n_pos; ++p) {
        const float* x = a.values.data() + size_t{p} * a.n_vocab;
        const float* y = ref.values.data() + size_t{p} * a.n_vocab;
        for (uint32_t i = 0; i < a.n_vocab; ++i) {
            const double e = double{x[i]} - double{y[i]};
            num += e * e;
            den += double{y[i]} * y[i];
            d.max_abs = std::max(d.max_abs, std::abs(e));
        }
        if (a.n_vocab > 0 && std::max_element(x, x + a.n_vocab) - x == std::max_element(y, y + a.n_vocab) - y) ++d.argmax_equal;
    }
    d.rel_rms = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    return d;
}

}  // namespace tachyon
