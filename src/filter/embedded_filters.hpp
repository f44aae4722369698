// SPDX-License-Identifier: Apache-2.0
#pragma once
// The preset filter files of filters/, compiled into the binary (cmake/EmbedFilters.cmake).
#include <cstddef>
#include <string_view>

namespace cuconv::filter {

struct EmbeddedFilter {
  std::string_view name;       ///< file stem: the preset name
  std::string_view file_name;  ///< with extension: .mat is libvips format, .txt a plain matrix
  std::string_view text;
};

extern const EmbeddedFilter kEmbeddedFilters[];
extern const std::size_t kEmbeddedFilterCount;

}  // namespace cuconv::filter
