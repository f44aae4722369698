// SPDX-License-Identifier: Apache-2.0
// temp_directory_path with a message that says which variable to fix.
#include "cli/temp_folder.hpp"

#include <cuconv/error.hpp>

#include <cstdlib>
#include <string>

namespace cuconv::cli {

std::filesystem::path temp_folder() {
  std::error_code ec;
  std::filesystem::path folder = std::filesystem::temp_directory_path(ec);
  if (!ec) return folder;
  // The variables libstdc++ reads, in its order; the first one set is the one at fault.
  for (const char* name : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    throw Error(ErrorKind::bad_input, std::string(name) + "='" + value + "': not an existing folder (" + ec.message() +
                                          "), so no temporary file can be made there; set " + name +
                                          " to a folder or unset it");
  }
  throw Error(ErrorKind::bad_input, "/tmp: not an existing folder (" + ec.message() +
                                        "), so no temporary file can be made there; set TMPDIR to a folder");
}

}  // namespace cuconv::cli
