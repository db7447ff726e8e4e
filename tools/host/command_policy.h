// Checks of one shell call's argument vector before it runs, as defence in
// depth in front of the sandbox (sandbox.h), which is the real boundary:
//
// check_exec_options: refuses the options of well-known programs that make
// them run another program or write files, naming the argument:
//   find   -exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls
//   sed    scripts with the e, w or W commands or s///e, s///w; -i,
//          --in-place; -f/--file (a script file cannot be checked)
//   awk    system(), pipes (| and |&, so "cmd" | getline), print/printf
//          redirected with >, gawk @-directives; -f, -E, -l, -i (files and
//          extensions that cannot be checked)
//   tar    --checkpoint-action, --to-command, --use-compress-program (-I),
//          --rsh-command, --rmt-command, --info-script, --new-volume-script (-F)
//   env    with a command, or -S/--split-string
//   sh, bash, dash, zsh, ksh, ...: -c; python -c; perl -e/-E; ruby -e;
//          node -e/-p/--eval/--print; php -r; lua -e (code in an argument)
//   xargs, nice, nohup, timeout, sudo, strace, ... (programs whose purpose
//          is to run another program): any use
// Long options are matched as getopt does, by unique prefix (--to-com=...).
// Read-only uses stay: `find . -name '*.log'`, `sed -n 1,5p f`,
// `awk '{print $1}' f`, `tar -tf x.tar`.
//
// check_path_arguments: refuses an argument that names a file outside the
// roots: an absolute path or one with a `..` component, or a relative path
// that resolves (through symlinks) outside them. An absolute path is only
// taken as a path when it, or its parent directory other than `/`, exists,
// so that a pattern such as `/api/v1/checkout` passes. `/dev/null` passes.
// The value after `=` of an option (`--file=/etc/passwd`) is checked too.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon::tools {

// `program` is the program's file name ("find", "gawk", "python3.12");
// `args` are its arguments, without argv[0].
status check_exec_options(std::string_view program, const std::vector<std::string>& args);

// `roots` and `cwd` are canonical absolute paths; relative arguments are
// taken relative to `cwd`.
status check_path_arguments(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                            const std::vector<std::filesystem::path>& roots);

// True when `path` is `root` or below it, component by component
// (/data/logs2 is not inside /data/logs; a trailing '/' of root is ignored).
// Lexical: both paths are expected canonical already.
bool is_inside(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace tachyon::tools
