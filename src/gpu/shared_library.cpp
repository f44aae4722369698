// SPDX-License-Identifier: Apache-2.0
// Run-time loading of CUDA libraries (see shared_library.hpp).
#include "gpu/shared_library.hpp"

#include <cstdlib>

namespace cuconv::gpu {

std::vector<std::string> library_candidates(const std::string& soname, const std::vector<std::string>& extra_folders) {
  std::vector<std::string> candidates{soname};
  for (const std::string& folder : extra_folders) candidates.push_back(folder + "/" + soname);
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    candidates.push_back(std::string(home) + "/lib64/" + soname);
  candidates.push_back("/usr/local/cuda/lib64/" + soname);
  return candidates;
}

void* open_first(const std::vector<std::string>& candidates) {
  for (const std::string& name : candidates)
    if (void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL); library != nullptr) return library;
  return nullptr;
}

}  // namespace cuconv::gpu
