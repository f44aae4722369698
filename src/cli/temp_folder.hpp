// SPDX-License-Identifier: Apache-2.0
#pragma once
// The folder for cuconv's own temporary files (the copy of standard input): $TMPDIR (or TMP,
// TEMP, TEMPDIR), else /tmp, as std::filesystem::temp_directory_path has it, with an answer in
// cuconv's words where that throws.
#include <filesystem>

namespace cuconv::cli {

/// The temporary folder. Throws Error{bad_input} naming the variable and its value when it names
/// no existing folder (std::filesystem::temp_directory_path would throw a filesystem_error,
/// which main reports as an internal error).
[[nodiscard]] std::filesystem::path temp_folder();

struct Session;
/// The command's temporary folder: temp_folder() in a process of its own. Served, the caller's:
/// chosen from the client's TMPDIR (TMP, TEMP, TEMPDIR) as libstdc++ chooses, checked through the
/// client's file system, with temp_folder()'s words when it is no folder there.
[[nodiscard]] std::filesystem::path temp_folder(Session& session);

}  // namespace cuconv::cli
