// A model ready for agent runs: the engine (its own thread), the tokenizer,
// the chat format, and the special tokens the prompt format uses. Several
// runs share one host; a host per model file.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runtime/formats/chat_format.h"
#include "inference/engine/engine.h"
#include "inference/tokenizer/tokenizer.h"
#include "runtime/constrain/token_index.h"

namespace tachyon {

class model_host {
public:
    // `format_name` empty: detect from tokenizer.chat_template.
    static result<std::shared_ptr<model_host>> open(const std::string& path, const engine_options& options,
                                                    std::string_view format_name = {});

    // A host over a model already loaded (tests use scripted models).
    static std::shared_ptr<model_host> create(std::unique_ptr<model> m, tokenizer tok, chat_format format,
                                              const engine_options& options, std::string path = "<memory>");

    ~model_host();

    engine& eng() { return *engine_; }
    const tokenizer& tok() const { return *tokenizer_; }
    chat_format format() const { return format_; }
    const std::string& path() const { return path_; }
    // Tokens that end an assistant turn (<|im_end|>, <|eot_id|>, EOS ...).
    const std::vector<int32_t>& end_of_turn() const { return end_of_turn_; }

    // The vocabulary's byte trie for constrained decoding, built on first use.
    std::shared_ptr<const token_index> index() const;

    // Prompt scaffolding written by the runtime: control tokens are parsed.
    std::vector<int32_t> encode_scaffold(std::string_view text) const;
    // Untrusted text (tool results, the task): control-token text stays text.
    std::vector<int32_t> encode_plain(std::string_view text) const;

private:
    model_host() = default;
    std::string path_;
    std::unique_ptr<engine> engine_;
    std::optional<tokenizer> tokenizer_;
    chat_format format_ = chat_format::chatml;
    std::vector<int32_t> end_of_turn_;
    mutable std::once_flag index_once_;
    mutable std::shared_ptr<const token_index> index_;
};

}  // namespace tachyon
