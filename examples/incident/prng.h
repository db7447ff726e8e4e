// The incident world's random numbers: xoshiro256** seeded through
// splitmix64. Own generator (not <random>'s distributions) so that a seed
// gives byte-identical incidents with any standard library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/assert.h"

namespace incident {

inline uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

class prng {
public:
    explicit prng(uint64_t seed) {
        uint64_t sm = seed;
        for (auto& s : s_) s = splitmix64(sm);
    }

    uint64_t next() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform in [0, n); the modulo bias (< n / 2^64) is irrelevant here.
    uint64_t below(uint64_t n) {
        TACHYON_ASSERT(n > 0, "prng::below(0)");
        return next() % n;
    }
    // Uniform integer in [lo, hi].
    int64_t range(int64_t lo, int64_t hi) {
        TACHYON_ASSERT(lo <= hi, "prng::range with lo > hi");
        return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
    }
    // Uniform in [0, 1).
    double real() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    double real(double lo, double hi) { return lo + (hi - lo) * real(); }
    bool chance(double p) { return real() < p; }

    template <class T>
    const T& pick(const std::vector<T>& v) {
        TACHYON_ASSERT(!v.empty(), "prng::pick from an empty list");
        return v[below(v.size())];
    }
    template <class T>
    void shuffle(std::vector<T>& v) {
        for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
    }

    std::string hex(int n_digits) {
        static constexpr char digits[] = "0123456789abcdef";
        std::string out(static_cast<size_t>(n_digits), '0');
        uint64_t bits = next();
        for (int i = 0; i < n_digits; ++i) {
            if (i == 16) bits = next();
            out[static_cast<size_t>(i)] = digits[bits & 15];
            bits >>= 4;
        }
        return out;
    }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

}  // namespace incident
