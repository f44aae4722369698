// SPDX-License-Identifier: Apache-2.0
// Benchmark: every GPU variant (and what `auto` picks) on the same device buffers, median kernel
// time over many runs after warm-up (CUDA events), with in the same run the roofs it is judged
// against: a device-to-device copy of the same bytes (memory) and the FP32 FMA peak (compute,
// the multiply-adds a filter needs at least: kw * kh, or kw + kh when separable), plus cv::filter2D on all CPU cores.
// The NPP peer runs from bench/npp_peer.cu (scripts/gpu-check.sh merges its lines).
//
//   cuconv_bench [--quick] [--reps R] [--json FILE] [--csv FILE] [--no-opencv] [--variants a,b,...]
//                [--filters "gaussian 15x15,..."] [--filter-spec SPEC]... [--shapes "8U 1ch 16384,8U RGB
//                6000x4000,..."]
//
// Images: f32 1 channel and RGB, 8U 1 channel, 16U 1 channel and RGB, 8U RGB (interleaved for `fast`, the three
// planes of the same image for the PMPP variants, which filter planes), square and, for a camera
// frame, 6000x4000; --shapes also takes any other "TYPE LAYOUT SIZE" (8U, 16U or f32; 1ch, RGB or
// RGBA; N or WxH), e.g. "f32 1ch 64" for a small image's latency; --filter-spec adds any filter
// the CLI takes (e.g. "gaussian:5,2", named "gaussian:5,2 11x11"). Filters: random dense 3..31 (17: `tensor`'s largest
// dense side on 8U), separable gaussians 15x15 and 31x31, box 15x15 and sobel-x; rank-1 filters up to 15x15 are also
// timed on `fast`'s dense path ("fast (dense path)"), the gain of the separable one.
#include "bench_filters.hpp"
#include "copy_roof.hpp"
#include "filter/splits.hpp"
#include "gpu/bench_timing.hpp"
#include "gpu/launch/launch.hpp"
#include "gpu/memory/device_memory.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace cuconv;
using namespace cuconv::gpu;
using namespace cuconv::filter;

namespace {

struct Settings {
  int reps = 30;
  bool quick = false;  // 4096^2 and 8192^2 only, none of the extra shapes
  bool opencv = true;
  std::string json_path;
  std::string csv_path;
  std::vector<std::string> variants;      // empty: all
  std::vector<std::string> filters;       // filter case names; empty: all
  std::vector<std::string> filter_specs;  // --filter-spec: filters off the list
  std::vector<std::string> shapes;        // "8U RGB 6000x4000"-style image labels; empty: all
};

std::vector<std::string> comma_list(const char* text) {
  std::vector<std::string> items;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) items.push_back(item);
  return items;
}

bool selected(const std::vector<std::string>& wanted, const std::string& name) {
  return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
}

/// Median milliseconds of `work` (enqueued on `stream`) after three warm-up runs; cases slower
/// than 50 ms stop after three timed runs (the spread there is far below a percent).
double time_gpu(const Settings& s, cudaStream_t stream, const std::function<void()>& work) {
  return time_median_ms(stream, {s.reps, 3, 50.0}, work);
}

/// One image shape: `width` x `height` pixels of `channels` interleaved elements of OpenCV depth
/// `depth`.
struct ImageCase {
  std::string name;
  int width;
  int height;
  int depth;
  int channels;
};

/// Square image cases of side n.
ImageCase square(std::string name, int n, int depth, int channels) { return {std::move(name), n, n, depth, channels}; }

/// Exclusive upper bound of cv::randu's values for a depth: the full range of the integer
/// types, [0, 1) for floats.
double random_upper(int depth) { return depth == CV_8U ? 256.0 : depth == CV_16U ? 65536.0 : 1.0; }

/// An image named "TYPE LAYOUT SIZE" off the benchmark's list (8U, 16U or f32; 1ch, RGB or RGBA;
/// N or WxH, 1 to 65536 a side), or nothing when the name is not of that form.
std::optional<ImageCase> parse_shape(const std::string& name) {
  std::istringstream in(name);
  std::string type, layout, size, rest;
  if (!(in >> type >> layout >> size) || (in >> rest)) return std::nullopt;
  const int depth = type == "8U" ? CV_8U : type == "16U" ? CV_16U : type == "f32" ? CV_32F : -1;
  const int channels = layout == "1ch" ? 1 : layout == "RGB" ? 3 : layout == "RGBA" ? 4 : 0;
  const std::size_t x = size.find('x');
  const auto side = [](const std::string& digits) {
    if (digits.empty() || digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
    const int n = std::stoi(digits);
    return n <= 65536 ? n : 0;
  };
  const int width = side(size.substr(0, x));
  const int height = x == std::string::npos ? width : side(size.substr(x + 1));
  if (depth < 0 || channels == 0 || width == 0 || height == 0) return std::nullopt;
  return ImageCase{type + " " + layout, width, height, depth, channels};
}

/// The size printed for an image: its side when square, else WxH.
std::string size_label(const ImageCase& c) {
  return c.width == c.height ? std::to_string(c.width) : std::to_string(c.width) + "x" + std::to_string(c.height);
}

// Beyond these pixel counts filter2D takes seconds per run (OpenCV is timed only up to 4096^2),
// and the PMPP variants' loops (no unrolled path above 15x15) run for seconds (`basic` skipped).
constexpr double kOpenCvMaxPixels = 4096.0 * 4096.0;
constexpr double kBasicLargeFilterMaxPixels = 8192.0 * 8192.0;

using bench::FilterCase;

/// FP32 multiply-add peak: SMs x 128 lanes x the boost clock.
double fma_per_ms(int device) {
  int sms = 0, khz = 0;
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUCONV_CUDA_TRY(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  return static_cast<double>(sms) * 128.0 * khz;  // per ms: kHz = per-ms clock count
}

/// The device side of one image case: interleaved images and one plane per channel.
struct CaseImages {
  DeviceImage interleaved_in, interleaved_out;
  std::vector<DeviceImage> planes_in, planes_out;
};

}  // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): a CUDA or OpenCV failure ends the run with its message
int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc)
      s.reps = std::atoi(argv[++i]);
    else if (a == "--quick")
      s.quick = true;
    else if (a == "--json" && i + 1 < argc)
      s.json_path = argv[++i];
    else if (a == "--csv" && i + 1 < argc)
      s.csv_path = argv[++i];
    else if (a == "--no-opencv")
      s.opencv = false;
    else if (a == "--variants" && i + 1 < argc)
      s.variants = comma_list(argv[++i]);
    else if (a == "--filters" && i + 1 < argc)
      s.filters = comma_list(argv[++i]);
    else if (a == "--filter-spec" && i + 1 < argc)
      s.filter_specs.emplace_back(argv[++i]);
    else if (a == "--shapes" && i + 1 < argc)
      s.shapes = comma_list(argv[++i]);
    else {
      std::fprintf(
          stderr,
          "usage: cuconv_bench [--quick] [--reps R] [--json FILE] [--csv FILE] [--no-opencv] [--variants a,b]\n"
          "                    [--filters \"gaussian 15x15,5x5\"] [--filter-spec gaussian:5,2] [--shapes \"8U 1ch "
          "16384,8U RGB 6000x4000,f32 1ch "
          "64\"]\n");
      return 2;
    }
  }
  std::vector<ImageCase> images{square("f32 1ch", 4096, CV_32F, 1), square("f32 1ch", 8192, CV_32F, 1),
                                square("8U 1ch", 4096, CV_8U, 1), square("8U RGB", 4096, CV_8U, 3),
                                square("8U RGB", 8192, CV_8U, 3)};
  if (!s.quick) {
    images.push_back(square("f32 1ch", 16384, CV_32F, 1));
    images.push_back(square("8U 1ch", 8192, CV_8U, 1));
    images.push_back(square("8U 1ch", 16384, CV_8U, 1));
    images.push_back(square("8U RGB", 16384, CV_8U, 3));
    images.push_back({"8U RGB", 6000, 4000, CV_8U, 3});  // a 24-megapixel camera frame
    images.push_back(square("8U RGBA", 8192, CV_8U, 4));
    images.push_back(square("16U 1ch", 8192, CV_16U, 1));
    images.push_back(square("16U RGB", 8192, CV_16U, 3));
    images.push_back(square("16U RGBA", 8192, CV_16U, 4));
    images.push_back(square("f32 RGB", 4096, CV_32F, 3));
  }
  std::vector<FilterCase> filters = bench::bench_filters();
  std::vector<Variant> variants{Variant::automatic};
  for (Variant v : gpu_variants()) variants.push_back(v);
  // A name that selects nothing is a typo: say so, with the names there are, before any GPU work.
  const auto unknown = [](const char* option, const std::vector<std::string>& wanted,
                          const std::vector<std::string>& known) {
    for (const std::string& name : wanted) {
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      std::fprintf(stderr, "cuconv_bench: %s names '%s', which is none of: %s\n", option, name.c_str(), list.c_str());
      return true;
    }
    return false;
  };
  std::vector<std::string> image_names, filter_names, variant_names;
  for (const ImageCase& c : images) image_names.push_back(c.name + " " + size_label(c));
  // Shapes off the list that name an image (e.g. "f32 1ch 64") are added to it.
  for (std::string& name : s.shapes) {
    if (std::find(image_names.begin(), image_names.end(), name) != image_names.end()) continue;
    const std::optional<ImageCase> extra = parse_shape(name);
    if (!extra) continue;                           // refused below
    name = extra->name + " " + size_label(*extra);  // "64x64" is "64"
    if (std::find(image_names.begin(), image_names.end(), name) != image_names.end()) continue;
    images.push_back(*extra);
    image_names.push_back(name);
  }
  for (const FilterCase& f : filters) filter_names.push_back(f.name);
  // --filter-spec filters join the list, named "SPEC WxH", and the selection when --filters gave one.
  for (const std::string& spec : s.filter_specs) {
    FilterCase extra;
    try {
      extra = bench::spec_filter(spec);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cuconv_bench: --filter-spec '%s': %s\n", spec.c_str(), e.what());
      return 2;
    }
    if (!s.filters.empty()) s.filters.push_back(extra.name);
    filter_names.push_back(extra.name);
    filters.push_back(std::move(extra));
  }
  for (Variant v : variants) variant_names.emplace_back(to_string(v));
  if (unknown("--shapes", s.shapes, image_names)) {
    std::fprintf(stderr,
                 "cuconv_bench: or any other \"TYPE LAYOUT SIZE\": 8U, 16U or f32; 1ch, RGB or RGBA; N or WxH\n");
    return 2;
  }
  if (unknown("--filters", s.filters, filter_names) || unknown("--variants", s.variants, variant_names)) return 2;
  std::erase_if(images, [&](const ImageCase& c) { return !selected(s.shapes, c.name + " " + size_label(c)); });
  std::erase_if(filters, [&](const FilterCase& f) { return !selected(s.filters, f.name); });
  if (!s.variants.empty())
    std::erase_if(variants, [&](Variant v) {
      return std::find(s.variants.begin(), s.variants.end(), std::string(to_string(v))) == s.variants.end();
    });

  std::string reason;
  if (!cuda_device_available(&reason)) {
    std::fprintf(stderr, "cuconv_bench: no CUDA device: %s\n", reason.c_str());
    return 77;
  }
  int device = 0;
  cudaDeviceProp prop{};
  CUCONV_CUDA_TRY(cudaGetDevice(&device));
  CUCONV_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  const double fma_rate = fma_per_ms(device);

  nlohmann::json results = nlohmann::json::array();
  CudaStream stream;
  std::printf("GPU: %s (%d SMs), median of up to %d runs after 3 warm-up runs; FP32 FMA peak %.1f TFMA/s\n\n",
              prop.name, prop.multiProcessorCount, s.reps, fma_rate * 1e-9);
  std::printf(
      "| image | size | filter | variant | median ms | Gpix/s | GB/s | %% of copy roof | %% of FMA roof |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (const ImageCase& c : images) {
    const int w = c.width, h = c.height;
    const std::string size = size_label(c);
    const std::size_t elem = CV_ELEM_SIZE1(c.depth);
    const std::size_t plane_row = static_cast<std::size_t>(w) * elem;
    CaseImages d{DeviceImage(w, h, c.channels, c.depth), DeviceImage(w, h, c.channels, c.depth), {}, {}};
    cv::Mat host(h, w, CV_MAKETYPE(c.depth, c.channels));
    cv::randu(host, 0, random_upper(c.depth));
    const DeviceImageView in_view = d.interleaved_in.view();
    CUCONV_CUDA_TRY(cudaMemcpy2D(in_view.data, in_view.pitch, host.data, host.step, in_view.row_bytes(), h,
                                 cudaMemcpyHostToDevice));
    if (c.channels > 1) {
      std::vector<cv::Mat> split;
      cv::split(host, split);
      for (const cv::Mat& plane : split) {
        d.planes_in.emplace_back(w, h, 1, c.depth);
        d.planes_out.emplace_back(w, h, 1, c.depth);
        const DeviceImageView view = d.planes_in.back().view();
        CUCONV_CUDA_TRY(
            cudaMemcpy2D(view.data, view.pitch, plane.data, plane.step, plane_row, h, cudaMemcpyHostToDevice));
      }
    }
    const double pixels = static_cast<double>(w) * h;
    const double bytes = 2.0 * pixels * static_cast<double>(elem) * c.channels;  // read + write
    // Roof: the faster of a plain device-to-device copy and a copy kernel over the same bytes, the
    // image's rows without the pitch's padding (rounded up to the copy kernel's 16-byte words,
    // which stays inside the 512-byte-aligned pitched allocation).
    const std::size_t copy_bytes = (in_view.row_bytes() * static_cast<std::size_t>(h) + 15) / 16 * 16;
    const DeviceImageView out_view = d.interleaved_out.view();
    const double memcpy_ms = time_gpu(s, stream.get(), [&] {
      CUCONV_CUDA_TRY(cudaMemcpyAsync(out_view.data, in_view.data, copy_bytes, cudaMemcpyDeviceToDevice, stream.get()));
    });
    const double copy_kernel_ms =
        time_gpu(s, stream.get(), [&] { launch_copy_kernel(in_view.data, out_view.data, copy_bytes, stream.get()); });
    const double copy_ms = std::min(memcpy_ms, copy_kernel_ms);
    const auto report = [&](const std::string& filter, const std::string& variant, double ms, int taps) {
      const double fma_roof_ms = taps > 0 ? pixels * c.channels * taps / fma_rate : 0.0;
      std::printf("| %s | %s | %s | %s | %.3f | %.2f | %.0f | %.0f | %s |\n", c.name.c_str(), size.c_str(),
                  filter.c_str(), variant.c_str(), ms, pixels / ms * 1e-6, bytes / ms * 1e-6, 100.0 * copy_ms / ms,
                  taps > 0 ? std::to_string(std::lround(100.0 * fma_roof_ms / ms)).c_str() : "-");
      std::fflush(stdout);
      results.push_back({{"image", c.name},
                         {"size", w},  // the side of square images, kept for readers of older results
                         {"width", w},
                         {"height", h},
                         {"filter", filter},
                         {"variant", variant},
                         {"median_ms", ms},
                         {"gpix_per_s", pixels / ms * 1e-6},
                         {"gbps", bytes / ms * 1e-6},
                         {"copy_roof_ms", copy_ms},
                         {"roof_percent", 100.0 * copy_ms / ms},
                         {"fma_roof_ms", fma_roof_ms},
                         {"fma_roof_percent", taps > 0 ? 100.0 * fma_roof_ms / ms : 0.0}});
    };
    report("-", "cudaMemcpyAsync d2d", memcpy_ms, 0);
    report("-", "copy kernel (16 B/thread)", copy_kernel_ms, 0);

    const PixelType type = pixel_type_for_depth(c.depth);
    for (const FilterCase& fc : filters) {
      const Filter& f = fc.filter;
      const int k = f.width;
      std::vector<float> weights(f.weights.begin(), f.weights.end());
      DeviceBuffer device_weights(sizeof(float) * weights.size());
      CUCONV_CUDA_TRY(cudaMemcpy(device_weights.data(), weights.data(), device_weights.size(), cudaMemcpyHostToDevice));
      const std::optional<SeparableFactors> separable =
          separable_for(f.weights, f.width, f.height, c.depth, c.depth, 0.0);
      const std::optional<DenseTensorSplit> dense = dense_tensor_for(f.weights, k, k, c.depth, c.depth, 0.0);
      const kernels::ConvParams params{k, k, k / 2, k / 2, 0.0f, kernels::BorderRule::reflect101, 0.0f};
      // One run of variant v over the image (per plane for the PMPP variants), with the rank-1
      // factors when `separable_path` (only `fast` uses them).
      const auto launch_case = [&](Variant v, bool separable_path) {
        const bool interleaved = filters_interleaved(v) || c.channels == 1;  // as convolve() lays it out
        const int launches = interleaved ? 1 : c.channels;
        for (int ch = 0; ch < launches; ++ch) {
          const DeviceImageView in = (interleaved ? d.interleaved_in : d.planes_in[ch]).view();
          const DeviceImageView out = (interleaved ? d.interleaved_out : d.planes_out[ch]).view();
          // The weights as the product passes them: float, and double for the exact sums (fast's
          // tile kernel sums 16-bit rank-1 filters in double only with them).
          LaunchArgs args{{in.data, in.pitch, type},
                          {out.data, out.pitch, type},
                          w,
                          h,
                          params,
                          {static_cast<const float*>(device_weights.data()), weights.data(), f.weights.data()},
                          stream.get()};
          args.channels = interleaved ? c.channels : 1;
          args.dense_tensor = dense ? &*dense : nullptr;
          if (separable_path) args.rank1 = rank1_weights(*separable, 0.0);
          launch_variant(v, args);
        }
      };
      for (Variant requested : variants) {
        const Variant v = requested == Variant::automatic
                              ? choose_variant(f, ConvolveOptions{}, true, c.depth, c.depth, c.channels, w, h)
                              : requested;
        if (requested == Variant::basic && k > 15 && pixels > kBasicLargeFilterMaxPixels) continue;
        const double ms = time_gpu(s, stream.get(), [&] { launch_case(v, separable.has_value()); });
        const std::string name =
            requested == Variant::automatic ? "auto (" + std::string(to_string(v)) + ")" : std::string(to_string(v));
        report(fc.name, name, ms, separable ? 2 * k : k * k);
      }
      // The separable path's gain: `fast` again with the dense path on the same filter (unrolled
      // dense kernels reach 15x15).
      const bool fast_timed = std::find(variants.begin(), variants.end(), Variant::fast) != variants.end();
      if (separable && fast_timed && k <= 15) {
        const double ms = time_gpu(s, stream.get(), [&] { launch_case(Variant::fast, false); });
        report(fc.name, "fast (dense path)", ms, k * k);
      }
      if (s.opencv && pixels <= kOpenCvMaxPixels) {
        cv::Mat kernel(k, k, CV_32F, weights.data());
        cv::Mat dst;
        std::vector<double> ms;
        cv::filter2D(host, dst, -1, kernel);  // warm-up
        for (int i = 0; i < 3; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          cv::filter2D(host, dst, -1, kernel);
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        report(fc.name, "opencv (" + std::to_string(cv::getNumThreads()) + " CPU threads)", median(ms),
               separable ? 2 * k : k * k);
      }
    }
  }
  const nlohmann::json doc{{"gpu", prop.name},
                           {"sms", prop.multiProcessorCount},
                           {"reps", s.reps},
                           {"fma_per_ms", fma_rate},
                           {"results", results}};
  if (!s.json_path.empty()) std::ofstream(s.json_path) << doc.dump(2) << '\n';
  if (!s.csv_path.empty()) {
    std::ofstream csv(s.csv_path);
    csv << "image,size,filter,variant,median_ms,gpix_per_s,gbps,copy_roof_ms,roof_percent,fma_roof_ms,fma_roof_percent,"
           "width,height\n";
    for (const auto& r : results)
      csv << r["image"].get<std::string>() << ',' << r["size"] << ',' << r["filter"].get<std::string>() << ','
          << r["variant"].get<std::string>() << ',' << r["median_ms"] << ',' << r["gpix_per_s"] << ',' << r["gbps"]
          << ',' << r["copy_roof_ms"] << ',' << r["roof_percent"] << ',' << r["fma_roof_ms"] << ','
          << r["fma_roof_percent"] << ',' << r["width"] << ',' << r["height"] << '\n';
  }
  return 0;
}
