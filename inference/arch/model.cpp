#include "inference/arch/model.h"

#include "inference/arch/families.h"
#include "inference/arch/llama.h"

namespace tachyon {

size_t weight_ref::bytes() const { return row_bytes(traits_of(type), n_cols) * static_cast<size_t>(n_rows); }

result<std::unique_ptr<model>> load_model(const std::string& path, const load_options& options) {
    auto file = gguf_file::open(path);
    if (!file) return file.err();
    return load_model(std::move(file).value(), options);
}

result<std::unique_ptr<model>> load_model(std::unique_ptr<gguf_file> file, const load_options& options) {
    return arch::load_decoder(std::move(file), options);
}

result<std::unique_ptr<model>> load_model(const std::string& path) { return load_model(path, load_options{}); }

result<std::unique_ptr<model>> load_model(std::unique_ptr<gguf_file> file) { return load_model(std::move(file), load_options{}); }

std::string supported_architectures() { return arch::family_names(); }

}  // namespace tachyon
