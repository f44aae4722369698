// SPDX-License-Identifier: Apache-2.0
#pragma once
// A CUDA library loaded at run time (dlopen), so the binary starts without it: the one way
// cufft_api.cpp and nvjpeg_api.cpp find the library and resolve its functions.
#include <dlfcn.h>

#include <string>
#include <vector>

namespace cuconv::gpu {

/// Where to look for `soname`: the loader's own search (LD_LIBRARY_PATH, RUNPATH, ldconfig),
/// then `extra_folders` in order, then $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
[[nodiscard]] std::vector<std::string> library_candidates(const std::string& soname,
                                                          const std::vector<std::string>& extra_folders = {});

/// The first of `candidates` that dlopen loads (RTLD_NOW | RTLD_LOCAL), or nullptr. The
/// library stays loaded for the life of the process.
[[nodiscard]] void* open_first(const std::vector<std::string>& candidates);

/// Resolves `symbol` of `library` into `fn`; when it is missing and `reason` is still empty,
/// `reason` says which symbol `library_name` lacks.
template <class Fn>
bool resolve_symbol(void* library, const char* library_name, const char* symbol, Fn& fn, std::string& reason) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (fn == nullptr && reason.empty()) reason = std::string(library_name) + " has no symbol " + symbol;
  return fn != nullptr;
}

}  // namespace cuconv::gpu
