// Benchmark: each GPU variant's median kernel time over many runs after warm-up (CUDA events),
// its throughput in GB/s (input + output bytes) and as % of a device-to-device copy of the same
// bytes measured in the same run, plus cv::filter2D on all CPU cores.
//
//   cuconv_bench [--size N] [--reps R] [--json FILE] [--no-opencv]
#include "copy_roof.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/launch.hpp"

#include <cuconv/convolve.hpp>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

using namespace cuconv;
using namespace cuconv::detail;

namespace {

struct Settings {
  int size = 8192;
  int reps = 50;
  int warmup = 5;
  bool opencv = true;
  std::string json_path;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Median milliseconds of `work` (enqueued on `stream`), timed with events around each run.
double time_gpu(const Settings& s, cudaStream_t stream, const std::function<void()>& work) {
  for (int i = 0; i < s.warmup; ++i) work();
  CudaEvent start, stop;
  std::vector<double> ms;
  for (int i = 0; i < s.reps; ++i) {
    start.record(stream);
    work();
    stop.record(stream);
    ms.push_back(CudaEvent::elapsed_ms(start, stop));
  }
  return median(ms);
}

struct ImageCase {
  const char* name;
  int depth;
  int channels;
};

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--size" && i + 1 < argc) s.size = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) s.reps = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) s.json_path = argv[++i];
    else if (a == "--no-opencv") s.opencv = false;
    else {
      std::fprintf(stderr, "usage: cuconv_bench [--size N] [--reps R] [--json FILE] [--no-opencv]\n");
      return 2;
    }
  }
  std::string reason;
  if (!cuda_device_available(&reason)) {
    std::fprintf(stderr, "cuconv_bench: no CUDA device: %s\n", reason.c_str());
    return 77;
  }
  cudaDeviceProp prop{};
  CUCONV_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));

  const ImageCase cases[] = {{"f32 1ch", CV_32F, 1}, {"8U RGB (planar)", CV_8U, 3}};
  const int filter_sizes[] = {3, 5, 9, 15};
  nlohmann::json results = nlohmann::json::array();
  CudaStream stream;
  const int n = s.size;

  std::printf("GPU: %s, image %dx%d, median of %d runs after %d warm-up runs\n\n", prop.name, n, n, s.reps, s.warmup);
  std::printf("| image | filter | variant | median ms | GB/s | %% of copy roof |\n|---|---|---|---|---|---|\n");
  for (const ImageCase& c : cases) {
    const std::size_t row_bytes = static_cast<std::size_t>(n) * CV_ELEM_SIZE1(c.depth);
    std::vector<DevicePlane> in, out;
    cv::Mat host(n, n, c.depth);
    cv::randu(host, 0, c.depth == CV_8U ? 256 : 1);
    for (int ch = 0; ch < c.channels; ++ch) {
      in.emplace_back(row_bytes, n);
      out.emplace_back(row_bytes, n);
      CUCONV_CUDA_TRY(cudaMemcpy2D(in.back().data(), in.back().pitch(), host.data, host.step, row_bytes, n,
                                   cudaMemcpyHostToDevice));
    }
    const double bytes = 2.0 * static_cast<double>(row_bytes) * n * c.channels;  // read + write
    // Roof: the faster of a plain device-to-device copy and a copy kernel over the same bytes.
    const double memcpy_ms = time_gpu(s, stream.get(), [&] {
      for (int ch = 0; ch < c.channels; ++ch)
        CUCONV_CUDA_TRY(cudaMemcpyAsync(out[ch].data(), in[ch].data(), in[ch].pitch() * n, cudaMemcpyDeviceToDevice,
                                        stream.get()));
    });
    const double copy_kernel_ms = time_gpu(s, stream.get(), [&] {
      for (int ch = 0; ch < c.channels; ++ch) launch_copy_kernel(in[ch].data(), out[ch].data(), in[ch].pitch() * n, stream.get());
    });
    const double copy_ms = std::min(memcpy_ms, copy_kernel_ms);
    std::printf("| %s | - | cudaMemcpyAsync d2d | %.3f | %.0f | %.0f |\n", c.name, memcpy_ms, bytes / memcpy_ms * 1e-6,
                100.0 * copy_ms / memcpy_ms);
    std::printf("| %s | - | copy kernel (16 B/thread) | %.3f | %.0f | %.0f |\n", c.name, copy_kernel_ms,
                bytes / copy_kernel_ms * 1e-6, 100.0 * copy_ms / copy_kernel_ms);
    results.push_back({{"image", c.name}, {"size", n}, {"filter", 0}, {"variant", "copy"}, {"median_ms", copy_ms},
                       {"gbps", bytes / copy_ms * 1e-6}, {"memcpy_ms", memcpy_ms}, {"copy_kernel_ms", copy_kernel_ms}});

    for (int k : filter_sizes) {
      std::vector<float> weights(static_cast<std::size_t>(k) * k);
      cv::randu(cv::Mat(1, static_cast<int>(weights.size()), CV_32F, weights.data()), -0.3, 1.0);
      DeviceBuffer device_weights(sizeof(float) * weights.size());
      CUCONV_CUDA_TRY(cudaMemcpy(device_weights.data(), weights.data(), device_weights.size(), cudaMemcpyHostToDevice));
      const PixelType type = c.depth == CV_8U ? PixelType::u8 : PixelType::f32;
      for (Variant v : gpu_variants()) {
        const double ms = time_gpu(s, stream.get(), [&] {
          for (int ch = 0; ch < c.channels; ++ch) {
            const LaunchArgs args{in[ch].data(), in[ch].pitch(), type, out[ch].data(), out[ch].pitch(), type, n, n,
                                  kernels::ConvParams{k, k, k / 2, k / 2, 0.0f, kernels::BorderRule::reflect101, 0.0f},
                                  static_cast<const float*>(device_weights.data()), weights.data(), stream.get()};
            launch_variant(v, args);
          }
        });
        std::printf("| %s | %dx%d | %s | %.3f | %.0f | %.0f |\n", c.name, k, k, std::string(to_string(v)).c_str(), ms,
                    bytes / ms * 1e-6, 100.0 * copy_ms / ms);
        results.push_back({{"image", c.name}, {"size", n}, {"filter", k}, {"variant", std::string(to_string(v))},
                           {"median_ms", ms}, {"gbps", bytes / ms * 1e-6}, {"roof_percent", 100.0 * copy_ms / ms}});
      }
      if (s.opencv) {
        cv::Mat src(n, n, CV_MAKETYPE(c.depth, c.channels));
        cv::randu(src, 0, c.depth == CV_8U ? 256 : 1);
        cv::Mat kernel(k, k, CV_32F, weights.data());
        cv::Mat dst;
        std::vector<double> ms;
        cv::filter2D(src, dst, -1, kernel);  // warm-up
        for (int i = 0; i < 5; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          cv::filter2D(src, dst, -1, kernel);
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        const double m = median(ms);
        std::printf("| %s | %dx%d | opencv (%d threads, CPU) | %.3f | %.0f | %.1f |\n", c.name, k, k,
                    cv::getNumThreads(), m, bytes / m * 1e-6, 100.0 * copy_ms / m);
        results.push_back({{"image", c.name}, {"size", n}, {"filter", k}, {"variant", "opencv"}, {"median_ms", m},
                           {"gbps", bytes / m * 1e-6}, {"roof_percent", 100.0 * copy_ms / m},
                           {"threads", cv::getNumThreads()}});
      }
    }
  }
  if (!s.json_path.empty()) {
    nlohmann::json doc{{"gpu", prop.name}, {"reps", s.reps}, {"warmup", s.warmup}, {"results", results}};
    std::ofstream(s.json_path) << doc.dump(2) << '\n';
  }
  return 0;
}
