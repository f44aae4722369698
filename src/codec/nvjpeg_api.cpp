// SPDX-License-Identifier: Apache-2.0
// Loads nvJPEG with dlopen once per process (see nvjpeg_api.hpp).
#include "codec/nvjpeg_api.hpp"

#include <cuconv/error.hpp>

#include "common/library_loads.hpp"
#include "gpu/shared_library.hpp"

namespace cuconv::codec {

namespace {

struct LoadedNvjpeg {
  NvjpegApi api{};
  bool ok = false;
  std::string reason;
};

LoadedNvjpeg load() {
  const common::TimedLoad timed("nvJPEG");  // for -v's account of where the time went
  LoadedNvjpeg loaded;
  constexpr const char* kSoname = "libnvjpeg.so.13";
  std::vector<std::string> extra_folders;
#ifdef CUCONV_NVJPEG_BUILD_LIBDIR
  extra_folders.emplace_back(CUCONV_NVJPEG_BUILD_LIBDIR);
#endif
  void* library = gpu::open_first(gpu::library_candidates(kSoname, extra_folders));
  if (library == nullptr) {
    loaded.reason =
        "nvJPEG (libnvjpeg.so.13, from the CUDA toolkit or the nvidia-nvjpeg wheel) was not found; "
        "add its folder to LD_LIBRARY_PATH";
    return loaded;
  }
  bool all = true;
#define CUCONV_NVJPEG_RESOLVE(member, symbol) \
  all = gpu::resolve_symbol(library, "libnvjpeg", #symbol, loaded.api.member, loaded.reason) && all;
  CUCONV_NVJPEG_FUNCTIONS(CUCONV_NVJPEG_RESOLVE)
#undef CUCONV_NVJPEG_RESOLVE
  loaded.ok = all;
  return loaded;  // the library stays loaded for the life of the process
}

}  // namespace

const NvjpegApi* nvjpeg_api(std::string* reason) {
  static const LoadedNvjpeg loaded = load();  // thread-safe one-time initialisation
  if (!loaded.ok && reason != nullptr) *reason = loaded.reason;
  return loaded.ok ? &loaded.api : nullptr;
}

const char* nvjpeg_status_name(nvjpegStatus_t status) noexcept {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS:
      return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG:
      return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "NVJPEG_STATUS_UNKNOWN";
}

void check_nvjpeg(nvjpegStatus_t status, const char* call) {
  if (status != NVJPEG_STATUS_SUCCESS)
    throw Error(ErrorKind::gpu, std::string("nvJPEG error ") + nvjpeg_status_name(status) + " (" +
                                    std::to_string(static_cast<int>(status)) + ") in " + call);
}

}  // namespace cuconv::codec
