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
  throw Error(ErrorKind::bad_input, "/tmp: not an existing folder (" + ec.message() +
                                        "), so no temporary file can be made there; set TMPDIR to a folder");
}

std::filesystem::path temp_folder(Session& session) {
  if (!session.served) return temp_folder();
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    const char* value = session.getenv(name);
    if (value == nullptr) continue;
    // libstdc++'s check of the first variable set, asked of the client's file system.
    if (session.file_access().kind(value, true) != engine::FileKind::directory)
      refuse(name, value, std::make_error_code(std::errc::not_a_directory).message());
    break;
  }
  return temp_folder();
}

}  // namespace cuconv::cli
