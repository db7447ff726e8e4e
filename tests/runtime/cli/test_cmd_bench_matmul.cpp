// `tachyon bench matmul`: every weight type with kernels streams and reports
// its rate; bad options name themselves and what was expected.
#include <doctest/doctest.h>

#include <simdjson.h>

#include <string>

#include "tests/runtime/cli/cli_capture.h"

namespace {

using tachyon::testing::tachyon_cli;

}  // namespace

TEST_CASE("bench matmul measures every weight type with kernels and reports one sample per thread count and batch") {
    for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k",
                             "iq4_xs"}) {
        CAPTURE(type);
        const auto o = tachyon_cli({"bench", "matmul", "--type", type, "--rows", "40", "--cols", "512", "--mib", "1", "-t", "1,2",
                                    "--tokens", "1,3", "--seconds", "0.001", "--no-bandwidth", "--json"});
        REQUIRE(o.code == 0);
        simdjson::dom::parser parser;
        simdjson::dom::element doc;
        REQUIRE(parser.parse(o.out).get(doc) == simdjson::SUCCESS);
        CHECK(std::string(std::string_view(doc["type"])) == type);
        CHECK(int64_t(doc["rows"]) == 40);
        CHECK(int64_t(doc["matrices"]) >= 1);
        simdjson::dom::array samples = doc["samples"];
        CHECK(samples.size() == 4);  // threads 1, 2 x tokens 1, 3
        for (simdjson::dom::element s : samples) CHECK(double(s["gb_per_s"]) > 0.0);
    }
}

TEST_CASE("bench matmul names a bad type, a row length off the block size and a bad list") {
    auto o = tachyon_cli({"bench", "matmul", "--type", "q9_9"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--type must be one of") != std::string::npos);
    CHECK(o.err.find("'q9_9'") != std::string::npos);
    o = tachyon_cli({"bench", "matmul", "--type", "q4_k", "--cols", "100"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--cols must be a positive multiple of 256") != std::string::npos);
    o = tachyon_cli({"bench", "matmul", "--tokens", "1,x"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--tokens: 'x'") != std::string::npos);
}
