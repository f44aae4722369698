// SPDX-License-Identifier: Apache-2.0
// A build's description and an executable's identity (see build_identity.hpp).
#include "serve/build_identity.hpp"

#include <cuconv/version.hpp>

#include <sys/stat.h>
#include <unistd.h>
#include <climits>

#ifndef CUCONV_CUDA_VERSION
#define CUCONV_CUDA_VERSION "unknown"
#endif

namespace cuconv::serve {

std::string build_description() {
  const std::string type = *CUCONV_BUILD_TYPE != '\0' ? CUCONV_BUILD_TYPE : "default";
  return std::string("cuconv ") + CUCONV_VERSION + ", commit " + CUCONV_GIT_COMMIT + ", " + type + " build, CUDA " +
         CUCONV_CUDA_VERSION;
}

std::string file_identity(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
  const long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(mtime_ns);
}

std::string own_executable() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  return std::string(self, static_cast<std::size_t>(n));
}

}  // namespace cuconv::serve
