// SPDX-License-Identifier: Apache-2.0
// cuconv_nvjpeg_floor: nvJPEG's own decode + encode of a folder of JPEG files, with nothing of
// cuconv's pipeline around it (no filter, no file reads or writes): the floor the GPU JPEG path is
// measured against (scripts/jpeg-bench.sh). The files are read into memory and their headers
// read (nvJPEG's plan of each) before the clock starts. Decode: one
// thread takes batches of BATCH files to the decoder (the JPEG engine where there is one: more
// threads only contend for it). Encode: ENCODERS threads, each with its own codec and stream,
// encode decoded images at QUALITY, 4:2:0. Both: the decode thread hands each batch to the
// encoder threads, as the pipeline does. Prints one JSON object: images/s of each, and the host
// time spent inside the engine's batched calls. --setup-probe instead times the set-up's phases
// (context, library handle, decoder state, first decode, first encode) in a fresh process.
// --accuracy instead measures, per file: nvJPEG's decoded pixels against OpenCV's (libjpeg-turbo's),
// the device filter against cv::filter2D on the same decoded pixels (the pass rule), and the PSNR
// of nvJPEG's and OpenCV's encodings of the filtered pixels at the same quality.
#include "codec/nvjpeg_codec.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <cuda_runtime_api.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

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

cudaStream_t make_stream(bool high_priority = false) {
  cudaStream_t stream = nullptr;
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess ||
      cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, high_priority ? greatest : least) != cudaSuccess)
    throw cuconv::Error(cuconv::ErrorKind::gpu, "cudaStreamCreateWithPriority failed");
  return stream;
}

/// Seconds to take every file through `work` (each codec and stream made, and warmed up on one
/// file, before the clock starts).
double run(const std::vector<Bytes>& files, Work work, int encoders, int batch, int quality, int device,
           bool high_priority, double* engine_call_ms_total = nullptr) {
  cuconv::codec::DeviceImagePool pool;
  cuconv::codec::GpuJpegCodec decoder(device);
  const cudaStream_t decode_stream = make_stream(high_priority);
  std::vector<cuconv::codec::JpegPlan> plans;  // header reads: the pipeline makes them on other threads
  for (const Bytes& file : files) plans.push_back(decoder.plan(file));
  std::vector<cuconv::codec::GpuJpegCodec> codecs;
  std::vector<cudaStream_t> streams;
  for (int t = 0; t < encoders; ++t) {
    codecs.emplace_back(device);
    streams.push_back(make_stream());
  }
  cuconv::codec::JpegEncodeOptions options;
  options.quality = quality;
  // Warm-up, and the encode-only input: the first file decoded once.
  std::vector<cuconv::codec::DecodedJpeg> first =
      decoder.decode({std::span<const std::uint8_t>(files.front())}, decode_stream);
  if (first.front().image.empty())
    throw cuconv::Error(cuconv::ErrorKind::bad_input, "nvJPEG cannot decode the first file");
  for (int t = 0; t < encoders; ++t)
    (void)codecs[static_cast<std::size_t>(t)].encode(first.front().view, options, streams[static_cast<std::size_t>(t)]);

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
          std::vector<cuconv::codec::JpegPlan> batch_plans;
          for (std::size_t i = at; i < std::min(files.size(), at + static_cast<std::size_t>(batch)); ++i) {
            spans.emplace_back(files[i]);
            batch_plans.push_back(plans[i]);
          }
          double call_ms = 0;
          std::vector<cuconv::codec::DecodedJpeg> decoded =
              decoder.decode(spans, decode_stream, &pool, std::move(batch_plans), &call_ms);
          if (engine_call_ms_total != nullptr) *engine_call_ms_total += call_ms;
          for (auto& d : decoded) {
            if (d.image.empty())
              throw cuconv::Error(cuconv::ErrorKind::bad_input,
                                  "a file nvJPEG could not decode: " + d.not_supported + d.bad_file);
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

/// The set-up's phases in this process, in milliseconds (see --setup-probe): CUDA's context, the
/// JPEG engine's library handle, its decoder state, the first decode and the first encode.
nlohmann::json setup_phases(const std::string& dir, int device) {
  const auto since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const auto start = Clock::now();
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess)
    throw cuconv::Error(cuconv::ErrorKind::gpu, "cannot make a CUDA context");
  const double context_ms = since(start);
  auto t = Clock::now();
  cuconv::codec::GpuJpegCodec codec(device);
  const double handle_ms = since(t);
  t = Clock::now();
  codec.prepare_decoder();
  const double state_ms = since(t);
  fs::path first;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".jpg" && (first.empty() || entry.path() < first)) first = entry.path();
  std::ifstream in(first, std::ios::binary);
  const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  t = Clock::now();
  const std::vector<cuconv::codec::DecodedJpeg> decoded = codec.decode({std::span<const std::uint8_t>(file)}, nullptr);
  const double decode_ms = since(t);
  if (decoded.front().image.empty())
    throw cuconv::Error(cuconv::ErrorKind::bad_input, first.string() + ": nvJPEG cannot decode it");
  t = Clock::now();
  cuconv::codec::GpuJpegCodec encoder(device);
  (void)encoder.encode(decoded.front().view, cuconv::codec::JpegEncodeOptions{}, nullptr);
  const double encode_ms = since(t);
  return {{"context_ms", context_ms},     {"handle_ms", handle_ms},       {"decoder_state_ms", state_ms},
          {"first_decode_ms", decode_ms}, {"first_encode_ms", encode_ms}, {"total_ms", since(start)}};
}

/// nvJPEG against OpenCV on every file (see the file comment): one JSON object.
nlohmann::json accuracy(const std::vector<Bytes>& files, const std::string& filter_spec, int quality, int device) {
  cuconv::codec::GpuJpegCodec codec(device);
  cuconv::GpuWorkspace workspace;
  const cuconv::Filter filter = cuconv::load_filter(filter_spec);
  cuconv::ConvolveOptions options;
  options.device = device;
  cuconv::ConvolveOptions reference_options;
  reference_options.variant = cuconv::Variant::opencv;
  reference_options.opencv_method = cuconv::OpenCvMethod::as_called;  // cv::filter2D itself
  cuconv::codec::JpegEncodeOptions encode_options;
  encode_options.quality = quality;
  double decode_max = 0, decode_sum = 0, decode_values = 0, psnr_gpu_sum = 0, psnr_cv_sum = 0;
  double psnr_gpu_min = 1e9, psnr_cv_min = 1e9, worst_psnr_gap = -1e9, filter_max_abs = 0;
  std::size_t within_rule = 0;
  for (const Bytes& file : files) {
    std::vector<cuconv::codec::DecodedJpeg> decoded = codec.decode({std::span<const std::uint8_t>(file)}, nullptr);
    if (decoded[0].image.empty()) throw cuconv::Error(cuconv::ErrorKind::bad_input, "a file nvJPEG could not decode");
    const cv::Mat gpu_pixels = cuconv::download(decoded[0].view);
    const cv::Mat cv_pixels = cv::imdecode(file, cv::IMREAD_UNCHANGED);
    cv::Mat diff;
    cv::absdiff(gpu_pixels, cv_pixels, diff);
    double most = 0;
    cv::minMaxLoc(diff.reshape(1), nullptr, &most);
    decode_max = std::max(decode_max, most);
    decode_sum += cv::sum(diff)[0] + cv::sum(diff)[1] + cv::sum(diff)[2];
    decode_values += static_cast<double>(diff.total()) * diff.channels();
    // The filter on the device against cv::filter2D on the same (nvJPEG's) pixels.
    const cuconv::DeviceImageView in = decoded[0].view;
    const cuconv::DeviceImage out(in.width, in.height, in.channels, CV_8U);
    const cuconv::Variant ran = cuconv::convolve(in, out.view(), filter, options, workspace, nullptr);
    const cv::Mat filtered = cuconv::download(out.view());
    const cuconv::ConvolveResult reference = cuconv::convolve(gpu_pixels, filter, reference_options);
    const cuconv::ComparisonStats stats = cuconv::compare_to_reference(
        filtered, reference.image, gpu_pixels, filter, 0.0, 0.0, cuconv::max_differing_fraction_for(ran));
    within_rule += stats.within_tolerance;
    filter_max_abs = std::max(filter_max_abs, stats.max_abs_difference);
    // Both encoders on the filtered pixels, decoded again by OpenCV.
    const Bytes gpu_jpeg = codec.encode(out.view(), encode_options, nullptr);
    Bytes cv_jpeg;
    cv::imencode(".jpg", filtered, cv_jpeg, {cv::IMWRITE_JPEG_QUALITY, quality});
    const double psnr_gpu = cv::PSNR(filtered, cv::imdecode(gpu_jpeg, cv::IMREAD_UNCHANGED));
    const double psnr_cv = cv::PSNR(filtered, cv::imdecode(cv_jpeg, cv::IMREAD_UNCHANGED));
    psnr_gpu_sum += psnr_gpu;
    psnr_cv_sum += psnr_cv;
    psnr_gpu_min = std::min(psnr_gpu_min, psnr_gpu);
    psnr_cv_min = std::min(psnr_cv_min, psnr_cv);
    worst_psnr_gap = std::max(worst_psnr_gap, psnr_cv - psnr_gpu);
  }
  const double n = static_cast<double>(files.size());
  return {{"images", files.size()},
          {"filter", filter_spec},
          {"quality", quality},
          {"decode_max_abs_diff", decode_max},
          {"decode_mean_abs_diff", decode_sum / decode_values},
          {"filter_within_pass_rule", within_rule},
          {"filter_max_abs_diff", filter_max_abs},
          {"psnr_nvjpeg_mean_db", psnr_gpu_sum / n},
          {"psnr_opencv_mean_db", psnr_cv_sum / n},
          {"psnr_nvjpeg_min_db", psnr_gpu_min},
          {"psnr_opencv_min_db", psnr_cv_min},
          {"worst_opencv_minus_nvjpeg_db", worst_psnr_gap}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int encoders = 4;
  int batch = 128;  // the pipeline's JpegPipelineOptions::batch
  int quality = 95;
  int device = 0;
  int repeat = 1;
  CLI::App app{"cuconv_nvjpeg_floor: nvJPEG decode + encode of a folder of JPEG files (the GPU JPEG path's floor)"};
  app.add_option("DIR", dir, "folder of .jpg files")->required();
  app.add_option("--encoders", encoders, "encoder threads, each with its own codec and stream")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--batch", batch, "files per decode call")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--quality", quality, "encode quality")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--device", device, "CUDA device")->capture_default_str();
  bool high_priority = false;
  app.add_flag("--high-priority", high_priority, "decode on a high-priority stream, as the pipeline does");
  app.add_option("--repeat", repeat, "take the folder's files this many times over")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  bool measure_accuracy = false;
  std::string filter_spec = "gauss5";
  app.add_flag("--accuracy", measure_accuracy, "measure nvJPEG against OpenCV on every file instead of speed");
  app.add_option("--filter", filter_spec, "filter for --accuracy")->capture_default_str();
  bool setup_probe = false;
  app.add_flag("--setup-probe", setup_probe, "time the set-up's phases in this process instead (one JSON object)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (setup_probe) {
      std::cout << setup_phases(dir, device).dump() << '\n';
      return 0;
    }
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
    const std::size_t distinct = files.size();
    for (int r = 1; r < repeat; ++r)
      for (std::size_t i = 0; i < distinct; ++i) files.push_back(files[i]);
    if (measure_accuracy) {
      std::cout << accuracy(files, filter_spec, quality, device).dump() << '\n';
      return 0;
    }
    const double n = static_cast<double>(files.size());
    double engine_call_ms = 0;
    const double decode_s = run(files, Work::decode, encoders, batch, quality, device, high_priority, &engine_call_ms);
    const double encode_s = run(files, Work::encode, encoders, batch, quality, device, high_priority);
    const double both_s = run(files, Work::both, encoders, batch, quality, device, high_priority);
    const nlohmann::json report = {{"images", files.size()},
                                   {"input_bytes", bytes},
                                   {"encoders", encoders},
                                   {"batch", batch},
                                   {"high_priority_decode", high_priority},
                                   {"quality", quality},
                                   {"decode_backend", std::string(cuconv::codec::GpuJpegCodec(device).backend())},
                                   {"decode_images_per_s", n / decode_s},
                                   {"decode_engine_call_ms", engine_call_ms},
                                   {"decode_s", decode_s},
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
