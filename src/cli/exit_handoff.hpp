// SPDX-License-Identifier: Apache-2.0
#pragma once
// A process's end without waiting for the GPU driver's teardown. When the last descriptor of a
// GPU device file closes, the driver tears the process's contexts down, and the process that
// closes it (by exiting) waits for that. Before exiting, the command line hands its device files
// to a keeper process that holds nothing else; the command exits at once with its code, and the
// keeper, which waits for that exit, closes them after it.
#include <string_view>
#include <vector>

namespace cuconv::cli {

/// This process's open descriptors whose files' paths start with `prefix` ("/dev/nvidia").
[[nodiscard]] std::vector<int> open_files_under(std::string_view prefix);

/// Forks a keeper that holds `keep` (and, once this returns, no other descriptor of this
/// process's, standard streams included) until this process has exited, then exits itself. The
/// keeper leaves the terminal's session so that its signals do not reach it. Returns false (and
/// starts nothing) when the keeper cannot be made; then this process keeps its descriptors.
bool hand_to_keeper(const std::vector<int>& keep);

/// Every output is written and flushed: hands the GPU device files (if any) to a keeper, then
/// ends the process with `code` at once (std::_Exit; the operating system takes back the rest).
[[noreturn]] void exit_leaving_teardown(int code);

}  // namespace cuconv::cli
