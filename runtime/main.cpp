// tachyon: the command-line entry point. Everything it can do is declared in
// runtime/cli/commands.cpp.
#include <string>
#include <vector>

#include "runtime/cli/commands.h"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    auto commands = tachyon::all_commands();
    return tachyon::cli::main_entry(commands, args);
}
