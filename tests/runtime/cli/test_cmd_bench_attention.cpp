// `tachyon bench attention`: every head size and row count a model asks of
// the kernels runs and reports its rate; bad options name themselves and
// what was expected.
#include <doctest/doctest.h>

#include <simdjson.h>

#include <string>

#include "tests/runtime/cli/cli_capture.h"

namespace {

using tachyon::testing::tachyon_cli;

}  // namespace

TEST_CASE("bench attention measures each head size and cache type and reports one sample per row count") {
    for (const char* hd : {"32", "64", "128", "72"}) {  // 72: a head size with no kernel of its own
        for (const char* kv : {"f16", "f32"}) {
            CAPTURE(hd);
            CAPTURE(kv);
            const auto o = tachyon_cli({"bench", "attention", "--head-dim", hd, "--positions", "83", "--rows", "1,7,8", "--kv", kv,
                                        "--seconds", "0.001", "--json"});
            REQUIRE(o.code == 0);
            simdjson::dom::parser parser;
            simdjson::dom::element doc;
            REQUIRE(parser.parse(o.out).get(doc) == simdjson::SUCCESS);
            CHECK(int64_t(doc["head_dim"]) == std::stoi(hd));
            CHECK(int64_t(doc["positions"]) == 83);
            CHECK(std::string(std::string_view(doc["kv"])) == kv);
            simdjson::dom::array samples = doc["samples"];
            REQUIRE(samples.size() == 3);
            int64_t expected_rows[] = {1, 7, 8}, i = 0;
            for (simdjson::dom::element s : samples) {
                CHECK(int64_t(s["rows"]) == expected_rows[i++]);
                CHECK(double(s["us_per_call"]) > 0.0);
                CHECK(double(s["gfma_per_s"]) > 0.0);
            }
        }
    }
}

TEST_CASE("bench attention names a bad head size, row count, cache type and position count") {
    auto o = tachyon_cli({"bench", "attention", "--head-dim", "30"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--head-dim must be a multiple of 8") != std::string::npos);
    o = tachyon_cli({"bench", "attention", "--rows", "1,9"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--rows: '9'") != std::string::npos);
    o = tachyon_cli({"bench", "attention", "--kv", "q8_0"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--kv must be f16 or f32; got 'q8_0'") != std::string::npos);
    o = tachyon_cli({"bench", "attention", "--positions", "0"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--positions must be in 1..1048576") != std::string::npos);
}
