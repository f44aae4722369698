// SPDX-License-Identifier: Apache-2.0
// Consumer of an installed cuconv: filters a synthetic image with a preset through the public API
// (headers from the install prefix, library through cuconv::cuconv) and checks the result against
// cv::filter2D. The `opencv` variant runs without a GPU; the GPU variant is tried when one is
// usable. Exit 0 on success, 1 with a message otherwise.
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/version.hpp>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <string>

namespace {

bool same_as_filter2d(const cv::Mat& src, const cv::Mat& result, const cuconv::Filter& filter, const char* what) {
  cv::Mat kernel(filter.height, filter.width, CV_64F);
  for (int r = 0; r < filter.height; ++r)
    for (int c = 0; c < filter.width; ++c) kernel.at<double>(r, c) = filter.at(r, c);
  cv::Mat expected;
  cv::filter2D(src, expected, -1, kernel, cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
  const double diff = cv::norm(result, expected, cv::NORM_INF);
  std::printf("cuconv_consumer: %s: max difference to cv::filter2D %g\n", what, diff);
  return diff <= 1.0;
}

}  // namespace

int main() {
  try {
    std::printf("cuconv_consumer: cuconv %s\n", CUCONV_VERSION);
    const cuconv::Filter filter = cuconv::load_filter("gauss5");
    cv::Mat src(48, 64, CV_8UC3);
    cv::randu(src, 0, 256);

    cuconv::ConvolveOptions options;
    options.variant = cuconv::Variant::opencv;
    bool ok = same_as_filter2d(src, cuconv::convolve(src, filter, options).image, filter, "opencv");

    std::string reason;
    if (cuconv::cuda_device_available(&reason)) {
      options.variant = cuconv::Variant::automatic;
      const auto gpu = cuconv::convolve(src, filter, options);
      ok = same_as_filter2d(src, gpu.image, filter, std::string(cuconv::to_string(gpu.variant_used)).c_str()) && ok;
    } else {
      std::printf("cuconv_consumer: GPU path not tried: %s\n", reason.c_str());
    }
    return ok ? 0 : 1;
  } catch (const cuconv::Error& e) {
    std::fprintf(stderr, "cuconv_consumer: %s\n", e.what());
    return 1;
  }
}
