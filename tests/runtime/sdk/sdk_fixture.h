// Test support for the SDK facade: a runtime whose model is the scripted
// model of tests/runtime/scripted_model.h (served under the path of a
// placeholder file, so that agent::build finds a model file), recording
// every token the model reads so a test can check what the model was told.
#pragma once

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

#include "runtime/chat/model_host.h"
#include "runtime/sdk/bridge.h"
#include "tachyon/runtime.h"
#include "tests/runtime/scripted_model.h"

namespace sdk_fixture {

// The scripted model, plus a record of every token it was given.
class recording_model final : public tachyon::model {
public:
    recording_model(const tachyon::tokenizer& tok, const std::vector<std::string>& turns)
        : inner_(std::make_unique<scripted::model>(tok, turns)) {
        inner_->set_fallback(tok.find_token("<|im_end|>"));
        hparams_ = inner_->hparams();
    }
    void forward(tachyon::kernel_context& ctx, const tachyon::forward_batch& batch, tachyon::kv_cache& kv, float* logits) override {
        {
            std::lock_guard lock(mutex_);
            seen_.insert(seen_.end(), batch.tokens.begin(), batch.tokens.end());
        }
        inner_->forward(ctx, batch, kv, logits);
    }
    std::vector<int32_t> seen() const {
        std::lock_guard lock(mutex_);
        return seen_;
    }

private:
    std::unique_ptr<scripted::model> inner_;
    mutable std::mutex mutex_;
    std::vector<int32_t> seen_;
};

// A temp folder with an (empty) model file for agent specs to name.
struct model_dir {
    std::filesystem::path path;
    model_dir() {
        static std::atomic<int> n{0};
        path = std::filesystem::temp_directory_path() / ("tachyon_sdk_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
        std::filesystem::create_directories(path);
        std::ofstream(model_file()) << "GGUF";
    }
    ~model_dir() { std::filesystem::remove_all(path); }
    std::string model_file() const { return (path / "scripted.gguf").string(); }
};

// A scripted model host: `turns` are what the model writes, one per model turn.
struct scripted_host {
    tachyon::tokenizer tok = scripted::chatml_tokenizer();
    recording_model* model = nullptr;  // owned by the host's engine
    std::shared_ptr<tachyon::model_host> host;

    explicit scripted_host(const std::vector<std::string>& turns) {
        auto m = std::make_unique<recording_model>(tok, turns);
        model = m.get();
        tachyon::engine_options eo;
        eo.n_ctx = 1 << 15;
        host = tachyon::model_host::create(std::move(m), tok, tachyon::chat_format::chatml, eo);
    }
    // Everything the model read and wrote, as text (control tokens rendered).
    std::string transcript() const { return tok.decode(model->seen(), {.render_special = true}); }
};

inline std::string call(const std::string& name, const std::string& args) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

}  // namespace sdk_fixture
