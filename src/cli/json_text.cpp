// SPDX-License-Identifier: Apache-2.0
// Bytes that are not UTF-8 escaped as \xHH before nlohmann::json dumps them.
#include "cli/json_text.hpp"

#include <cstdint>

namespace cuconv::cli {

namespace {

/// Length of the well-formed UTF-8 sequence at the start of `text` (Unicode table 3-7: no
/// overlong forms, no surrogates, nothing above U+10FFFF), or 0 when it starts with none.
std::size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
  const auto continuation = [&](std::size_t i, std::uint8_t low = 0x80, std::uint8_t high = 0xBF) {
    return i < text.size() && byte(i) >= low && byte(i) <= high;
  };
  const std::uint8_t lead = byte(0);
  if (lead <= 0x7F) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const std::uint8_t low = lead == 0xE0 ? 0xA0 : 0x80;   // E0: no overlong forms
    const std::uint8_t high = lead == 0xED ? 0x9F : 0xBF;  // ED: no surrogates
    return continuation(1, low, high) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const std::uint8_t low = lead == 0xF0 ? 0x90 : 0x80;   // F0: no overlong forms
    const std::uint8_t high = lead == 0xF4 ? 0x8F : 0xBF;  // F4: nothing above U+10FFFF
    return continuation(1, low, high) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

nlohmann::json made_safe(const nlohmann::json& value) {
  if (value.is_string()) return json_safe(value.get_ref<const std::string&>());
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::json& element : value) out.push_back(made_safe(element));
    return out;
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = value.begin(); it != value.end(); ++it) out[json_safe(it.key())] = made_safe(it.value());
    return out;
  }
  return value;
}

}  // namespace

std::string json_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const std::size_t length = utf8_sequence_length(text);
    if (length > 0) {
      out.append(text.substr(0, length));
      text.remove_prefix(length);
      continue;
    }
    constexpr char kHex[] = "0123456789ABCDEF";
    const auto byte = static_cast<std::uint8_t>(text.front());
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
    text.remove_prefix(1);
  }
  return out;
}

std::string json_dump(const nlohmann::json& value, int indent) { return made_safe(value).dump(indent); }

}  // namespace cuconv::cli
