// SPDX-License-Identifier: Apache-2.0
/// @file presets.cpp
/// The presets compiled in from filters/ (cmake/EmbedFilters.cmake): their names and the one-line
/// summary --list-filters prints from each file's first comment.
#include "filter/embedded_filters.hpp"
#include "filter/filter_text.hpp"

#include <cuconv/filter.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv {

using filter::is_blank;

std::string preset_summary(std::string_view name) {
  for (std::size_t i = 0; i < filter::kEmbeddedFilterCount; ++i) {
    const filter::EmbeddedFilter& preset = filter::kEmbeddedFilters[i];
    if (preset.name != name) continue;
    // The first comment line, "# NAME: what it does.", without the name and the closing mark.
    const std::string prefix = "# " + std::string(name) + ": ";
    const std::size_t start = preset.text.find(prefix);
    if (start == std::string_view::npos) return {};
    std::string_view line = preset.text.substr(start + prefix.size());
    line = line.substr(0, line.find('\n'));
    while (!line.empty() && (line.back() == '.' || line.back() == ',' || line.back() == ':' || is_blank(line.back())))
      line.remove_suffix(1);
    return std::string(line);
  }
  return {};
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < filter::kEmbeddedFilterCount; ++i) {
    names.emplace_back(filter::kEmbeddedFilters[i].name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace cuconv
