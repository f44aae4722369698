// SPDX-License-Identifier: Apache-2.0
// The CPU's separable path (src/convolve/cpu_separable.cpp): which filters it takes, and that its
// results equal the `opencv` variant's (cv::filter2D as called) bit for bit over random images,
// every border, 1/3/4 channels, every depth pair, anchors, deltas and --alpha keep.
#include "test_support.hpp"

#include "convolve/cpu_reference.hpp"
#include "convolve/cpu_separable.hpp"

#include <doctest/doctest.h>
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>
#include <opencv2/imgproc.hpp>

#include <string>
#include <utility>
#include <vector>

using namespace cuconv;
using namespace cuconv::test;
using convolution::ConvolveJob;

namespace {

struct JobSpec {
  int input_depth = CV_8U;
  int output_depth = CV_8U;
  Border border = Border::reflect101;
  double border_value = 0.0;
  double delta = 0.0;
  int anchor_x = -1;
  int anchor_y = -1;
  bool keep_alpha = false;
};

/// The job convolve() makes for `f` (src/convolve/convolve.cpp, make_job), without the GPU splits.
ConvolveJob job_for(const Filter& f, const JobSpec& s) {
  ConvolveJob job;
  job.kernel = kernel_matrix(f);
  for (double w : f.weights) job.weights.push_back(static_cast<float>(w));
  job.anchor_x = s.anchor_x >= 0 ? s.anchor_x : f.resolved_anchor_x();
  job.anchor_y = s.anchor_y >= 0 ? s.anchor_y : f.resolved_anchor_y();
  job.delta = s.delta + f.offset;
  job.border = s.border;
  job.border_value = convolution::stored_border_value(s.border_value, s.input_depth);
  job.output_depth = s.output_depth;
  job.keep_alpha = s.keep_alpha;
  return job;
}

/// A rectangular rank-1 filter with dyadic weights: [1 4 6 4 1] x [1 2 1] / 64.
Filter rectangular_binomial() {
  Filter f;
  f.width = 5;
  f.height = 3;
  const double h[] = {1, 4, 6, 4, 1};
  const double v[] = {1, 2, 1};
  for (double a : v)
    for (double b : h) f.weights.push_back(a * b / 64.0);
  f.origin = "5x3 binomial";
  return f;
}

/// Filters the path takes, and some it must leave to filter2D (skipped unless a defect plans them:
/// box:6's ties, filter2D's DFT from box:12, a gaussian off the dyadic grid).
const std::vector<std::string>& separable_specs() {
  static const std::vector<std::string> specs{"gauss3", "gauss5", "gauss7", "sobel-x",     "scharr-y", "box:2",
                                              "box:3",  "box:4",  "box:5",  "box:8",       "box:9",    "box:11",
                                              "box:6",  "box:12", "box:16", "gaussian:2,1"};
  return specs;
}

/// The `opencv` variant's result, and the separable one where a plan exists; false when none.
bool both_results(const cv::Mat& src, const ConvolveJob& job, cv::Mat& expected, cv::Mat& separable) {
  const auto plan = convolution::cpu_separable_plan(job, src.depth());
  if (!plan) return false;
  expected = convolution::convolve_opencv(src, job, OpenCvMethod::as_called);
  separable = convolution::convolve_cpu_separable(src, job, *plan);
  return true;
}

}  // namespace

TEST_CASE("cpu separable: the filters it takes and those it leaves to filter2D") {
  const auto plan = [](const std::string& spec, int in, int out, double delta = 0.0) {
    return convolution::cpu_separable_plan(job_for(load_filter(spec), {in, out, Border::reflect101, 0.0, delta}), in)
        .has_value();
  };
  // Dyadic rank-1 weights: exact float sums for every output depth below filter2D's DFT size.
  for (const char* spec : {"gauss3", "gauss5", "gauss7", "sobel-x", "scharr-x", "box:2", "box:4", "box:8"}) {
    CAPTURE(spec);
    CHECK(plan(spec, CV_8U, CV_8U));
    CHECK(plan(spec, CV_8U, CV_16S));
  }
  CHECK(plan("gauss3", CV_16U, CV_16U));
  CHECK(plan("gauss5", CV_16U, CV_16U));        // 65535 * 256 < 2^24: still exact
  CHECK_FALSE(plan("gauss7", CV_16U, CV_16U));  // 65535 * 4096 is not
  CHECK(plan("gauss7", CV_8U, CV_32F));         // 49 taps: filter2D sums directly below 50 here
  CHECK_FALSE(plan("box:8", CV_8U, CV_32F));    // 64 taps: filter2D's DFT
  // Odd boxes: no window sum S / N^2 is a tie, and filter2D's float error stays far from one.
  for (const char* spec : {"box:3", "box:5", "box:7", "box:9", "box:11"}) {
    CAPTURE(spec);
    CHECK(plan(spec, CV_8U, CV_8U));
    CHECK_FALSE(plan(spec, CV_8U, CV_32F));  // float results keep filter2D's own rounding
  }
  CHECK(plan("box:3", CV_16U, CV_16U));
  CHECK_FALSE(plan("box:6", CV_8U, CV_8U));       // S = 18: S / 36 is a tie
  CHECK_FALSE(plan("box:3", CV_8U, CV_8U, 0.5));  // S = 9k plus 0.5: ties
  CHECK_FALSE(plan("box:13", CV_8U, CV_8U));      // 169 taps: filter2D's DFT
  CHECK_FALSE(plan("box:16", CV_8U, CV_8U));
  CHECK_FALSE(plan("gaussian:0,1", CV_8U, CV_8U));  // weights of no short dyadic grid
  CHECK_FALSE(plan("gaussian:0,2", CV_8U, CV_8U));
  CHECK_FALSE(plan("sharpen", CV_8U, CV_8U));   // rank 2
  CHECK_FALSE(plan("gauss5", CV_32F, CV_32F));  // float input: inexact products
}

TEST_CASE("cpu separable: filter2D's bits for every border, 1/3/4 channels and depth pair") {
  const std::uint32_t seed = test_seed("cpu separable borders");
  const std::pair<int, int> depth_pairs[] = {{CV_8U, CV_8U},  {CV_8U, CV_16U},  {CV_8U, CV_16S},
                                             {CV_8U, CV_32F}, {CV_16U, CV_16U}, {CV_16U, CV_32F}};
  std::vector<Filter> filters;
  for (const std::string& spec : separable_specs()) filters.push_back(load_filter(spec));
  filters.push_back(rectangular_binomial());
  int compared = 0;
  for (const Filter& f : filters) {
    for (const auto& [in_depth, out_depth] : depth_pairs) {
      const int in = in_depth;  // plain locals: clang-tidy 14 cannot see bindings in CAPTURE's lambda
      const int out = out_depth;
      for (int channels : {1, 3, 4}) {
        for (Border border : kAllBorders) {
          for (double border_value : {0.0, 77.0}) {
            if (border != Border::constant && border_value != 0.0) continue;
            CAPTURE(f.origin);
            CAPTURE(in);
            CAPTURE(out);
            CAPTURE(channels);
            CAPTURE(static_cast<int>(border));
            CAPTURE(border_value);
            const cv::Mat src = random_image(37 + compared % 5, 41 + compared % 7, in, channels, seed + compared);
            const ConvolveJob job = job_for(f, {in, out, border, border_value});
            cv::Mat expected;
            cv::Mat separable;
            if (!both_results(src, job, expected, separable)) continue;
            ++compared;
            CHECK(bit_equal(separable, expected));
            if (border == Border::wrap || border_value != 0.0) continue;
            // The same as a plain cv::filter2D call, as a user's cv2.filter2D would make it.
            cv::Mat direct;
            cv::filter2D(src, direct, out, job.kernel, cv::Point(job.anchor_x, job.anchor_y), job.delta,
                         opencv_border_code(border));
            CHECK(bit_equal(separable, direct));
          }
        }
      }
    }
  }
  MESSAGE("compared " << compared << " cases");
  CHECK(compared > 500);
}

TEST_CASE("cpu separable: filter2D's bits at anchors, deltas, --alpha keep and images smaller than the filter") {
  const std::uint32_t seed = test_seed("cpu separable options");
  int compared = 0;
  for (const std::string& spec : separable_specs()) {
    const Filter f = load_filter(spec);
    const int corners[][2] = {{-1, -1}, {0, 0}, {f.width - 1, f.height - 1}, {0, f.height - 1}};
    for (const auto& corner : corners) {
      for (double delta : {0.0, 128.0, 0.25, -3.0}) {
        for (const cv::Size size : {cv::Size(1, 1), cv::Size(2, 3), cv::Size(5, 1), cv::Size(19, 23)}) {
          for (bool keep_alpha : {false, true}) {
            CAPTURE(spec);
            CAPTURE(corner[0]);
            CAPTURE(corner[1]);
            CAPTURE(delta);
            CAPTURE(size.width);
            CAPTURE(size.height);
            CAPTURE(keep_alpha);
            const cv::Mat src = random_image(size.height, size.width, CV_8U, 4, seed + compared);
            const JobSpec s{CV_8U,     CV_8U,     compared % 2 == 0 ? Border::reflect : Border::reflect101,
                            0.0,       delta,     corner[0],
                            corner[1], keep_alpha};
            cv::Mat expected;
            cv::Mat separable;
            if (!both_results(src, job_for(f, s), expected, separable)) continue;
            ++compared;
            CHECK(bit_equal(separable, expected));
          }
        }
      }
    }
  }
  MESSAGE("compared " << compared << " cases");
  CHECK(compared > 400);
}

TEST_CASE("cpu separable: a photo-sized image and flat areas at every byte value round as filter2D") {
  // Many ties n + 1/2 for the dyadic filters (1 in 256 values for gauss5), and every flat value.
  cv::Mat flat(256, 64, CV_8UC3);
  for (int r = 0; r < flat.rows; ++r) flat.row(r).setTo(cv::Scalar::all(r));
  const cv::Mat noisy = random_image(480, 640, CV_8U, 3, test_seed("cpu separable photo"));
  for (const std::string& spec : separable_specs()) {
    for (const cv::Mat& src : {flat, noisy}) {
      for (double delta : {0.0, 0.5, 0.125}) {
        CAPTURE(spec);
        CAPTURE(delta);
        CAPTURE(src.rows);
        cv::Mat expected;
        cv::Mat separable;
        if (!both_results(src, job_for(load_filter(spec), {CV_8U, CV_8U, Border::replicate, 0.0, delta}), expected,
                          separable))
          continue;
        CHECK(bit_equal(separable, expected));
      }
    }
  }
}

TEST_CASE("cpu separable: `auto` without a GPU gives the opencv variant's bits") {
  std::string reason;
  if (cuda_device_available(&reason)) {
    MESSAGE("skipped: a GPU is present, so auto runs a GPU variant (the CPU path is tested above)");
    return;
  }
  const cv::Mat src = random_image(301, 257, CV_8U, 3, test_seed("cpu separable auto"));
  for (const char* spec : {"gauss5", "box:3", "box:11", "sobel-x", "gaussian:0,2"}) {
    CAPTURE(spec);
    ConvolveOptions automatic;
    ConvolveOptions opencv;
    opencv.variant = Variant::opencv;
    const Filter f = load_filter(spec);
    const ConvolveResult a = convolve(src, f, automatic);
    CHECK(a.variant_used == Variant::opencv);
    CHECK(bit_equal(a.image, convolve(src, f, opencv).image));
  }
}
