// SPDX-License-Identifier: Apache-2.0
#pragma once
// Text cut into lines, for tests that read a help page or a command's messages line by line.
#include <sstream>
#include <string>
#include <vector>

namespace cuconv::test {

/// The lines of `text`, without their line ends.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace cuconv::test
