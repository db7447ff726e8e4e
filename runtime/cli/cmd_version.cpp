#include <iostream>

#include "runtime/cli/cli.h"

namespace tachyon {

cli::command_spec make_version_command() {
    cli::command_spec c;
    c.name = "version";
    c.summary = "print the version and the CPU features the kernels use";
    c.run = [](const cli::parsed_args&) {
        std::cout << "tachyon " << TACHYON_VERSION << "\n";
        __builtin_cpu_init();
        std::cout << "cpu: avx2=" << (__builtin_cpu_supports("avx2") ? "yes" : "no")
                  << " fma=" << (__builtin_cpu_supports("fma") ? "yes" : "no")
                  << " f16c=" << (__builtin_cpu_supports("f16c") ? "yes" : "no") << "\n";
        return 0;
    };
    return c;
}

}  // namespace tachyon
