#pragma once
// The one parser for whole numbers given as text (command-line values, filter-file fields,
// environment variables). Parsers of numbers followed by something else (--gpu-memory's "512M",
// --anchor's " +3,4") read their digits themselves.
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace cuconv::detail {

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

}  // namespace cuconv::detail
