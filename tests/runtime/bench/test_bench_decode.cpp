// `tachyon bench decode`: the pp and tg tests run, at depth (-d) too, on a
// synthesized model, and a bad depth is refused with the option named.
#include "runtime/cli/commands.h"

#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "tests/runtime/cli/cli_capture.h"

using tachyon::testing::tachyon_cli;

TEST_CASE("bench decode measures prompt and generation after -d tokens of context, and refuses a negative depth") {
    const auto dir = std::filesystem::temp_directory_path() / ("tachyon_bench_decode_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string model = (dir / "m.gguf").string();
    auto o = tachyon_cli({"bench", "synth-model", model, "--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ffn", "128"});
    REQUIRE_MESSAGE(o.code == 0, o.err);

    o = tachyon_cli({"bench", "decode", "-m", model, "-p", "16", "-n", "8", "-d", "100", "-r", "1", "-t", "1", "--no-bandwidth", "--json"});
    REQUIRE_MESSAGE(o.code == 0, o.err);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(!parser.parse(simdjson::padded_string(o.out)).get(doc));
    simdjson::dom::array tests;
    REQUIRE(!doc["tests"].get(tests));
    REQUIRE(tests.size() == 2);
    std::string_view pp, tg;
    double pp_rate = 0, tg_rate = 0;
    CHECK(!tests.at(0)["test"].get(pp));
    CHECK(!tests.at(1)["test"].get(tg));
    CHECK(pp == "pp16 @ d100");
    CHECK(tg == "tg8 @ d100");
    CHECK(!tests.at(0)["tokens_per_s"].get(pp_rate));
    CHECK(!tests.at(1)["tokens_per_s"].get(tg_rate));
    CHECK(pp_rate > 0);
    CHECK(tg_rate > 0);
    // Each generated token reads its stream's K and V so far, fp16: 2 layers x
    // 32 values (2 KV heads of 16) x K and V x 2 bytes x 104.5 positions on
    // average (100 of depth, then 1 to 8).
    uint64_t kv_bytes = 0;
    CHECK(!doc["kv_bytes_per_token"].get(kv_bytes));
    CHECK(kv_bytes == 26752);
    // --kv-f32: twice that
    o = tachyon_cli({"bench", "decode", "-m", model, "-p", "0", "-n", "8", "-d", "100", "-r", "1", "-t", "1", "--no-bandwidth", "--json", "--kv-f32"});
    REQUIRE_MESSAGE(o.code == 0, o.err);
    simdjson::dom::element doc32;
    REQUIRE(!parser.parse(simdjson::padded_string(o.out)).get(doc32));
    CHECK(!doc32["kv_bytes_per_token"].get(kv_bytes));
    CHECK(kv_bytes == 2 * 26752);

    // without --no-bandwidth: the weights' rate against the read bandwidth of their own pages
    o = tachyon_cli({"bench", "decode", "-m", model, "-p", "0", "-n", "8", "-r", "1", "-t", "1", "--json"});
    REQUIRE_MESSAGE(o.code == 0, o.err);
    simdjson::dom::element docbw;
    REQUIRE(!parser.parse(simdjson::padded_string(o.out)).get(docbw));
    double read_gb_s = 0, tg_gb_s = 0;
    std::string_view read_of;
    CHECK(!docbw["read_bandwidth_gb_per_s"].get(read_gb_s));
    CHECK(!docbw["tg_weight_gb_per_s"].get(tg_gb_s));
    CHECK(!docbw["read_bandwidth_of"].get(read_of));
    CHECK(read_gb_s > 0);
    CHECK(tg_gb_s > 0);
    CHECK(read_of == "weights");

    o = tachyon_cli({"bench", "decode", "-m", model, "-d", "-5"});
    CHECK(o.code != 0);
    CHECK(o.err.find("-d") != std::string::npos);
    std::filesystem::remove_all(dir);
}
