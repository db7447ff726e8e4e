// Runs `tachyon` commands in-process for tests, with std::cout and std::cerr
// captured: what a user would see on the terminal, and the exit status.
#pragma once

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/cli/commands.h"

namespace tachyon::testing {

// Redirects std::cout and std::cerr for its lifetime.
struct captured_streams {
    std::ostringstream out, err;
    std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
    std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
    ~captured_streams() {
        std::cout.rdbuf(old_out);
        std::cerr.rdbuf(old_err);
    }
};

struct cli_outcome {
    int code = -1;  // the exit status main() would return
    std::string out, err;
};

// `tachyon ARGS...` with every command registered, as main() runs it.
inline cli_outcome tachyon_cli(const std::vector<std::string>& args) {
    captured_streams cap;
    cli_outcome o;
    const auto commands = all_commands();
    o.code = cli::main_entry(commands, args);
    std::cout.flush();
    o.out = cap.out.str();
    o.err = cap.err.str();
    return o;
}

}  // namespace tachyon::testing
