// SPDX-License-Identifier: Apache-2.0
// Loads cuFFT with dlopen once per process (see cufft_api.hpp).
#include "gpu/launch/cufft_api.hpp"

#include <cuconv/error.hpp>

#include "gpu/shared_library.hpp"

namespace cuconv::gpu {

namespace {

struct LoadedCufft {
  CufftApi api{};
  bool ok = false;
  std::string reason;
};

LoadedCufft load() {
  LoadedCufft loaded;
  // The unversioned name last: a toolkit whose libcufft.so is another major version.
  std::vector<std::string> candidates = library_candidates("libcufft.so.12");
  candidates.emplace_back("libcufft.so");
  void* library = open_first(candidates);
  if (library == nullptr) {
    loaded.reason = "cuFFT (libcufft.so.12, part of the CUDA toolkit) was not found; add its folder to LD_LIBRARY_PATH";
    return loaded;
  }
  CufftApi& a = loaded.api;
  loaded.ok = resolve_symbol(library, "libcufft", "cufftPlanMany", a.plan_many, loaded.reason) &&
              resolve_symbol(library, "libcufft", "cufftExecR2C", a.exec_r2c, loaded.reason) &&
              resolve_symbol(library, "libcufft", "cufftExecC2R", a.exec_c2r, loaded.reason) &&
              resolve_symbol(library, "libcufft", "cufftSetStream", a.set_stream, loaded.reason) &&
              resolve_symbol(library, "libcufft", "cufftDestroy", a.destroy, loaded.reason);
  return loaded;  // the library stays loaded for the life of the process
}

}  // namespace

const CufftApi* cufft_api(std::string* reason) {
  static const LoadedCufft loaded = load();  // thread-safe one-time initialisation
  if (!loaded.ok && reason != nullptr) *reason = loaded.reason;
  return loaded.ok ? &loaded.api : nullptr;
}

void check_cufft(cufftResult status, const char* call) {
  if (status != CUFFT_SUCCESS)
    throw Error(ErrorKind::gpu, std::string("cuFFT error ") + std::to_string(static_cast<int>(status)) + " in " + call);
}

}  // namespace cuconv::gpu
