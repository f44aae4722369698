#pragma once
/// @file image_io.hpp
/// Reading and writing images with OpenCV, with the checks that keep data from being lost.
#include <opencv2/core/mat.hpp>

#include <string>

namespace cuconv {

/// Reads an image unchanged (bit depth, alpha kept). Throws Error{bad_input} naming the file
/// when it is missing, a directory, undecodable, or of an unsupported depth/channel count.
[[nodiscard]] cv::Mat read_image(const std::string& path);

/// Throws Error{output} when `path`'s format cannot hold an image of this depth and channel count
/// (a float result to PNG, alpha to JPEG ...), so the check can run before any work.
void check_output_format(const std::string& path, int depth, int channels);

/// Throws Error{usage} when `output` names the same file as `input` (also through links).
void check_not_same_file(const std::string& input, const std::string& output);

/// Encodes and writes atomically: a temporary file in the target directory, fsync, rename.
/// After any failure no file is left at `path` (an existing file is left unchanged).
void write_image_atomic(const std::string& path, const cv::Mat& image);

/// "8U", "16U", "16S", "32F" ...
[[nodiscard]] std::string depth_name(int depth);

}  // namespace cuconv
