// SPDX-License-Identifier: Apache-2.0
/// @file filter_parse.cpp
/// The filter formats of filter.hpp: inline strings, plain matrices and libvips .mat files
/// (parametric filters: parametric_filters.cpp; load_filter's presets and files: filter_load.cpp).
/// Every failure is an Error{bad_input} naming where the filter came from, the line (for files)
/// and the problem.
#include "cuconv/filter.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/names.hpp"
#include "common/whole_number.hpp"
#include "cuconv/error.hpp"
#include "filter/embedded_filters.hpp"
#include "filter/filter_text.hpp"

namespace cuconv {
namespace filter {

/// User text quoted in a message: shortened, and bytes outside printable ASCII replaced, so that
/// a binary file or a very long argument still gives a readable one-line, valid UTF-8 message.
std::string printable(std::string_view text) {
  constexpr std::size_t kMaxShown = 200;
  std::string out;
  for (const char c : text.substr(0, kMaxShown)) {
    const auto byte = static_cast<unsigned char>(c);
    out += (byte < 0x20 || byte >= 0x7f) ? '?' : c;
  }
  if (text.size() > kMaxShown) out += "...";
  return out;
}

std::string format_g9(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

/// True for "1e-400": from_chars reports underflow and overflow alike as out of range.
bool has_negative_exponent(std::string_view token) {
  const std::size_t e = token.find_first_of("eE");
  return e != std::string_view::npos && e + 1 < token.size() && token[e + 1] == '-';
}

/// One weight, header field or parameter. The whole token must be a finite number.
double parse_number(std::string_view token, const Source& source, int line) {
  std::string_view digits = token;
  // from_chars rejects a leading '+', which people do write in kernels ("+1").
  if (digits.size() > 1 && digits[0] == '+' && digits[1] != '+' && digits[1] != '-') {
    digits.remove_prefix(1);
  }
  double value = 0.0;
  const char* last = digits.data() + digits.size();
  const auto [end, ec] = std::from_chars(digits.data(), last, value);
  if (ec == std::errc::invalid_argument || end != last) {
    source.fail(line, "'" + printable(token) + "' is not a number");
  }
  if (ec == std::errc::result_out_of_range && has_negative_exponent(token)) {
    return digits[0] == '-' ? -0.0 : 0.0;  // below the smallest double: it is zero, as strtod says
  }
  if (ec == std::errc::result_out_of_range || !std::isfinite(value)) {
    source.fail(line, "non-finite value '" + printable(token) + "'");
  }
  return value;
}

/// Whether `value` is finite in single precision, the precision the GPU kernels (and the weights'
/// constant memory) hold: a double beyond FLT_MAX becomes infinity there.
bool finite_as_float(double value) {
  return std::isfinite(value) && std::abs(value) <= static_cast<double>(std::numeric_limits<float>::max());
}

/// Refuses `weights` (the final ones, after any division by a scale) unless every one is finite
/// in float; `line` as for Source::fail, `how` says where the values came from when that helps.
void check_float_weights(const std::vector<double>& weights, const Source& source, int line,
                         const std::string& how = {}) {
  for (const double w : weights) {
    if (finite_as_float(w)) continue;
    source.fail(line, "weight " + format_g9(w) + how + " is not a finite float (the kernels compute in float: " +
                          "every weight must be finite and within +-3.4e38)");
  }
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/// Blanks, and the quotation marks libvips also takes as separators (spreadsheets write "1","2").
bool is_separator_blank(char c) { return is_blank(c) || c == '"'; }

/// The numbers of one line. Blanks, quotation marks and commas separate them; a comma must follow a value, so
/// "1, 2,3," is fine but "1,,2" (a value left out) is an error rather than a silent shift.
std::vector<double> parse_values(std::string_view text, const Source& source, int line) {
  std::vector<double> values;
  bool value_since_comma = false;
  std::size_t i = 0;
  while (i < text.size()) {
    if (is_separator_blank(text[i])) {
      ++i;
    } else if (text[i] == ',') {
      if (!value_since_comma) source.fail(line, "missing value before ','");
      value_since_comma = false;
      ++i;
    } else {
      std::size_t end = i;
      while (end < text.size() && !is_separator_blank(text[end]) && text[end] != ',') ++end;
      values.push_back(parse_number(text.substr(i, end - i), source, line));
      value_since_comma = true;
      i = end;
    }
  }
  return values;
}

/// A line that holds something once its comment is removed.
struct ContentLine {
  int number;  ///< 1-based
  std::string_view text;
};

std::vector<ContentLine> content_lines(std::string_view text) {
  std::vector<ContentLine> lines;
  int number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    std::string_view line = text.substr(start, end - start);
    line = line.substr(0, line.find('#'));
    if (!std::all_of(line.begin(), line.end(), is_blank)) lines.push_back({number, line});
    start = end + 1;
  }
  return lines;
}

std::string size_text(int width, int height) { return std::to_string(width) + "x" + std::to_string(height); }

std::string too_large_problem(const std::string& size) {
  return "filter is " + size + ", the maximum side is " + std::to_string(kMaxFilterSide);
}

std::string row_problem(std::size_t count, std::size_t expected) {
  return "row has " + std::to_string(count) + " values, expected " + std::to_string(expected);
}

Filter make_filter(int width, int height, std::vector<double> weights, std::string origin) {
  Filter filter;
  filter.width = width;
  filter.height = height;
  filter.weights = std::move(weights);
  filter.origin = std::move(origin);
  return filter;
}

// ---- libvips .mat header -----------------------------------------------------------------------

struct MatHeader {
  int width = 0;
  int height = 0;
  double scale = 1.0;
  double offset = 0.0;
};

/// Width or height of a .mat header: a positive integer (written as a number, so "3.0" passes).
double mat_side(double value, const Source& source, int line) {
  if (value < 1 || value != std::floor(value)) {
    source.fail(line, "bad header: width and height must be positive integers, got '" + format_g9(value) + "'");
  }
  return value;
}

MatHeader parse_mat_header(const ContentLine& line, const Source& source) {
  const std::vector<double> fields = parse_values(line.text, source, line.number);
  if (fields.size() < 2 || fields.size() > 4) {
    source.fail(line.number, "bad header: expected 'WIDTH HEIGHT [SCALE [OFFSET]]', got " +
                                 std::to_string(fields.size()) + " values");
  }
  const double width = mat_side(fields[0], source, line.number);
  const double height = mat_side(fields[1], source, line.number);
  if (width > kMaxFilterSide || height > kMaxFilterSide) {
    source.fail(line.number, too_large_problem(format_g9(width) + "x" + format_g9(height)));
  }
  MatHeader header{static_cast<int>(width), static_cast<int>(height)};
  if (fields.size() > 2) header.scale = fields[2];
  if (fields.size() > 3) header.offset = fields[3];
  if (header.scale == 0.0) source.fail(line.number, "scale must not be 0");
  if (!finite_as_float(header.offset))
    source.fail(line.number,
                "offset " + format_g9(header.offset) + " is not a finite float (the kernels add it in float)");
  return header;
}

// ---- inline WxH[+X+Y]:values ------------------------------------------------------------------

/// The fields of an inline filter's header, as text; empty when absent.
struct InlineHeader {
  std::string_view width, height, anchor_x, anchor_y;
  std::string_view values;  ///< everything after the ':'
};

/// Matches ^\d+(x\d+)?([+-]\d+[+-]\d+)?: by hand; nullopt when `text` is not an inline filter.
std::optional<InlineHeader> split_inline(std::string_view text) {
  std::size_t pos = 0;
  auto take_digits = [&]() {
    const std::size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    return text.substr(start, pos - start);
  };
  auto take_signed = [&]() -> std::string_view {
    if (pos >= text.size() || (text[pos] != '+' && text[pos] != '-')) return {};
    const std::size_t start = pos++;
    return take_digits().empty() ? std::string_view{} : text.substr(start, pos - start);
  };
  InlineHeader header;
  header.width = take_digits();
  if (header.width.empty()) return std::nullopt;
  header.height = header.width;
  if (pos < text.size() && text[pos] == 'x') {
    ++pos;
    header.height = take_digits();
    if (header.height.empty()) return std::nullopt;
  }
  if (pos < text.size() && text[pos] != ':') {
    header.anchor_x = take_signed();
    header.anchor_y = take_signed();
    if (header.anchor_x.empty() || header.anchor_y.empty()) return std::nullopt;
  }
  if (pos >= text.size() || text[pos] != ':') return std::nullopt;
  header.values = text.substr(pos + 1);
  return header;
}

/// Applies +X+Y, which must name a cell of the filter (a negative anchor would mean "centre").
bool is_inline_filter(std::string_view text) { return split_inline(text).has_value(); }

void set_inline_anchor(Filter& filter, const InlineHeader& header, const Source& source) {
  const std::optional<int> x = common::parse_signed_whole_number<int>(header.anchor_x);
  const std::optional<int> y = common::parse_signed_whole_number<int>(header.anchor_y);
  if (!x || !y || *x < 0 || *x >= filter.width || *y < 0 || *y >= filter.height) {
    source.fail(0, "anchor " + std::string(header.anchor_x) + std::string(header.anchor_y) + " is outside the " +
                       size_text(filter.width, filter.height) + " filter");
  }
  filter.anchor_x = *x;
  filter.anchor_y = *y;
}

}  // namespace filter

using namespace filter;

// ---- public API -------------------------------------------------------------------------------

Filter parse_plain_matrix(std::string_view text, std::string_view origin) {
  const Source source{std::string(origin)};
  const std::vector<ContentLine> lines = content_lines(text);
  if (lines.empty()) source.fail(0, "no filter values");

  std::vector<double> weights;
  std::size_t width = 0;
  for (const ContentLine& line : lines) {
    const std::vector<double> row = parse_values(line.text, source, line.number);
    // A line of separators alone (quotes, commas) holds no row: say so rather than make a 0-wide filter.
    if (row.empty()) source.fail(line.number, "no values on this line");
    if (width == 0) width = row.size();
    if (row.size() != width) source.fail(line.number, row_problem(row.size(), width));
    check_float_weights(row, source, line.number);
    weights.insert(weights.end(), row.begin(), row.end());
  }
  const std::size_t height = lines.size();
  if (width > kMaxFilterSide || height > kMaxFilterSide) {
    // Blame the first row when it is too wide, else the first row past the limit.
    const int line = width > kMaxFilterSide ? lines.front().number : lines[kMaxFilterSide].number;
    source.fail(line, too_large_problem(std::to_string(width) + "x" + std::to_string(height)));
  }
  return make_filter(static_cast<int>(width), static_cast<int>(height), std::move(weights), std::string(origin));
}

Filter parse_vips_mat(std::string_view text, std::string_view origin) {
  const Source source{std::string(origin)};
  const std::vector<ContentLine> lines = content_lines(text);
  if (lines.empty()) source.fail(0, "no filter values");
  const MatHeader header = parse_mat_header(lines.front(), source);

  const auto rows = static_cast<std::size_t>(header.height);
  if (lines.size() - 1 > rows) {
    source.fail(lines[rows + 1].number, "extra row: the header says " + std::to_string(rows) + " rows");
  }
  std::vector<double> weights;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<double> row = parse_values(lines[i].text, source, lines[i].number);
    if (row.size() != static_cast<std::size_t>(header.width)) {
      source.fail(lines[i].number, row_problem(row.size(), static_cast<std::size_t>(header.width)));
    }
    std::vector<double> divided;
    for (const double value : row) divided.push_back(value / header.scale);
    check_float_weights(divided, source, lines[i].number,
                        " (the value divided by the scale " + format_g9(header.scale) + ")");
    weights.insert(weights.end(), divided.begin(), divided.end());
  }
  if (lines.size() - 1 < rows) {
    source.fail(lines.back().number,
                "the header says " + std::to_string(rows) + " rows, found " + std::to_string(lines.size() - 1));
  }
  Filter filter = make_filter(header.width, header.height, std::move(weights), std::string(origin));
  filter.offset = header.offset;
  return filter;
}

Filter parse_inline_filter(std::string_view text) {
  const Source source{"inline filter '" + printable(text) + "'"};
  const std::optional<InlineHeader> header = split_inline(text);
  if (!header) source.fail(0, "expected WxH[+X+Y]:v,v,... or N[+X+Y]:v,v,...");

  const std::optional<int> width = common::parse_whole_number<int>(header->width);
  const std::optional<int> height = common::parse_whole_number<int>(header->height);
  if (!width || !height || *width > kMaxFilterSide || *height > kMaxFilterSide) {
    source.fail(0, too_large_problem(std::string(header->width) + "x" + std::string(header->height)));
  }
  if (*width < 1 || *height < 1) source.fail(0, "width and height must be at least 1");

  std::vector<double> weights = parse_values(header->values, source, 0);
  const auto expected = static_cast<std::size_t>(*width) * static_cast<std::size_t>(*height);
  if (weights.empty()) source.fail(0, "no filter values");
  if (weights.size() != expected) {
    source.fail(0, "expected " + std::to_string(expected) + " values (" + size_text(*width, *height) + "), got " +
                       std::to_string(weights.size()));
  }
  check_float_weights(weights, source, 0);
  Filter filter = make_filter(*width, *height, std::move(weights), "inline filter");
  if (!header->anchor_x.empty()) set_inline_anchor(filter, *header, source);
  return filter;
}

}  // namespace cuconv
