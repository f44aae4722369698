// SPDX-License-Identifier: Apache-2.0
// parse_byte_size (see byte_size.hpp): digits, then an optional binary unit.
#include "cli/byte_size.hpp"

#include "common/whole_number.hpp"

#include <cctype>
#include <limits>
#include <string>

namespace cuconv::cli {

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  const std::size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
  const std::optional<std::uint64_t> value = common::parse_whole_number<std::uint64_t>(text.substr(0, digits));
  if (!value || *value == 0) return std::nullopt;
  // The unit: K, M, G or T, alone or followed by B or iB; B alone for bytes. All binary.
  std::string unit(text.substr(digits));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB") && unit.size() == 3)
    unit.resize(1);
  else if (unit.ends_with("B"))
    unit.pop_back();
  constexpr std::string_view kUnits = "KMGT";
  int shift = 0;
  if (unit.size() == 1 && kUnits.find(unit[0]) != std::string_view::npos)
    shift = 10 * (static_cast<int>(kUnits.find(unit[0])) + 1);
  else if (!unit.empty())
    return std::nullopt;
  if (*value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return *value << shift;
}

}  // namespace cuconv::cli
