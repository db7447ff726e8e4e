#include <iostream>

#include "runtime/cli/cli.h"
#include "inference/kernels/kernels.h"

namespace tachyon {

cli::command_spec make_version_command() {
    cli::command_spec c;
    c.name = "version";
    c.summary = "print the version and the CPU features the kernels use";
    c.run = [](const cli::parsed_args&) {
        std::cout << "tachyon " << TACHYON_VERSION << "\n";
        // the level the kernels dispatch to on this CPU (TACHYON_KERNELS may lower it)
        std::cout << "kernels: " << to_string(default_isa()) << "\n";
        return 0;
    };
    return c;
}

}  // namespace tachyon
