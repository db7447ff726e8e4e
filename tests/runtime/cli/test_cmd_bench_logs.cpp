// `tachyon bench logs` on a small directory: one row per thread count, the
// bad option values named.
#include "runtime/cli/commands.h"

#include <doctest/doctest.h>

#include "tests/runtime/cli/cli_capture.h"

using tachyon::testing::tachyon_cli;

TEST_CASE("bench logs: loads the generated formats on each thread count and prints MB/s and peak memory") {
    auto o = tachyon_cli({"bench", "logs", "--mb", "2", "-t", "1,2"});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("in 19 formats (+ traces)") != std::string::npos);
    CHECK(o.out.find("| threads |") != std::string::npos);
    CHECK(o.out.find("|       1 |") != std::string::npos);
    CHECK(o.out.find("|       2 |") != std::string::npos);
    CHECK(o.out.find("|          0 |") == std::string::npos);  // entries were read

    o = tachyon_cli({"bench", "logs", "--mb", "0"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--mb: expected 1..65536") != std::string::npos);
    o = tachyon_cli({"bench", "logs", "--mb", "1", "-t", "two"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--threads: 'two'") != std::string::npos);
}
