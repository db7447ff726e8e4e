#include "runtime/chat/model_host.h"

#include <algorithm>
#include <thread>

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

    return create(std::move(m).value(), std::move(tok).value(), *format, options, path);
}

std::shared_ptr<model_host> model_host::create(std::unique_ptr<model> m, tokenizer tok, chat_format format,
                                               const engine_options& options, std::string path) {
    std::shared_ptr<model_host> host(new model_host());
    host->path_ = std::move(path);
    host->tokenizer_ = std::move(tok);
    host->format_ = format;
    host->engine_ = engine::create(std::move(m), options);
    for (int32_t id = 0; id < static_cast<int32_t>(host->tokenizer_->n_tokens()); ++id) {
        if (host->tokenizer_->is_eog(id)) host->end_of_turn_.push_back(id);
    }
    return host;
}

std::shared_ptr<const token_index> model_host::index() const {
    std::call_once(index_once_, [this] { index_ = std::make_shared<const token_index>(*tokenizer_); });
    return index_;
}

std::vector<int32_t> model_host::encode_scaffold(std::string_view text) const {
    return tokenizer_->encode(text, {.add_special = false, .parse_special = true});
}

model_host::~model_host() {
    // The last reference can go inside an engine callback (a finished request
    // releasing its run): the engine thread cannot join itself, so another
    // thread destroys the engine once that callback has returned.
    if (engine_ && engine_->on_engine_thread()) std::thread([e = std::move(engine_)]() mutable { e.reset(); }).detach();
}

std::vector<int32_t> model_host::encode_plain(std::string_view text) const {
    return tokenizer_->encode(text, {.add_special = false, .parse_special = false});
}

}  // namespace tachyon
