// SPDX-License-Identifier: Apache-2.0
// temp_directory_path with a message that says which variable to fix.
#include "cli/temp_folder.hpp"

#include "cli/session.hpp"

#include <cuconv/error.hpp>

#include <cstdlib>
#include <string>
#include <system_error>

namespace cuconv::cli {

namespace {

[[noreturn]] void refuse(const char* name, const char* value, const std::string& why) {
  throw Error(ErrorKind::bad_input, std::string(name) + "='" + value + "': not an existing folder (" + why +
                                        "), so no temporary file can be made there; set " + name +
                                        " to a folder or unset it");
}

/// The refusal when no variable is set and /tmp is no folder.
[[noreturn]] void refuse_default(const std::string& why) {
  throw Error(ErrorKind::bad_input, "/tmp: not an existing folder (" + why +
                                        "), so no temporary file can be made there; set TMPDIR to a folder");
}

}  // namespace

std::filesystem::path temp_folder() {
  std::error_code ec;
  std::filesystem::path folder = std::filesystem::temp_directory_path(ec);
  if (!ec) return folder;
  // The variables libstdc++ reads, in its order; the first one set is the one at fault.
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    refuse(name, value, ec.message());
  }
  refuse_default(ec.message());
}

std::filesystem::path temp_folder(Session& session) {
  if (!session.served) return temp_folder();
  // libstdc++'s choice and check (temp_directory_path), made with the client's variables and
  // asked of the client's file system: the folder is the caller's, relative to its folder.
  const char* name = nullptr;
  const char* value = nullptr;
  for (const char* candidate : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    if ((value = session.getenv(candidate)) != nullptr) {
      name = candidate;
      break;
    }
  }
  const std::string folder = value != nullptr ? value : "/tmp";
  const engine::FileKind kind = session.file_access().kind(folder, true);
  if (kind == engine::FileKind::directory) return folder;
  const std::string why = std::make_error_code(kind == engine::FileKind::none ? std::errc::no_such_file_or_directory
                                                                              : std::errc::not_a_directory)
                              .message();
  if (name != nullptr) refuse(name, value, why);
  refuse_default(why);
}

}  // namespace cuconv::cli
