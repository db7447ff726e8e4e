// `tachyon logits`: what a user runs to hold a GGUF file against another
// engine. The TLOG file round trip, batch against one-by-one, --compare,
// and the errors of bad input.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "runtime/cli/logits_file.h"
#include "tests/runtime/cli/cli_capture.h"

namespace {

using tachyon::testing::tachyon_cli;

const std::string shipped = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";
const std::string arch_dir = std::string(TACHYON_CONFORMANCE_DIR) + "/arch";

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("tachyon-logits-" + std::to_string(::getpid()) + "-" + name)).string();
}

// "relative RMS X, ..." from --compare's line.
double rel_rms_of(const std::string& out) {
    const auto at = out.find("relative RMS ");
    REQUIRE(at != std::string::npos);
    return std::stod(out.substr(at + 13));
}

}  // namespace

TEST_CASE("a TLOG file reads back as written, a file of another kind is refused by name") {
    const std::string path = temp_path("rt.bin");
    tachyon::logits_table t{2, 3, {1, 2, 3, -4, 5.5f, 6}};
    REQUIRE(tachyon::write_logits_file(path, t));
    auto r = tachyon::read_logits_file(path);
    REQUIRE(r);
    CHECK(r->n_pos == 2);
    CHECK(r->n_vocab == 3);
    CHECK(r->values == t.values);
    CHECK(std::filesystem::file_size(path) == 16 + 6 * 4);

    std::ofstream(path, std::ios::binary | std::ios::trunc) << "XLOG0000000000000000";
    auto bad = tachyon::read_logits_file(path);
    REQUIRE_FALSE(bad);
    CHECK(bad.err().message.find(path) != std::string::npos);
    CHECK(bad.err().message.find("TLOG") != std::string::npos);
    std::filesystem::remove(path);
}

TEST_CASE("compare_logits: relative RMS, max abs and argmax agreement") {
    tachyon::logits_table ref{2, 2, {1, 0, 0, 1}};
    tachyon::logits_table a{2, 2, {1, 0, 1, 0}};
    auto d = tachyon::compare_logits(a, ref);
    REQUIRE(d);
    CHECK(d->argmax_equal == 1);
    CHECK(d->max_abs == doctest::Approx(1));
    CHECK(d->rel_rms == doctest::Approx(1));  // sqrt(2 / 2)
    tachyon::logits_table other{1, 2, {0, 0}};
    CHECK_FALSE(tachyon::compare_logits(other, ref));
}

TEST_CASE("logits of the shipped model: the file, batch against one-by-one, --exact against the fast path") {
    const std::string batch = temp_path("batch.bin"), single = temp_path("single.bin"), exact = temp_path("exact.bin");
    const std::string ids = "2041 2042 367 10 87 104 1137";
    auto o = tachyon_cli({"logits", "-m", shipped, "--ids", ids, "--out", batch});
    REQUIRE(o.code == 0);
    auto t = tachyon::read_logits_file(batch);
    REQUIRE(t);
    CHECK(t->n_pos == 7);
    CHECK(t->n_vocab == 2048);

    o = tachyon_cli({"logits", "-m", shipped, "--ids", ids, "--one-by-one", "--compare", batch});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("argmax equal 7/7") != std::string::npos);
    CHECK(rel_rms_of(o.out) < 1e-3);

    o = tachyon_cli({"logits", "-m", shipped, "--ids", ids, "--exact", "-t", "2", "--compare", batch});
    REQUIRE(o.code == 0);
    CHECK(rel_rms_of(o.out) < 1e-2);

    // --last keeps the final positions: the text form, one line per position.
    o = tachyon_cli({"logits", "-m", shipped, "--ids", ids, "--last", "2"});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("pos 5 token 104 logits ") == 0);
    CHECK(o.out.find("\npos 6 token 1137 logits ") != std::string::npos);
    CHECK(o.out.find("pos 4 ") == std::string::npos);
    for (const auto& p : {batch, single, exact}) std::filesystem::remove(p);
}

TEST_CASE("logits refuses bad ids with the word at fault") {
    auto o = tachyon_cli({"logits", "-m", shipped, "--ids", "1 x2 3"});
    CHECK(o.code == 1);
    CHECK(o.err.find("'x2' is not a token id") != std::string::npos);
    o = tachyon_cli({"logits", "-m", shipped, "--ids", "1 99999"});
    CHECK(o.code == 1);
    CHECK(o.err.find("99999") != std::string::npos);
    CHECK(o.err.find("vocabulary of 2048") != std::string::npos);
    o = tachyon_cli({"logits", "-m", shipped});
    CHECK(o.code == 1);
    CHECK(o.err.find("--ids") != std::string::npos);
}

TEST_CASE("logits --exact of a conformance file matches llama.cpp's float reference") {
    if (!std::filesystem::exists(arch_dir + "/llama3.Q4_K_M.gguf")) {
        MESSAGE("skipped: " << arch_dir << " is absent");
        return;
    }
    auto o = tachyon_cli({"logits", "-m", arch_dir + "/llama3.Q4_K_M.gguf", "--ids-file", arch_dir + "/ids.txt", "--exact", "--compare",
                          arch_dir + "/logits/llama3.Q4_K_M.f32ref.logits.bin"});
    REQUIRE(o.code == 0);
    CHECK(o.out.find("argmax equal 32/32") != std::string::npos);
    CHECK(rel_rms_of(o.out) < 1e-4);
}
