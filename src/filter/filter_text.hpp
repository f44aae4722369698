// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the filter parsers share (filter_parse.cpp: inline filters and matrices; filter_load.cpp:
// files and presets; parametric_filters.cpp): where a text came from, numbers as the formats write them, and the
// float check of the weights. Private to src/filter/.
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv::filter {

[[noreturn]] inline void throw_bad_input(const std::string& message) { throw Error(ErrorKind::bad_input, message); }

/// Where the text being parsed came from: builds "ORIGIN:LINE: PROBLEM" messages.
struct Source {
  std::string prefix;  ///< a path, "preset NAME" or "inline filter 'TEXT'"

  /// `line` is 1-based; 0 for problems of the whole filter rather than of one line.
  [[noreturn]] void fail(int line, const std::string& problem) const {
    if (line > 0) throw_bad_input(prefix + ":" + std::to_string(line) + ": " + problem);
    throw_bad_input(prefix + ": " + problem);
  }
};

/// User text quoted in a message: shortened, and bytes outside printable ASCII replaced.
[[nodiscard]] std::string printable(std::string_view text);
/// `value` with 9 significant digits.
[[nodiscard]] std::string format_g9(double value);
/// One number of a filter text; fails naming `source` and `line` when it is not one.
[[nodiscard]] double parse_number(std::string_view token, const Source& source, int line);
/// Whether `value` stays finite in float, the kernels' precision.
[[nodiscard]] bool finite_as_float(double value);
/// Space, tab, CR or LF.
[[nodiscard]] bool is_blank(char c);
/// "W x H" of a filter size.
[[nodiscard]] std::string size_text(int width, int height);
/// A filter of `width` x `height` weights (row-major) from `origin`.
[[nodiscard]] Filter make_filter(int width, int height, std::vector<double> weights, std::string origin);
/// Whether `text` has the shape of an inline filter (WxH[+X+Y]:v,... or N[+X+Y]:v,...), its
/// values unchecked (filter_parse.cpp).
[[nodiscard]] bool is_inline_filter(std::string_view text);

/// "NAME:PARAMS" as a parametric filter (NAME in any letter case); nullopt for another NAME
/// (parametric_filters.cpp).
[[nodiscard]] std::optional<Filter> load_parametric(std::string_view spec);

}  // namespace cuconv::filter
