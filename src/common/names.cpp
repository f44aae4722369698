// SPDX-License-Identifier: Apache-2.0
// Enum names from the tables of names.hpp, and the "did you mean" search shared by the command
// line (options, enum values) and the filter parser (presets). Host code only, no CUDA, so the
// command-line fuzz target (tests/fuzz) can link it on its own.
#include "common/names.hpp"

#include <opencv2/core/hal/interface.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cuconv {

namespace {

template <class Enum>
std::string_view name_of(Enum value) {
  for (const auto& e : common::Table<Enum>::entries)
    if (e.value == value) return e.name;
  return "?";
}
template <class Enum>
std::optional<Enum> value_of(std::string_view name) {
  for (const auto& e : common::Table<Enum>::entries)
    if (common::equal_ignoring_case(e.name, name)) return e.value;
  return std::nullopt;
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

/// Levenshtein distance ignoring ASCII case (one row of the table at a time).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

}  // namespace

std::string_view to_string(Variant v) noexcept { return name_of(v); }
std::string_view to_string(Border b) noexcept { return name_of(b); }
std::string_view to_string(Depth d) noexcept { return name_of(d); }
std::optional<Variant> parse_variant(std::string_view s) noexcept { return value_of<Variant>(s); }
std::optional<Border> parse_border(std::string_view s) noexcept { return value_of<Border>(s); }
std::optional<Depth> parse_depth(std::string_view s) noexcept { return value_of<Depth>(s); }

namespace common {

bool equal_ignoring_case(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::vector<std::string> names_for_foreign_word(std::string_view word) {
  std::vector<std::string> out;
  for (const ForeignWord& foreign : kForeignWords)
    if (equal_ignoring_case(foreign.word, word)) out.emplace_back(foreign.ours);
  return out;
}

std::vector<std::string> nearest_names(std::string_view word, const std::vector<std::string>& candidates,
                                       std::size_t limit) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const std::string& meant : names_for_foreign_word(word))
    if (std::find(candidates.begin(), candidates.end(), meant) != candidates.end()) scored.emplace_back(0, meant);
  for (const std::string& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    const std::size_t allowed = std::max<std::size_t>(1, std::max(word.size(), candidate.size()) / 3);
    // A typo, or the start of a longer name ("gauss" for "gaussian").
    const bool prefix = word.size() >= 3 && word.size() < candidate.size() &&
                        equal_ignoring_case(word, std::string_view(candidate).substr(0, word.size()));
    if (distance <= allowed || prefix) scored.emplace_back(prefix ? 1 : distance, candidate);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (auto& [distance, name] : scored) {
    if (out.size() == limit) break;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

std::string quoted_alternatives(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

}  // namespace common

namespace common {
std::string_view to_string(Codec c) noexcept { return name_of(c); }
std::optional<Codec> parse_codec(std::string_view s) noexcept { return value_of<Codec>(s); }
}  // namespace common

std::string depth_name(int depth) {
  switch (depth) {
    case CV_8U:
      return "8U";
    case CV_8S:
      return "8S";
    case CV_16U:
      return "16U";
    case CV_16S:
      return "16S";
    case CV_32S:
      return "32S";
    case CV_32F:
      return "32F";
    case CV_64F:
      return "64F";
    case CV_16F:
      return "16F";
    default:
      return "depth#" + std::to_string(depth);
  }
}

}  // namespace cuconv
