// SPDX-License-Identifier: Apache-2.0
#pragma once
// OpenCV's image codecs (imgcodecs) behind four calls. Linked directly, imgcodecs brings its
// dependencies (GDAL, GDCM, OpenEXR ...), whose loading dominates a short process's start-up, even
// when it only reads and writes JPEG (which libjpeg does, codec/jpeg_decode.hpp and
// codec/jpeg_encode.hpp); the figures are in bench/results/benchmarks.md. So there are two
// definitions, chosen when a program is linked: opencv_codecs.cpp calls imgcodecs (the library
// for other programs, the tests), and opencv_codecs_lazy.cpp, linked by the cuconv-engine binary,
// loads the module libcuconv-opencv-codecs.so (opencv_codecs.cpp in a shared object of its own,
// beside the engine) the first time one of the calls is made. cv::Exception passes through both.
#include <opencv2/core/mat.hpp>

#include <span>
#include <string>
#include <vector>

namespace cuconv::codec {

/// cv::imread(path, flags).
[[nodiscard]] cv::Mat opencv_imread(const std::string& path, int flags);
/// cv::imdecode of `bytes` with `flags`.
[[nodiscard]] cv::Mat opencv_imdecode(std::span<const unsigned char> bytes, int flags);
/// cv::imencode(ext, image, encoded, params).
[[nodiscard]] bool opencv_imencode(const std::string& ext, const cv::Mat& image, std::vector<unsigned char>& encoded,
                                   const std::vector<int>& params);

/// cv::haveImageWriter(path).
[[nodiscard]] bool opencv_have_writer(const std::string& path);

/// The calls as the module exports them (kOpenCvCodecsSymbol returns a pointer to one).
struct OpenCvCodecs {
  cv::Mat (*imread)(const std::string&, int);
  cv::Mat (*imdecode)(std::span<const unsigned char>, int);
  bool (*imencode)(const std::string&, const cv::Mat&, std::vector<unsigned char>&, const std::vector<int>&);
  bool (*have_writer)(const std::string&);
};
inline constexpr const char* kOpenCvCodecsModule = "libcuconv-opencv-codecs.so";
inline constexpr const char* kOpenCvCodecsSymbol = "cuconv_opencv_codecs_v1";

}  // namespace cuconv::codec
