#include "runtime/model_host.h"

#include <algorithm>

namespace tachyon {

result<std::shared_ptr<model_host>> model_host::open(const std::string& path, const engine_options& options, std::string_view format_name) {
    auto file = gguf_file::open(path);
    if (!file) return file.err();
    auto tok = tokenizer::from_gguf(**file);
    if (!tok) return tok.err();
    auto template_text = (*file)->get_string("tokenizer.chat_template");
    auto format = select_chat_format(template_text ? *template_text : std::string(), format_name);
    if (!format) return make_error(format.err().code, path + ": " + format.err().message);
    auto m = load_model(std::move(file).value());
    if (!m) return m.err();

    std::shared_ptr<model_host> host(new model_host());
    host->path_ = path;
    host->tokenizer_ = std::move(tok).value();
    host->format_ = *format;
    host->engine_ = engine::create(std::move(m).value(), options);
    for (int32_t id = 0; id < static_cast<int32_t>(host->tokenizer_->n_tokens()); ++id) {
        if (host->tokenizer_->is_eog(id)) host->end_of_turn_.push_back(id);
    }
    return host;
}

std::vector<int32_t> model_host::encode_scaffold(std::string_view text) const {
    return tokenizer_->encode(text, {.add_special = false, .parse_special = true});
}

std::vector<int32_t> model_host::encode_plain(std::string_view text) const {
    return tokenizer_->encode(text, {.add_special = false, .parse_special = false});
}

}  // namespace tachyon
