#include "inference/kernels/ops.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

using namespace tachyon;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

std::vector<kernel_isa> isas() {
    std::vector<kernel_isa> v{kernel_isa::scalar};
    if (cpu_has_avx2()) v.push_back(kernel_isa::avx2);
    return v;
}

// Lengths around the 8- and 16-wide vector loops and their tails.
const int64_t lengths[] = {1, 5, 8, 15, 16, 17, 64, 263};

}  // namespace

TEST_CASE("rmsnorm scales by the inverse root mean square and the weights") {
    for (kernel_isa isa : isas()) {
        for (int64_t n : lengths) {
            CAPTURE(to_string(isa));
            CAPTURE(n);
            const auto x = random_floats(static_cast<size_t>(n), 1, 3.0f);
            const auto w = random_floats(static_cast<size_t>(n), 2);
            std::vector<float> y(static_cast<size_t>(n));
            rmsnorm(y.data(), x.data(), w.data(), n, 1e-5f, isa);
            double ss = 0.0;
            for (float v : x) ss += static_cast<double>(v) * v;
            const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + 1e-5);
            for (int64_t i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(x[i] * scale * w[i]).epsilon(1e-5));
        }
    }
}

TEST_CASE("rmsnorm works in place and eps keeps a zero row finite") {
    for (kernel_isa isa : isas()) {
        std::vector<float> x(20, 0.0f), w(20, 1.0f);
        rmsnorm(x.data(), x.data(), w.data(), 20, 1e-6f, isa);
        for (float v : x) CHECK(v == 0.0f);
        std::vector<float> z{3.0f, 4.0f};
        std::vector<float> ones{1.0f, 1.0f};
        rmsnorm(z.data(), z.data(), ones.data(), 2, 0.0f, isa);
        const float rms = std::sqrt(12.5f);
        CHECK(z[0] == doctest::Approx(3.0f / rms));
        CHECK(z[1] == doctest::Approx(4.0f / rms));
    }
}

TEST_CASE("softmax matches exp(x - max) / sum and is stable for large inputs") {
    for (kernel_isa isa : isas()) {
        for (int64_t n : lengths) {
            CAPTURE(to_string(isa));
            CAPTURE(n);
            auto x = random_floats(static_cast<size_t>(n), 3, 8.0f);
            x[0] += 1000.0f;  // would overflow exp() without subtracting the max
            std::vector<double> ref(x.begin(), x.end());
            double max = -1e300, sum = 0.0;
            for (double v : ref) max = std::max(max, v);
            for (double& v : ref) sum += (v = std::exp(v - max));
            softmax(x.data(), n, isa);
            double total = 0.0;
            for (int64_t i = 0; i < n; ++i) {
                CHECK(std::fabs(x[i] - ref[i] / sum) <= 2e-6 * (ref[i] / sum) + 1e-37);
                total += x[i];
            }
            CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
        }
    }
}

TEST_CASE("softmax gives masked (-inf) entries zero weight") {
    for (kernel_isa isa : isas()) {
        std::vector<float> x(19, -std::numeric_limits<float>::infinity());
        x[3] = 1.0f;
        x[12] = 1.0f;
        x[18] = 1.0f - std::log(2.0f);
        softmax(x.data(), 19, isa);
        for (int i = 0; i < 19; ++i) {
            if (i == 3 || i == 12) CHECK(x[i] == doctest::Approx(0.4f));
            else if (i == 18) CHECK(x[i] == doctest::Approx(0.2f));
            else CHECK(x[i] == 0.0f);
        }
    }
}

TEST_CASE("silu_mul computes g / (1 + e^-g) * u, including extreme gates") {
    for (kernel_isa isa : isas()) {
        for (int64_t n : lengths) {
            CAPTURE(to_string(isa));
            CAPTURE(n);
            auto g = random_floats(static_cast<size_t>(n), 4, 4.0f);
            const auto u = random_floats(static_cast<size_t>(n), 5);
            g[0] = n > 1 ? -120.0f : 120.0f;
            std::vector<float> y(static_cast<size_t>(n));
            silu_mul(y.data(), g.data(), u.data(), n, isa);
            for (int64_t i = 0; i < n; ++i) {
                const double ref = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
                CHECK(std::fabs(y[i] - ref) <= 2e-6 * std::fabs(ref) + 1e-30);
            }
        }
    }
}

TEST_CASE("add sums elementwise, in place too") {
    for (kernel_isa isa : isas()) {
        for (int64_t n : lengths) {
            auto a = random_floats(static_cast<size_t>(n), 6);
            const auto b = random_floats(static_cast<size_t>(n), 7);
            const auto a0 = a;
            add(a.data(), a.data(), b.data(), n, isa);
            for (int64_t i = 0; i < n; ++i) CHECK(a[i] == a0[i] + b[i]);
        }
    }
}

TEST_CASE("rope rotates (2i, 2i+1) pairs in normal mode and (i, i+d/2) pairs in neox mode") {
    const int64_t n_heads = 2, head_dim = 8, n_tokens = 3;
    const int32_t positions[n_tokens] = {0, 1, 7};
    const float base = 10000.0f;
    for (rope_mode mode : {rope_mode::normal, rope_mode::neox}) {
        CAPTURE(mode == rope_mode::normal ? "normal" : "neox");
        const auto x0 = random_floats(static_cast<size_t>(n_tokens * n_heads * head_dim), 8);
        auto x = x0;
        rope(x.data(), n_tokens, n_heads, head_dim, positions, base, mode);
        for (int64_t t = 0; t < n_tokens; ++t) {
            for (int64_t h = 0; h < n_heads; ++h) {
                const int64_t off = (t * n_heads + h) * head_dim;
                for (int64_t i = 0; i < head_dim / 2; ++i) {
                    const int64_t a = mode == rope_mode::normal ? 2 * i : i;
                    const int64_t b = mode == rope_mode::normal ? 2 * i + 1 : i + head_dim / 2;
                    const double theta = positions[t] * std::pow(10000.0, -2.0 * static_cast<double>(i) / head_dim);
                    const double ra = x0[off + a] * std::cos(theta) - x0[off + b] * std::sin(theta);
                    const double rb = x0[off + a] * std::sin(theta) + x0[off + b] * std::cos(theta);
                    CHECK(x[off + a] == doctest::Approx(ra).epsilon(1e-5).scale(1.0));
                    CHECK(x[off + b] == doctest::Approx(rb).epsilon(1e-5).scale(1.0));
                }
            }
        }
        // Position 0 is the identity.
        for (int64_t k = 0; k < n_heads * head_dim; ++k) CHECK(x[k] == x0[k]);
    }
}

namespace {

// Pair j of a head at position p, as the RoPE description states it, in double.
double direct_angle(int32_t p, int j, const rope_angles& a) {
    double extrap = p * std::pow(static_cast<double>(a.base), -2.0 * j / a.n_rot);
    if (a.freq_factors) extrap /= a.freq_factors[j];
    const double interp = extrap * a.freq_scale;
    if (a.ext_factor == 0.0f) return interp;
    const double y = (j - a.corr_low) / std::max(0.001, static_cast<double>(a.corr_high) - a.corr_low);
    const double r = a.ext_factor * (1.0 - std::min(1.0, std::max(0.0, y)));
    return interp * (1.0 - r) + extrap * r;
}

// x rotated by direct_angle: dims [0, n_rot) of each head in the mode's pairs, times mscale; the rest as it was.
std::vector<double> direct_rope(const std::vector<float>& x0, const int32_t* positions, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                                const rope_angles& a, rope_mode mode) {
    std::vector<double> y(x0.begin(), x0.end());
    const int half = a.n_rot / 2;
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t h = 0; h < n_heads; ++h)
            for (int j = 0; j < half; ++j) {
                const int64_t off = (t * n_heads + h) * head_dim;
                const int64_t i0 = off + (mode == rope_mode::normal ? 2 * j : j);
                const int64_t i1 = off + (mode == rope_mode::normal ? 2 * j + 1 : j + half);
                const double th = direct_angle(positions[t], j, a);
                y[i0] = a.mscale * (x0[i0] * std::cos(th) - x0[i1] * std::sin(th));
                y[i1] = a.mscale * (x0[i0] * std::sin(th) + x0[i1] * std::cos(th));
            }
    return y;
}

}  // namespace

TEST_CASE("rope variants (frequency factors, partial rotation, linear and YaRN angles, magnitude) follow the direct formula") {
    const int64_t n_heads = 2, head_dim = 16, n_tokens = 4;
    const int32_t positions[n_tokens] = {0, 1, 300, 5000};
    const float factors[6] = {1.0f, 1.5f, 2.0f, 4.0f, 8.0f, 32.0f};
    struct variant {
        const char* name;
        rope_angles a;
    };
    std::vector<variant> variants;
    rope_angles plain;
    plain.n_rot = 16;
    plain.base = 10000.0f;
    variants.push_back({"plain", plain});
    rope_angles ff = plain;
    ff.n_rot = 12;  // partial: dims 12..15 stay
    ff.freq_factors = factors;
    ff.mscale = 1.19024f;
    variants.push_back({"partial, factors, magnitude", ff});
    rope_angles linear = plain;
    linear.freq_scale = 0.125f;
    variants.push_back({"linear x8", linear});
    rope_angles yarn = plain;
    yarn.base = 1e6f;
    yarn.freq_scale = 1.0f / 16.0f;
    yarn.ext_factor = 1.0f;
    rope_yarn_corr_dims(16, 16384, yarn.base, 32.0f, 1.0f, yarn.corr_low, yarn.corr_high);
    variants.push_back({"yarn", yarn});
    for (const variant& v : variants) {
        for (rope_mode mode : {rope_mode::normal, rope_mode::neox}) {
            CAPTURE(v.name);
            CAPTURE(mode == rope_mode::normal ? "normal" : "neox");
            const auto x0 = random_floats(static_cast<size_t>(n_tokens * n_heads * head_dim), 21);
            auto x = x0;
            std::vector<float> cs(static_cast<size_t>(n_tokens * v.a.n_rot));
            rope_table(cs.data(), n_tokens, positions, v.a);
            rope_apply(x.data(), n_tokens, n_heads, head_dim, v.a.n_rot, cs.data(), mode);
            const auto want = direct_rope(x0, positions, n_tokens, n_heads, head_dim, v.a, mode);
            for (size_t i = 0; i < x.size(); ++i) CHECK(x[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(1.0));
        }
    }
}

TEST_CASE("the YaRN correction range of Ministral 3 (64 dims, base 1e6, 16384 positions, beta 32 and 1) is pairs 10 to 19") {
    float low = 0.0f, high = 0.0f;
    rope_yarn_corr_dims(64, 16384, 1e6f, 32.0f, 1.0f, low, high);
    CHECK(low == 10.0f);
    CHECK(high == 19.0f);
}

TEST_CASE("gelu_tanh_mul is 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) u, softcap is cap tanh(x / cap), scale multiplies") {
    const auto g = random_floats(263, 4, 3.0f), u = random_floats(263, 5);
    std::vector<float> y(g.size());
    gelu_tanh_mul(y.data(), g.data(), u.data(), static_cast<int64_t>(g.size()));
    for (size_t i = 0; i < g.size(); ++i) {
        const double x = g[i];
        const double want = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x))) * u[i];
        CHECK(y[i] == doctest::Approx(want).epsilon(1e-5).scale(1.0));
    }
    auto x = random_floats(100, 6, 80.0f);
    const auto x0 = x;
    softcap(x.data(), static_cast<int64_t>(x.size()), 30.0f);
    for (size_t i = 0; i < x.size(); ++i) {
        CHECK(x[i] == doctest::Approx(30.0 * std::tanh(x0[i] / 30.0)).epsilon(1e-5).scale(1.0));
        CHECK(std::fabs(x[i]) < 30.0f);
    }
    scale(x.data(), static_cast<int64_t>(x.size()), 0.5f);
    CHECK(x[3] == doctest::Approx(0.5 * 30.0 * std::tanh(x0[3] / 30.0)).epsilon(1e-5));
}
