// SPDX-License-Identifier: Apache-2.0
// `cuconv`'s thin front end: hands the command to the user's server when one answers, and
// otherwise becomes the full engine binary (execv), so a served call loads no OpenCV and no CUDA.
// Links only cuconv_serve (libc, libstdc++, pthread).
#include "serve/build_identity.hpp"
#include "serve/client.hpp"

#include <unistd.h>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

namespace {

/// The engine binary: CUCONV_ENGINE_PATH when the build names one, else cuconv-engine beside this
/// executable (a build tree, a bundle), else in ../libexec/cuconv/ (an installed prefix).
std::string engine_path() {
#ifdef CUCONV_ENGINE_PATH
  return CUCONV_ENGINE_PATH;
#else
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "cuconv-engine";
  const std::string path(self, static_cast<std::size_t>(n));
  const std::string folder = path.substr(0, path.find_last_of('/') + 1);
  const std::string beside = folder + "cuconv-engine";
  if (::access(beside.c_str(), X_OK) == 0) return beside;
  return folder + "../libexec/cuconv/cuconv-engine";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cuconv::serve;
  occupy_closed_standard_descriptors();  // before anything here opens a descriptor
  const std::string engine = engine_path();
  // `cuconv serve` is the server itself; a bad --server value is the engine's CLI to report.
  const bool serve_command = argc > 1 && std::strcmp(argv[1], "serve") == 0;
  const ServerPolicy policy = read_server_policy(argc, argv);
  if (!serve_command && policy.error.empty()) {
    ClientOptions options;
    if (policy.spawn) options.spawn_command = {engine, "serve"};
    options.engine_identity = file_identity(engine);  // a server of another build runs no command of this one
    std::string why_not;
    if (const auto code = run_served(argc, argv, policy, options, &why_not)) return *code;
    // The engine asks no server again, and its -v says why this command runs in-process.
    ::setenv(kNotServedVariable, why_not.c_str(), 1);
  }
  ::execv(engine.c_str(), argv);
  const std::string message = "cuconv: cannot run the engine " + engine + ": " + std::strerror(errno) + "\n";
  [[maybe_unused]] const ssize_t written = ::write(2, message.data(), message.size());
  return 1;
}
