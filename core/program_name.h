// %n: the name a user knows the program by. For a Python interpreter that
// is the script or module it runs (`python3 serve.py` → serve, `python -m
// pkg.mod` → pkg.mod, a `#!/usr/bin/env python3` script → its own name),
// not "python3"; for anything else, the executable's short name.
#pragma once
#include <string>
#include <vector>

namespace nb {

// `argv`: the process's command line (/proc/self/cmdline); `short_name`:
// the executable's name (program_invocation_short_name), used when argv
// says nothing more. Not yet made safe for a file name.
std::string program_name(const std::vector<std::string>& argv, const std::string& short_name);

// python, python3, python3.12, pypy3: an interpreter whose script names the program.
bool is_python_name(const std::string& name);

// /proc/self/cmdline, split at its NULs (empty if it cannot be read).
std::vector<std::string> read_own_cmdline();

// Keeps a program's name to characters safe in a file name.
std::string safe_program_name(const char* name);

}  // namespace nb
