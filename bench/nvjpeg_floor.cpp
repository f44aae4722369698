// cuconv_nvjpeg_floor: nvJPEG's own decode + encode of a folder of JPEG files, with nothing of
// cuconv's pipeline around it (no filter, no file reads or writes): the floor the GPU JPEG path is
// measured against (scripts/jpeg-bench.sh). The files are read into memory first. Decode: one
// thread takes batches of BATCH files to the decoder (the JPEG engine where there is one: more
// threads only contend for it). Encode: ENCODERS threads, each with its own codec and stream,
// encode decoded images at QUALITY, 4:2:0. Both: the decode thread hands each batch to the
// encoder threads, as the pipeline does. Prints one JSON object: images/s of each.
#include "gpu/jpeg_codec.hpp"

#include <cuconv/error.hpp>

#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using Clock = std::chrono::steady_clock;

enum class Work { decode, encode, both };

cudaStream_t make_stream() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
    throw cuconv::Error(cuconv::ErrorKind::gpu, "cudaStreamCreateWithFlags failed");
  return stream;
}

/// Seconds to take every file through `work` (each codec and stream made, and warmed up on one
/// file, before the clock starts).
double run(const std::vector<Bytes>& files, Work work, int encoders, int batch, int quality, int device) {
  cuconv::codec::DeviceImagePool pool;
  cuconv::codec::GpuJpegCodec decoder(device);
  const cudaStream_t decode_stream = make_stream();
  std::vector<cuconv::codec::GpuJpegCodec> codecs;
  std::vector<cudaStream_t> streams;
  for (int t = 0; t < encoders; ++t) {
    codecs.emplace_back(device);
    streams.push_back(make_stream());
  }
  cuconv::codec::JpegEncodeOptions options;
  options.quality = quality;
  // Warm-up, and the encode-only input: the first file decoded once.
  std::vector<cuconv::codec::DecodedJpeg> first = decoder.decode({std::span<const std::uint8_t>(files.front())}, decode_stream);
  if (first.front().image.empty()) throw cuconv::Error(cuconv::ErrorKind::bad_input, "nvJPEG cannot decode the first file");
  for (int t = 0; t < encoders; ++t) (void)codecs[static_cast<std::size_t>(t)].encode(first.front().view, options, streams[static_cast<std::size_t>(t)]);

  std::mutex mutex;
  std::condition_variable ready;
  std::deque<cuconv::codec::DecodedJpeg> queue;  // decoded, waiting for an encoder
  bool decoding = work != Work::encode;
  std::atomic<std::size_t> next_encode{0};
  std::atomic<bool> failed{false};
  const auto start = Clock::now();
  std::vector<std::jthread> threads;
  if (work != Work::encode) {
    threads.emplace_back([&] {
      try {
        for (std::size_t at = 0; at < files.size(); at += static_cast<std::size_t>(batch)) {
          std::vector<std::span<const std::uint8_t>> spans;
          for (std::size_t i = at; i < std::min(files.size(), at + static_cast<std::size_t>(batch)); ++i) spans.emplace_back(files[i]);
          std::vector<cuconv::codec::DecodedJpeg> decoded = decoder.decode(spans, decode_stream, &pool);
          for (auto& d : decoded) {
            if (d.image.empty()) throw cuconv::Error(cuconv::ErrorKind::bad_input, "a file nvJPEG could not decode: " + d.not_supported + d.bad_file);
            if (work == Work::decode) {
              pool.give(std::move(d.image));
              continue;
            }
            const std::lock_guard lock(mutex);
            queue.push_back(std::move(d));
            ready.notify_one();
          }
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cuconv_nvjpeg_floor: %s\n", e.what());
        failed = true;
      }
      const std::lock_guard lock(mutex);
      decoding = false;
      ready.notify_all();
    });
  }
  if (work != Work::decode) {
    for (int t = 0; t < encoders; ++t) {
      threads.emplace_back([&, t] {
        auto& codec = codecs[static_cast<std::size_t>(t)];
        const cudaStream_t stream = streams[static_cast<std::size_t>(t)];
        try {
          while (true) {
            if (work == Work::encode) {
              if (next_encode++ >= files.size()) return;
              (void)codec.encode(first.front().view, options, stream);
              continue;
            }
            cuconv::codec::DecodedJpeg d;
            {
              std::unique_lock lock(mutex);
              ready.wait(lock, [&] { return !queue.empty() || !decoding; });
              if (queue.empty()) return;
              d = std::move(queue.front());
              queue.pop_front();
            }
            (void)codec.encode(d.view, options, stream);
            pool.give(std::move(d.image));
          }
        } catch (const std::exception& e) {
          std::fprintf(stderr, "cuconv_nvjpeg_floor: %s\n", e.what());
          failed = true;
        }
      });
    }
  }
  threads.clear();  // joins
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  cudaStreamDestroy(decode_stream);
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
  if (failed) throw cuconv::Error(cuconv::ErrorKind::gpu, "a worker failed");
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int encoders = 4;
  int batch = 64;
  int quality = 95;
  int device = 0;
  CLI::App app{"cuconv_nvjpeg_floor: nvJPEG decode + encode of a folder of JPEG files (the GPU JPEG path's floor)"};
  app.add_option("DIR", dir, "folder of .jpg files")->required();
  app.add_option("--encoders", encoders, "encoder threads, each with its own codec and stream")->check(CLI::Range(1, 64))->capture_default_str();
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
    const double decode_s = run(files, Work::decode, encoders, batch, quality, device);
    const double encode_s = run(files, Work::encode, encoders, batch, quality, device);
    const double both_s = run(files, Work::both, encoders, batch, quality, device);
    const std::string backend(cuconv::codec::GpuJpegCodec(device).backend());
    const nlohmann::json report = {{"images", files.size()},
                                   {"input_bytes", bytes},
                                   {"encoders", encoders},
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
