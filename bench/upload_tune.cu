// SPDX-License-Identifier: Apache-2.0
// cuconv_upload_tune: ways to move a pageable host image (a NumPy array, a decoded file) to the
// device, timed whole (host copy, transfer, synchronise) as a call would see them. It decides how
// StripCopier::upload stages a kept workspace's images (src/gpu/memory/host_transfer.cpp):
//   driver      cudaMemcpyAsync from the pageable array (the driver stages it)
//   register    cudaHostRegister the array, copy, unregister
//   staged xT   the array copied into page-locked chunks by the product's host copy pool of T
//               threads (src/gpu/memory/host_copy_pool.hpp), each chunk's transfer queued as soon
//               as it is copied (8 chunks), or the whole array copied, then sent (1 chunk)
//   pinned      the array already page-locked: the link alone
// and the host copies alone (into page-locked and into pageable memory, 1 and T threads).
//
//   cuconv_upload_tune [--reps N] [--mib 0.25,1,4,16,64] [--threads 1,2,4,8]
#include "gpu/memory/host_copy_pool.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using cuconv::gpu::HostCopyPool;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_us(int reps, F&& f) {
  for (int i = 0; i < 5; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
  }
  return median(t);
}

std::vector<double> parse_list(const std::string& s) {
  std::vector<double> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stod(item));
  return out;
}

/// Copies n bytes from src to dst in the pool's threads parts (64-byte aligned), as one job.
void parallel_copy(HostCopyPool& pool, unsigned char* dst, const unsigned char* src, std::size_t n) {
  const int t = pool.threads();
  const std::size_t part = ((n + t - 1) / t + 63) / 64 * 64;
  pool.run(
      t, true,
      [&](int i) {
        const std::size_t begin = std::min(n, part * i);
        const std::size_t end = std::min(n, begin + part);
        if (end > begin) std::memcpy(dst + begin, src + begin, end - begin);
      },
      [](int) {});
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 50;
  std::vector<double> mibs{0.25, 1, 4, 16, 64};
  std::vector<double> thread_counts{1, 2, 4, 8};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--mib" && i + 1 < argc)
      mibs = parse_list(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      thread_counts = parse_list(argv[++i]);
    else {
      std::fprintf(stderr, "usage: cuconv_upload_tune [--reps N] [--mib LIST] [--threads LIST]\n");
      return 2;
    }
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "props");
  std::printf("device %s, host threads %u, reps %d (medians, us)\n", prop.name, std::thread::hardware_concurrency(),
              reps);
  std::vector<std::unique_ptr<HostCopyPool>> pools;
  for (double t : thread_counts) pools.push_back(std::make_unique<HostCopyPool>(static_cast<int>(t)));

  for (double mib : mibs) {
    const std::size_t n = static_cast<std::size_t>(mib * 1048576.0);
    std::vector<unsigned char> src(n), pageable_dst(n);
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 131u);
    unsigned char* pinned = nullptr;
    unsigned char* pinned_src = nullptr;
    void* device = nullptr;
    check(cudaMallocHost(&pinned, n), "cudaMallocHost");
    check(cudaMallocHost(&pinned_src, n), "cudaMallocHost");
    std::memcpy(pinned_src, src.data(), n);
    std::memset(pinned, 0, n);
    check(cudaMalloc(&device, n), "cudaMalloc");
    std::printf("\n%.2f MiB\n", mib);

    const double pinned_link = time_us(reps, [&] {
      check(cudaMemcpyAsync(device, pinned_src, n, cudaMemcpyHostToDevice, stream), "copy");
      check(cudaStreamSynchronize(stream), "sync");
    });
    std::printf("  %-28s %9.1f  (%.1f GB/s)\n", "pinned (link alone)", pinned_link, n / pinned_link / 1e3);
    const double driver = time_us(reps, [&] {
      check(cudaMemcpyAsync(device, src.data(), n, cudaMemcpyHostToDevice, stream), "copy");
      check(cudaStreamSynchronize(stream), "sync");
    });
    std::printf("  %-28s %9.1f  (%.1f GB/s)\n", "driver (pageable)", driver, n / driver / 1e3);
    const double down_pinned = time_us(reps, [&] {
      check(cudaMemcpyAsync(pinned, device, n, cudaMemcpyDeviceToHost, stream), "copy");
      check(cudaStreamSynchronize(stream), "sync");
    });
    std::printf("  %-28s %9.1f  (%.1f GB/s)\n", "download into pinned", down_pinned, n / down_pinned / 1e3);
    const double down_driver = time_us(reps, [&] {
      check(cudaMemcpyAsync(pageable_dst.data(), device, n, cudaMemcpyDeviceToHost, stream), "copy");
      check(cudaStreamSynchronize(stream), "sync");
    });
    std::printf("  %-28s %9.1f  (%.1f GB/s)\n", "download driver (pageable)", down_driver, n / down_driver / 1e3);
    const double reg = time_us(std::max(5, reps / 5), [&] {
      check(cudaHostRegister(src.data(), n, cudaHostRegisterDefault), "register");
      check(cudaMemcpyAsync(device, src.data(), n, cudaMemcpyHostToDevice, stream), "copy");
      check(cudaStreamSynchronize(stream), "sync");
      check(cudaHostUnregister(src.data()), "unregister");
    });
    std::printf("  %-28s %9.1f  (%.1f GB/s)\n", "register+copy+unregister", reg, n / reg / 1e3);
    for (const auto& pool : pools) {
      const int chunks = 8;
      const std::size_t chunk = std::max<std::size_t>(((n + chunks - 1) / chunks + 4095) / 4096 * 4096, 65536);
      const int count = static_cast<int>((n + chunk - 1) / chunk);
      const auto length = [&](int i) { return std::min(chunk, n - chunk * i); };
      const double staged = time_us(reps, [&] {
        pool->run(
            count, true, [&](int i) { std::memcpy(pinned + chunk * i, src.data() + chunk * i, length(i)); },
            [&](int i) {
              check(cudaMemcpyAsync(static_cast<unsigned char*>(device) + chunk * i, pinned + chunk * i, length(i),
                                    cudaMemcpyHostToDevice, stream),
                    "copy");
            });
        check(cudaStreamSynchronize(stream), "sync");
      });
      const double whole = time_us(reps, [&] {
        parallel_copy(*pool, pinned, src.data(), n);
        check(cudaMemcpyAsync(device, pinned, n, cudaMemcpyHostToDevice, stream), "copy");
        check(cudaStreamSynchronize(stream), "sync");
      });
      const double to_pinned = time_us(reps, [&] { parallel_copy(*pool, pinned, src.data(), n); });
      const double to_pageable = time_us(reps, [&] { parallel_copy(*pool, pageable_dst.data(), src.data(), n); });
      char label[64];
      std::snprintf(label, sizeof label, "staged x%d (8 chunks)", pool->threads());
      std::printf("  %-28s %9.1f  (%.1f GB/s)\n", label, staged, n / staged / 1e3);
      std::snprintf(label, sizeof label, "staged x%d (1 chunk)", pool->threads());
      std::printf("  %-28s %9.1f  (%.1f GB/s)\n", label, whole, n / whole / 1e3);
      std::snprintf(label, sizeof label, "memcpy x%d -> pinned", pool->threads());
      std::printf("  %-28s %9.1f  (%.1f GB/s)\n", label, to_pinned, n / to_pinned / 1e3);
      std::snprintf(label, sizeof label, "memcpy x%d -> pageable", pool->threads());
      std::printf("  %-28s %9.1f  (%.1f GB/s)\n", label, to_pageable, n / to_pageable / 1e3);
    }
    check(cudaFreeHost(pinned), "free");
    check(cudaFreeHost(pinned_src), "free");
    check(cudaFree(device), "free");
  }
  check(cudaStreamDestroy(stream), "stream");
  return 0;
}
