// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file filter.hpp
/// Convolution filters: the parsed form, the text formats and the embedded presets.
///
/// Formats (docs/filters.md):
///  - preset name (`gauss5`), embedded from filters/ at build time;
///  - parametric `box:N`, `gaussian:R,SIGMA`, `unsharp:`, `log:`, `dog:`, `disk:`, `motion:`
///    (parametric_filters(); weights defined in docs/filters.md);
///  - inline ImageMagick-style `WxH[+X+Y]:v,v,...` (or `N:v,...` for N x N);
///  - a file: libvips `.mat` (extension .mat: header `W H [scale [offset]]`, then H rows of W
///    numbers, result = sum/scale + offset) or a plain matrix (any other name: rows of numbers
///    separated by spaces, commas or tabs; `#` starts a comment).
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv {

/// Largest filter side accepted by the parsers (the filter fits in 64 KiB of constant memory).
inline constexpr int kMaxFilterSide = 127;

/// A parsed filter. Weights are stored as given (double); the GPU and OpenCV both use them as
/// float, as cv::filter2D does for 8U/16U/32F images.
struct Filter {
  int width = 0;                ///< columns (kw)
  int height = 0;               ///< rows (kh)
  std::vector<double> weights;  ///< row-major, height rows of width values, already divided by scale
  int anchor_x = -1;            ///< -1: centre, width / 2 (as cv::filter2D)
  int anchor_y = -1;            ///< -1: centre, height / 2
  double offset = 0.0;          ///< added to every output (libvips offset); --delta adds to it
  std::string origin;           ///< where it came from, for messages: preset name, path or "inline"

  [[nodiscard]] double at(int row, int col) const {
    return weights[static_cast<std::size_t>(row) * static_cast<std::size_t>(width) + static_cast<std::size_t>(col)];
  }
  [[nodiscard]] int resolved_anchor_x() const { return anchor_x < 0 ? width / 2 : anchor_x; }
  [[nodiscard]] int resolved_anchor_y() const { return anchor_y < 0 ? height / 2 : anchor_y; }
};

/// How load_filter treats the weights it has read.
struct FilterLoadOptions {
  /// --normalize: divide every weight by the weights' sum where that sum is not 0, as ImageMagick's
  /// -convolve does, so `5x1:1,1,1,1,1` is a 5-tap mean; a filter summing to 0 (edges) is kept.
  bool normalize = false;
  /// How a filter file is reached; unset functions: this process's file system. cuconv's commands
  /// ask their engine::Files, so a served command's filter file is its client's.
  struct FileAccess {
    enum class Kind { none, regular, directory, other };
    /// What is at `path`, links followed.
    std::function<Kind(const std::string& path)> kind;
    /// A path this process reads `path`'s bytes at (the path itself, or the /proc/self/fd/N of a
    /// descriptor the caller keeps open until load_filter returns); called for regular files only.
    std::function<std::string(const std::string& path)> open;
  } files;
};

/// Resolves what the user gave to --filter: a preset, a parametric filter (`gaussian:R,SIGMA` ...),
/// an inline string, or a file path (in that order); preset and parametric names in any letter
/// case. Throws Error{bad_input} with a message naming the source, the line (for files) and the
/// problem; for an unknown name, the nearest names; for a path that does not exist, "no such file".
[[nodiscard]] Filter load_filter(std::string_view spec, const FilterLoadOptions& options = {});

/// The sum of the weights (in double; a flat area is multiplied by it).
[[nodiscard]] double weight_sum(const Filter& filter);

/// Divides the weights by their sum; false (weights unchanged) when the sum is 0 up to rounding.
bool normalize_weights(Filter& filter);

/// Whether the weights sum to neither 0 nor 1 (up to rounding): such a filter scales every flat
/// area by the sum (a 5-tap box written as ones makes it 5 times brighter), which is seldom meant
/// unless the filter says so; --normalize is the cure the warning names.
[[nodiscard]] bool sums_to_neither_zero_nor_one(const Filter& filter);

/// Parses a plain matrix text; `origin` is used in messages ("file.txt:3: ...").
[[nodiscard]] Filter parse_plain_matrix(std::string_view text, std::string_view origin);
/// Parses a libvips .mat text.
[[nodiscard]] Filter parse_vips_mat(std::string_view text, std::string_view origin);
/// Parses an inline `WxH[+X+Y]:v,v,...` string.
[[nodiscard]] Filter parse_inline_filter(std::string_view text);

/// A parametric filter kind (`gaussian:R,SIGMA` ...): its name, its syntax and what it does.
/// docs/filters.md defines each one's weights.
struct ParametricFilter {
  std::string_view name;     ///< before the ':' (matched ignoring case)
  std::string_view syntax;   ///< "gaussian:R,SIGMA"
  std::string_view summary;  ///< one line for --list-filters
};
/// The parametric kinds load_filter accepts, in --list-filters order.
[[nodiscard]] std::span<const ParametricFilter> parametric_filters();
/// What a preset does, from the first comment line of its file ("5x5 Gaussian, ..."); empty for
/// an unknown name.
[[nodiscard]] std::string preset_summary(std::string_view name);

/// Names of the embedded presets, sorted.
[[nodiscard]] std::vector<std::string> preset_names();
/// Human-readable dump (size, anchor, offset, the matrix) for --show-filter.
[[nodiscard]] std::string describe_filter(const Filter& filter);

}  // namespace cuconv
