// `tachyon inspect` on the shipped model, on a file of an architecture
// tachyon does not run, and on a file that is not GGUF.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "inference/gguf/gguf.h"
#include "tests/runtime/cli/cli_capture.h"

namespace {

using tachyon::testing::tachyon_cli;

const std::string shipped = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("tachyon-inspect-" + std::to_string(::getpid()) + "-" + name)).string();
}

}  // namespace

TEST_CASE("inspect --json describes the shipped model: architecture, shapes, census, tokenizer, chat format, memory") {
    auto o = tachyon_cli({"inspect", shipped, "--json", "--ctx-size", "1024"});
    CHECK(o.code == 0);
    CHECK(o.out.find("\"architecture\": \"llama\"") != std::string::npos);
    CHECK(o.out.find("\"n_embd\": 128") != std::string::npos);
    CHECK(o.out.find("\"n_layer\": 4") != std::string::npos);
    CHECK(o.out.find("\"n_params\": 1000576") != std::string::npos);
    CHECK(o.out.find("\"f16\": {\"tensors\": 29") != std::string::npos);
    CHECK(o.out.find("\"tokenizer\": {\"model\": \"gpt2\", \"pre\": \"qwen2\"}") != std::string::npos);
    CHECK(o.out.find("\"chat_format\": \"chatml\"") != std::string::npos);
    // 4 layers x 1024 positions x 2 KV heads x (32 + 32) dims x 2 bytes (fp16)
    CHECK(o.out.find("\"kv_bytes\": 1048576") != std::string::npos);
    // an f32 cache (the engines' --kv-f32): twice that
    const auto o32 = tachyon_cli({"inspect", shipped, "--json", "--ctx-size", "1024", "--kv-f32"});
    CHECK(o32.out.find("\"kv_bytes\": 2097152") != std::string::npos);
    CHECK(o.out.find("\"supported\": true") != std::string::npos);
}

TEST_CASE("inspect says why a file does not load and exits 1") {
    const std::string path = temp_path("unknown-arch.gguf");
    tachyon::gguf_writer w;
    w.set_string("general.architecture", "mamba9");
    w.set_uint32("mamba9.embedding_length", 64);
    w.add_tensor("token_embd.weight", {64, 10}, tachyon::tensor_type::f32, std::vector<std::byte>(64 * 10 * 4));
    REQUIRE(w.write(path));
    auto o = tachyon_cli({"inspect", path});
    CHECK(o.code == 1);
    CHECK(o.out.find("architecture   mamba9") != std::string::npos);
    CHECK(o.out.find("supported      no: ") != std::string::npos);
    CHECK(o.out.find("mamba9") != o.out.rfind("mamba9"));  // the reason names the architecture again
    std::filesystem::remove(path);
}

TEST_CASE("inspect of a file that is not GGUF names the file") {
    const std::string path = temp_path("not.gguf");
    std::ofstream(path) << "plain text, not a model";
    auto o = tachyon_cli({"inspect", path});
    CHECK(o.code == 1);
    CHECK(o.err.find(path) != std::string::npos);
    std::filesystem::remove(path);
}

TEST_CASE("inspect names the chat family and its tool-call syntax from the family table") {
    const std::string path = temp_path("mistral-template.gguf");
    tachyon::gguf_writer w;
    w.set_string("general.architecture", "mamba9");
    w.set_string("tokenizer.chat_template", "{{ bos_token }}[AVAILABLE_TOOLS]{{ tools }}[/AVAILABLE_TOOLS][INST]...");
    w.add_tensor("token_embd.weight", {64, 10}, tachyon::tensor_type::f32, std::vector<std::byte>(64 * 10 * 4));
    REQUIRE(w.write(path));
    auto o = tachyon_cli({"inspect", path});
    CHECK(o.out.find("chat format    mistral, tool calls: mistral [TOOL_CALLS]") != std::string::npos);
    o = tachyon_cli({"inspect", path, "--json"});
    CHECK(o.out.find("\"tool_call_format\": \"mistral [TOOL_CALLS]\"") != std::string::npos);
    std::filesystem::remove(path);
}
