// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which cuconv a process is: its build in words (for messages and `cuconv serve --status`) and the
// identity of an executable file, so a client can tell a server of another build (an upgrade
// installed while it ran) from its own before handing it a command.
#include <string>

namespace cuconv::serve {

/// This build: "cuconv VERSION, commit C, BUILDTYPE build, CUDA X.Y" (as configured by CMake).
[[nodiscard]] std::string build_description();

/// "dev:inode:size:mtime_ns" of the file at `path` (following links); empty when it cannot be read.
[[nodiscard]] std::string file_identity(const std::string& path);

/// This process's executable, as /proc/self/exe names it (" (deleted)" once replaced or removed);
/// empty when it cannot be read.
[[nodiscard]] std::string own_executable();

}  // namespace cuconv::serve
