// Loads cuFFT with dlopen once per process (see cufft_api.hpp).
#include "gpu/cufft_api.hpp"

#include <cuconv/error.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace cuconv::detail {

namespace {

struct LoadedCufft {
  CufftApi api{};
  bool ok = false;
  std::string reason;
};

template <class Fn>
bool resolve(void* library, const char* name, Fn& fn, std::string& reason) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (fn == nullptr) reason = std::string("libcufft has no symbol ") + name;
  return fn != nullptr;
}

LoadedCufft load() {
  LoadedCufft loaded;
  std::vector<std::string> candidates{"libcufft.so.12", "libcufft.so"};
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    candidates.push_back(std::string(home) + "/lib64/libcufft.so.12");
  candidates.push_back("/usr/local/cuda/lib64/libcufft.so.12");
  void* library = nullptr;
  for (const std::string& name : candidates)
    if ((library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  if (library == nullptr) {
    loaded.reason = "cuFFT (libcufft.so.12, part of the CUDA toolkit) was not found; add its folder to LD_LIBRARY_PATH";
    return loaded;
  }
  CufftApi& a = loaded.api;
  loaded.ok = resolve(library, "cufftPlanMany", a.plan_many, loaded.reason) &&
              resolve(library, "cufftExecR2C", a.exec_r2c, loaded.reason) &&
              resolve(library, "cufftExecC2R", a.exec_c2r, loaded.reason) &&
              resolve(library, "cufftSetStream", a.set_stream, loaded.reason) &&
              resolve(library, "cufftDestroy", a.destroy, loaded.reason);
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

}  // namespace cuconv::detail
