// SPDX-License-Identifier: Apache-2.0
// Planted for library_flags_refuses: a library message that spells a flag, one that names an
// unknown setting; a comment's --variant and a character literal '"' are no message.
#include <stdexcept>
#include <string>

void planted(const std::string& path) {
  if (path.empty()) throw std::runtime_error(path + ": raise --gpu-memory");
  if (path[0] == '"') throw std::runtime_error("raise `gpu_memory`, or use `variant` opencv");
}
