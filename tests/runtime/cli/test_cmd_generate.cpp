// The inference commands as a user runs them: the tachyon binary, its
// output and exit status.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {

const std::string conformance = TACHYON_CONFORMANCE_DIR;
const std::string models = conformance + "/models";
const std::string tachyon_bin = std::string(TACHYON_BINARY_DIR) + "/runtime/tachyon";

struct outcome {
    int status = -1;
    std::string out;
};

// Runs a shell command line; captures stdout (stderr goes to /dev/null unless redirected).
outcome run(const std::string& command) {
    outcome o;
    FILE* p = ::popen(command.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
    int st = ::pclose(p);
    o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return o;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string line_after(const std::string& text, const std::string& key) {
    auto at = text.find(key);
    if (at == std::string::npos) return {};
    auto start = text.find(':', at) + 1;
    auto end = text.find('\n', start);
    std::string s = text.substr(start, end - start);
    while (!s.empty() && s.front() == ' ') s.erase(s.begin());
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
}

bool have(const std::string& path) {
    if (std::filesystem::exists(path)) return true;
    MESSAGE("skipped: " << path << " is absent");
    return false;
}

}  // namespace

TEST_CASE("generate --temp 0 --ids reproduces the stories260K reference ids") {
    if (!have(models + "/stories260K.gguf")) return;
    auto o = run(tachyon_bin + " generate -m " + models + "/stories260K.gguf -p 'Once upon a time' -n 64 --temp 0 --ids");
    CHECK(o.status == 0);
    std::string expected = line_after(slurp(models + "/stories260K_greedy_reference.txt"), "generated_ids");
    CHECK(o.out == expected + "\n");
}

TEST_CASE("generate from BOS alone reproduces llama2.c's 200-step text") {
    if (!have(models + "/stories260K.gguf")) return;
    auto o = run(tachyon_bin + " generate -m " + models + "/stories260K.gguf -p '' -n 200 --temp 0");
    CHECK(o.status == 0);
    CHECK(o.out == slurp(models + "/stories260K.llama2c_run_t0_n200.txt"));
}

TEST_CASE("tokenize prints the prompt ids, --add-special adds BOS") {
    if (!have(models + "/stories260K.gguf")) return;
    auto plain = run(tachyon_bin + " tokenize -m " + models + "/stories260K.gguf -p 'Once upon a time'");
    CHECK(plain.status == 0);
    CHECK(plain.out == "403 407 261 378\n");
    auto bos = run(tachyon_bin + " tokenize -m " + models + "/stories260K.gguf -p 'Once upon a time' --add-special");
    CHECK(bos.out == "1 403 407 261 378\n");
}

TEST_CASE("tokenize -f reads the file's bytes exactly and matches the conformance vectors") {
    const std::string vocab = conformance + "/tokenizer/ggml-vocab-gpt-2.gguf";
    if (!have(vocab)) return;
    std::string inp = slurp(vocab + ".inp");
    std::string out = slurp(vocab + ".out");
    const std::string sep = "\n__ggml_vocab_test__\n";
    // The first few inputs, each through a file, as a user would.
    std::istringstream expected_lines(out);
    size_t pos = 0;
    for (int i = 0; i < 8; ++i) {
        size_t end = inp.find(sep, pos);
        REQUIRE(end != std::string::npos);
        std::string text = inp.substr(pos, end - pos);
        pos = end + sep.size();
        std::string expected;
        std::getline(expected_lines, expected);
        if (!expected.empty() && expected.front() == ' ') expected.erase(expected.begin());
        auto file = std::filesystem::temp_directory_path() / ("tachyon_tok_" + std::to_string(i));
        std::ofstream(file, std::ios::binary) << text;
        auto o = run(tachyon_bin + " tokenize -m " + vocab + " -f " + file.string());
        CHECK(o.status == 0);
        CHECK(o.out == expected + "\n");
        std::filesystem::remove(file);
    }
}

TEST_CASE("bad input gives a clear message and a non-zero status") {
    auto missing = run(tachyon_bin + " generate -m /nonexistent.gguf -p hi 2>&1");
    CHECK(missing.status == 1);
    CHECK(missing.out.find("/nonexistent.gguf") != std::string::npos);

    auto corrupt_path = std::filesystem::temp_directory_path() / "tachyon_corrupt.gguf";
    std::ofstream(corrupt_path, std::ios::binary) << "GGUF\x03\x00\x00\x00garbage";
    auto corrupt = run(tachyon_bin + " generate -m " + corrupt_path.string() + " -p hi 2>&1");
    CHECK(corrupt.status == 1);
    CHECK(corrupt.out.find(corrupt_path.string()) != std::string::npos);
    std::filesystem::remove(corrupt_path);

    auto usage = run(tachyon_bin + " generate -p hi 2>&1");
    CHECK(usage.status == 2);
    CHECK(usage.out.find("--model") != std::string::npos);

    auto bad_number = run(tachyon_bin + " generate -m x.gguf -p hi -n lots 2>&1");
    CHECK(bad_number.status == 1);
    CHECK(bad_number.out.find("--n-predict") != std::string::npos);

    auto unknown = run(tachyon_bin + " frobnicate 2>&1");
    CHECK(unknown.status == 2);
    CHECK(unknown.out.find("unknown command 'frobnicate'") != std::string::npos);

    if (have(models + "/stories260K.gguf")) {
        auto bad_temp = run(tachyon_bin + " generate -m " + models + "/stories260K.gguf -p hi --temp -1 2>&1");
        CHECK(bad_temp.status == 1);
        CHECK(bad_temp.out.find("temperature") != std::string::npos);
    }
}
