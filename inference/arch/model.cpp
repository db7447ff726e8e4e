#include "inference/arch/model.h"

#include "inference/arch/llama.h"

namespace tachyon {

size_t weight_ref::bytes() const { return row_bytes(traits_of(type), n_cols) * static_cast<size_t>(n_rows); }

result<std::unique_ptr<model>> load_model(const std::string& path) {
    auto file = gguf_file::open(path);
    if (!file) return file.err();
    return load_model(std::move(file).value());
}

result<std::unique_ptr<model>> load_model(std::unique_ptr<gguf_file> file) {
    auto arch = file->get_string("general.architecture");
    if (!arch) return arch.err();
    if (*arch == "llama" || *arch == "qwen2" || *arch == "mistral") return arch::load_llama(std::move(file));
    return make_error(errc::unsupported, file->path() + ": general.architecture '" + *arch +
                                             "' is not supported (expected llama, qwen2 or mistral)");
}

}  // namespace tachyon
