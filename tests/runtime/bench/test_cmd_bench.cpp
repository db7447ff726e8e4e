// `tachyon bench synth-model` with a tokenizer and a chat template: a
// random-weight model of a chat family, as the client tests serve it.
#include "runtime/cli/commands.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "tests/runtime/cli/cli_capture.h"

using tachyon::testing::tachyon_cli;

TEST_CASE("bench synth-model: --vocab-from and --chat-template make a model of that chat family") {
    const auto dir = std::filesystem::temp_directory_path() / ("tachyon_synth_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string model = (dir / "m.gguf").string();
    const std::string vocab = std::string(TACHYON_CONFORMANCE_DIR) + "/models/stories260K.gguf";
    const std::string nemo = std::string(TACHYON_CONFORMANCE_DIR) + "/templates/jinja/mistralai-Mistral-Nemo-Instruct-2407.jinja";
    if (!std::filesystem::exists(vocab) || !std::filesystem::exists(nemo)) {
        MESSAGE("conformance files not found; skipped");
        return;
    }
    auto o = tachyon_cli({"bench", "synth-model", model, "--vocab-from", vocab, "--chat-template", nemo, "--dim", "64",
                          "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ffn", "64"});
    REQUIRE_MESSAGE(o.code == 0, o.err);
    o = tachyon_cli({"inspect", model});
    REQUIRE_MESSAGE(o.code == 0, o.err);
    CHECK(o.out.find("chat format    mistral, tool calls: mistral [TOOL_CALLS]") != std::string::npos);

    // A template file that cannot be read is named.
    o = tachyon_cli({"bench", "synth-model", model, "--chat-template", (dir / "missing.jinja").string()});
    CHECK(o.code == 1);
    CHECK(o.err.find("--chat-template " + (dir / "missing.jinja").string()) != std::string::npos);
    std::filesystem::remove_all(dir);
}
