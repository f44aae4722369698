// cuconv_nvjpeg_floor: nvJPEG's own decode + encode of a folder of JPEG files, with nothing of
// cuconv's pipeline around it (no filter, no file writes): the floor the GPU JPEG path is
// measured against (scripts/jpeg-bench.sh). The files are read into memory first; then THREADS
// threads, each with its own codec and stream (as the pipeline's filter threads), take batches of
// BATCH files: decode (JPEG engine where there is one) and encode each image at QUALITY, 4:2:0.
// Prints one JSON object: images/s of decode alone, encode alone and decode + encode.
#include "gpu/jpeg_codec.hpp"

#include <cuconv/error.hpp>

#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using Clock = std::chrono::steady_clock;

enum class Work { decode, encode, both };

/// Seconds for `threads` threads to take every file through `work`, in batches of `batch`.
double run(const std::vector<Bytes>& files, Work work, int threads, int batch, int quality, int device) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  // Codecs and their first (warm-up) batch before the clock starts.
  std::vector<cuconv::codec::GpuJpegCodec> codecs;
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    codecs.emplace_back(device);
    if (cudaStreamCreateWithFlags(&streams[static_cast<std::size_t>(t)], cudaStreamNonBlocking) != cudaSuccess)
      throw cuconv::Error(cuconv::ErrorKind::gpu, "cudaStreamCreateWithFlags failed");
  }
  // Encode-only input: the first file decoded once per thread.
  std::vector<std::vector<cuconv::codec::DecodedJpeg>> decoded_once(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t)
    decoded_once[static_cast<std::size_t>(t)] =
        codecs[static_cast<std::size_t>(t)].decode({std::span<const std::uint8_t>(files.front())}, streams[static_cast<std::size_t>(t)]);
  const auto start = Clock::now();
  std::vector<std::jthread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto& codec = codecs[static_cast<std::size_t>(t)];
      cudaStream_t stream = streams[static_cast<std::size_t>(t)];
      std::vector<cuconv::DeviceImage> spare;
      cuconv::codec::JpegEncodeOptions options;
      options.quality = quality;
      try {
        while (true) {
          const std::size_t first = next.fetch_add(static_cast<std::size_t>(batch));
          if (first >= files.size()) return;
          const std::size_t last = std::min(files.size(), first + static_cast<std::size_t>(batch));
          if (work == Work::encode) {
            for (std::size_t i = first; i < last; ++i)
              (void)codec.encode(decoded_once[static_cast<std::size_t>(t)].front().view, options, stream);
            continue;
          }
          std::vector<std::span<const std::uint8_t>> spans;
          for (std::size_t i = first; i < last; ++i) spans.emplace_back(files[i]);
          std::vector<cuconv::codec::DecodedJpeg> decoded = codec.decode(spans, stream, &spare);
          for (auto& d : decoded) {
            if (d.image.empty()) throw cuconv::Error(cuconv::ErrorKind::bad_input, "a file nvJPEG could not decode: " + d.not_supported + d.bad_file);
            if (work == Work::both) (void)codec.encode(d.view, options, stream);
            spare.push_back(std::move(d.image));
          }
          if (spare.size() > static_cast<std::size_t>(batch)) spare.erase(spare.begin(), spare.end() - batch);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cuconv_nvjpeg_floor: %s\n", e.what());
        failed = true;
      }
    });
  }
  for (auto& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
  if (failed) throw cuconv::Error(cuconv::ErrorKind::gpu, "a worker failed");
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int threads = 2;
  int batch = 8;
  int quality = 95;
  int device = 0;
  CLI::App app{"cuconv_nvjpeg_floor: nvJPEG decode + encode of a folder of JPEG files (the GPU JPEG path's floor)"};
  app.add_option("DIR", dir, "folder of .jpg files")->required();
  app.add_option("--threads", threads, "threads, each with its own codec and stream")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--batch", batch, "files per decode call")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--quality", quality, "encode quality")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--device", device, "CUDA device")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    // cudaGetDeviceCount directly: cuda_device_available() would link every kernel into this tool.
    int devices = 0;
    if (const cudaError_t status = cudaGetDeviceCount(&devices); status != cudaSuccess || devices == 0)
      throw cuconv::Error(cuconv::ErrorKind::gpu, std::string("no usable CUDA device: ") + cudaGetErrorString(status));
    std::vector<fs::path> paths;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".jpg" || ext == ".jpeg") paths.push_back(entry.path());
    }
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) throw cuconv::Error(cuconv::ErrorKind::bad_input, dir + ": no .jpg files");
    std::vector<Bytes> files;
    std::size_t bytes = 0;
    for (const fs::path& p : paths) {
      std::ifstream in(p, std::ios::binary);
      files.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      bytes += files.back().size();
    }
    const double n = static_cast<double>(files.size());
    const double decode_s = run(files, Work::decode, threads, batch, quality, device);
    const double encode_s = run(files, Work::encode, threads, batch, quality, device);
    const double both_s = run(files, Work::both, threads, batch, quality, device);
    const std::string backend(cuconv::codec::GpuJpegCodec(device).backend());
    const nlohmann::json report = {{"images", files.size()},
                                   {"input_bytes", bytes},
                                   {"threads", threads},
                                   {"batch", batch},
                                   {"quality", quality},
                                   {"decode_backend", backend},
                                   {"decode_images_per_s", n / decode_s},
                                   {"encode_images_per_s", n / encode_s},
                                   {"decode_encode_images_per_s", n / both_s},
                                   {"decode_encode_s", both_s}};
    std::cout << report.dump() << '\n';
  } catch (const cuconv::Error& e) {
    std::fprintf(stderr, "cuconv_nvjpeg_floor: %s\n", e.what());
    return static_cast<int>(cuconv::exit_code_for(e.kind()));
  }
  return 0;
}
