// Every `tachyon` subcommand, declared once. Each command lives in its own
// runtime/cli/cmd_<name>.cpp and exposes a make_<name>_command() declaration.
#pragma once

#include <vector>

#include "runtime/cli/cli.h"

namespace tachyon {

std::vector<cli::command_spec> all_commands();

}  // namespace tachyon
