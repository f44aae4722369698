// SPDX-License-Identifier: Apache-2.0
// Entry point of the GPU suite: without a usable CUDA device it says why and exits 77, which
// CTest reports as "Skipped" (SKIP_RETURN_CODE); listing test cases needs no device.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuconv/convolve.hpp>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0 || std::strncmp(argv[i], "-l", 2) == 0;
  std::string reason;
  if (!listing && !cuconv::cuda_device_available(&reason)) {
    std::printf("SKIPPED: GPU tests need a CUDA device: %s\n", reason.c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
