// SPDX-License-Identifier: Apache-2.0
/// @file filter_load.cpp
/// load_filter: a filter specification resolved as a preset, a parametric filter, an inline
/// filter or a filter file (read through FilterLoadOptions::files), in that order; the formats
/// themselves are parsed in filter_parse.cpp. Failures are Error{bad_input}.
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

namespace {

using namespace filter;

/// A filter file is a few KiB at most; the cap stops an image passed by mistake from being
/// read whole just to report that its first bytes are not a number.
constexpr std::size_t kMaxFilterFileBytes = 16u << 20;

// ---- files and presets ------------------------------------------------------------------------

bool has_mat_extension(std::string_view name) {
  std::string extension = std::filesystem::path(name).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".mat";
}

Filter parse_by_extension(std::string_view file_name, std::string_view text, std::string_view origin) {
  return has_mat_extension(file_name) ? parse_vips_mat(text, origin) : parse_plain_matrix(text, origin);
}

[[noreturn]] void fail_read(const std::string& path, int error) {
  throw_bad_input("cannot read filter file '" + path + "': " + std::strerror(error));
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

std::string read_filter_file(const std::string& path) {
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) fail_read(path, errno);
  std::string text;
  char buffer[1 << 16];
  std::size_t count = 0;
  while ((count = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) {
    text.append(buffer, count);
    if (text.size() > kMaxFilterFileBytes) {
      throw_bad_input("filter file '" + path + "' is over 16 MiB: too large for a filter");
    }
  }
  if (std::ferror(file.get())) fail_read(path, errno);
  return text;
}

std::optional<Filter> load_preset(std::string_view name) {
  for (std::size_t i = 0; i < filter::kEmbeddedFilterCount; ++i) {
    const filter::EmbeddedFilter& preset = filter::kEmbeddedFilters[i];
    if (common::equal_ignoring_case(preset.name, name)) {  // GAUSS5 and Sobel-X too
      return parse_by_extension(preset.file_name, preset.text, "preset " + std::string(preset.name));
    }
  }
  return std::nullopt;
}

/// What is at `path` in this process's file system (FilterLoadOptions::files' default).
FilterLoadOptions::FileAccess::Kind local_kind(const std::string& path) {
  using Kind = FilterLoadOptions::FileAccess::Kind;
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status)) return Kind::none;
  if (std::filesystem::is_directory(status)) return Kind::directory;
  return std::filesystem::is_regular_file(status) ? Kind::regular : Kind::other;
}

/// nullopt when nothing exists at `spec`, so load_filter can report "not a filter" instead.
std::optional<Filter> load_file(std::string_view spec, const FilterLoadOptions::FileAccess& files) {
  using Kind = FilterLoadOptions::FileAccess::Kind;
  const std::string path(spec);
  const Kind kind = files.kind ? files.kind(path) : local_kind(path);
  if (kind == Kind::none) return std::nullopt;
  if (kind == Kind::directory) {
    throw_bad_input("filter file '" + path + "' is a directory");
  }
  // Only regular files: a FIFO or device could block forever or never end.
  if (kind != Kind::regular) {
    throw_bad_input("filter file '" + path + "' is not a regular file");
  }
  const std::string local = files.open ? files.open(path) : path;
  std::string text;
  try {
    text = read_filter_file(local);
  } catch (const Error& e) {
    std::string message = e.what();
    for (std::size_t at = message.find(local); local != path && at != std::string::npos; at = message.find(local, at))
      message.replace(at, local.size(), path);
    throw Error(e.kind(), message);
  }
  return parse_by_extension(path, text, path);  // the name given: its extension picks the format
}

/// Whether `spec` reads as a file path rather than a name: a folder part or an extension.
bool looks_like_path(std::string_view spec) {
  return spec.find('/') != std::string_view::npos || std::filesystem::path(spec).has_extension();
}

/// A MATLAB-style matrix ("[1 2; 3 4]": rows split by ';', values by blanks or commas) in
/// cuconv's inline spelling ("2x2:1,2,3,4"); "" when `spec` is not one.
std::string matlab_spelling(std::string_view spec) {
  while (!spec.empty() && is_blank(spec.front())) spec.remove_prefix(1);
  while (!spec.empty() && is_blank(spec.back())) spec.remove_suffix(1);
  if (spec.size() < 3 || spec.front() != '[' || spec.back() != ']') return {};
  spec = spec.substr(1, spec.size() - 2);
  std::vector<std::string> values;
  std::size_t width = 0;
  std::size_t height = 0;
  while (true) {
    const std::size_t end = std::min(spec.find(';'), spec.size());
    std::string_view row = spec.substr(0, end);
    std::size_t count = 0;
    while (true) {
      const std::size_t start = row.find_first_not_of(" \t,");
      if (start == std::string_view::npos) break;
      row.remove_prefix(start);
      const std::string_view value = row.substr(0, std::min(row.find_first_of(" \t,"), row.size()));
      double parsed = 0.0;
      const auto [next, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (error != std::errc() || next != value.data() + value.size()) return {};
      values.emplace_back(value);
      ++count;
      row.remove_prefix(value.size());
    }
    if (count == 0 || (height > 0 && count != width)) return {};
    width = count;
    ++height;
    if (end == spec.size()) break;
    spec.remove_prefix(end + 1);
  }
  std::string inline_filter = std::to_string(width) + "x" + std::to_string(height) + ":";
  for (std::size_t k = 0; k < values.size(); ++k) inline_filter += (k > 0 ? "," : "") + values[k];
  return inline_filter;
}

/// load_filter's message when nothing matched: a MATLAB-style matrix's inline spelling, a missing
/// file, or a name with the nearest preset and parametric names.
std::string not_a_filter_message(std::string_view spec) {
  if (const std::string inline_filter = matlab_spelling(spec); !inline_filter.empty())
    return "filter '" + printable(spec) + "' is a MATLAB-style matrix; cuconv spells it " + inline_filter +
           " (an inline WxH:v,v,... filter, rows top to bottom; it correlates as imfilter, conv2 would flip it)";
  if (looks_like_path(spec) && spec.find(':') == std::string_view::npos) {
    return "filter file '" + printable(spec) + "': no such file";
  }
  const std::size_t colon = spec.find(':');
  std::vector<std::string> candidates;
  std::string_view word = spec;
  if (colon != std::string_view::npos) {  // "gausian:3,1": suggest among the parametric names
    word = spec.substr(0, colon);
    for (const ParametricFilter& kind : parametric_filters()) candidates.emplace_back(kind.name);
  } else {
    candidates = preset_names();
  }
  std::vector<std::string> nearest = common::nearest_names(word, candidates);
  if (colon != std::string_view::npos) {
    for (std::string& name : nearest) name += ':';
  } else {
    // Other tools' words for a filter ("blur"): the presets and parametric filters they mean first.
    std::vector<std::string> meant;
    for (const std::string& name : common::names_for_foreign_word(word)) {
      const std::string_view kind = std::string_view(name).substr(0, name.find(':'));
      const auto kinds = parametric_filters();
      const bool parametric =
          std::any_of(kinds.begin(), kinds.end(), [&](const ParametricFilter& k) { return k.name == kind; });
      if (parametric || std::find(candidates.begin(), candidates.end(), name) != candidates.end())
        meant.push_back(name);
    }
    if (!meant.empty()) nearest = meant;
  }
  std::string message = "filter '" + printable(spec) +
                        "' is not a preset, a parametric filter (box:N, gaussian:R,SIGMA, ...), "
                        "an inline WxH:... filter or a file";
  if (!nearest.empty()) message += "; did you mean " + common::quoted_alternatives(nearest) + "?";
  return message + " (see `preset_names`)";
}

Filter load_unchanged(std::string_view spec, const FilterLoadOptions::FileAccess& files) {
  if (std::optional<Filter> preset = load_preset(spec)) return std::move(*preset);
  if (std::optional<Filter> parametric = load_parametric(spec)) return std::move(*parametric);
  if (is_inline_filter(spec)) return parse_inline_filter(spec);
  if (std::optional<Filter> file = load_file(spec, files)) return std::move(*file);
  throw_bad_input(not_a_filter_message(spec));
}

}  // namespace

Filter load_filter(std::string_view spec, const FilterLoadOptions& options) {
  Filter filter = load_unchanged(spec, options.files);
  if (options.normalize) normalize_weights(filter);
  return filter;
}

}  // namespace cuconv
