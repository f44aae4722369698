// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one parser for whole numbers given as text (command-line values, filter-file fields,
// environment variables, the digits of --gpu-memory's "512M" and of --anchor's "+3,4"). CLI11
// converts the plain integer options itself, bounded by CLI::Range.
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace cuconv::common {

/// `text` as a T when all of it is one decimal integer within T's range: no blanks, sign '+' or
/// suffix ('-' only for signed T); nullopt otherwise, the empty text included.
template <class T>
std::optional<T> parse_whole_number(std::string_view text) {
  T value{};
  const char* const last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, value);
  if (text.empty() || ec != std::errc{} || end != last) return std::nullopt;
  return value;
}

/// As parse_whole_number, but a '+' may come first ("+3", as people write anchors).
template <class T>
std::optional<T> parse_signed_whole_number(std::string_view text) {
  if (text.size() > 1 && text.front() == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  return parse_whole_number<T>(text);
}

}  // namespace cuconv::common
