// SPDX-License-Identifier: Apache-2.0
// The codec calls through the module libcuconv-opencv-codecs.so, loaded beside the running
// executable on the first call (opencv_codecs.hpp): a JPEG-only process never loads imgcodecs.
#include "codec/opencv_codecs.hpp"
#include "common/library_loads.hpp"

#include <cuconv/error.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <mutex>
#include <string>

namespace cuconv::codec {

namespace {

/// The module's table, loaded once; Error{internal} naming the file when it cannot be.
const OpenCvCodecs& codecs() {
  static const OpenCvCodecs* table = nullptr;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    const common::TimedLoad timed("OpenCV image codecs");  // for -v's account of where the time went
    char self[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    const std::string exe = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string();
    const std::string path = exe.substr(0, exe.find_last_of('/') + 1) + kOpenCvCodecsModule;
    void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      failure = std::string("cannot load OpenCV's image codecs: ") + ::dlerror() + " (reinstall cuconv)";
      return;
    }
    using Get = const OpenCvCodecs* (*)();
    const auto get = reinterpret_cast<Get>(::dlsym(module, kOpenCvCodecsSymbol));
    if (get == nullptr) {
      failure = path + ": not cuconv's OpenCV codec module (no " + kOpenCvCodecsSymbol + "; reinstall cuconv)";
      return;
    }
    table = get();
  });
  if (table == nullptr) throw Error(ErrorKind::internal, failure);
  return *table;
}

}  // namespace

cv::Mat opencv_imread(const std::string& path, int flags) { return codecs().imread(path, flags); }

cv::Mat opencv_imdecode(std::span<const unsigned char> bytes, int flags) { return codecs().imdecode(bytes, flags); }

bool opencv_imencode(const std::string& ext, const cv::Mat& image, std::vector<unsigned char>& encoded,
                     const std::vector<int>& params) {
  return codecs().imencode(ext, image, encoded, params);
}

bool opencv_have_writer(const std::string& path) { return codecs().have_writer(path); }

}  // namespace cuconv::codec
