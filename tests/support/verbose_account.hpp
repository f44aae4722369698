// SPDX-License-Identifier: Apache-2.0
#pragma once
// `-v`'s account of a single image's time taken apart, for the tests that check it (CPU: the
// OpenCV codec path, served and not; GPU: a process's own GPU codec pipeline).
#include "text_lines.hpp"

#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace cuconv::test {

/// The account's last line, "time since ...: TOTAL ms = NAME X + NAME Y ...; unaccounted U ms".
struct VerboseAccount {
  double total_ms = 0;
  std::vector<std::pair<std::string, double>> parts;
  double unaccounted_ms = 0;
};

inline std::optional<VerboseAccount> verbose_account(const std::string& messages) {
  static const std::regex line(R"(time since [a-z ]+: ([0-9.]+) ms = (.*); unaccounted (-?[0-9.]+) ms)");
  static const std::regex part(R"(([A-Za-z/ -]+) (-?[0-9.]+))");
  for (const std::string& text : lines_of(messages)) {
    std::smatch m;
    if (!std::regex_search(text, m, line)) continue;
    VerboseAccount account;
    account.total_ms = std::stod(m[1].str());
    account.unaccounted_ms = std::stod(m[3].str());
    const std::string parts = m[2].str();
    for (auto it = std::sregex_iterator(parts.begin(), parts.end(), part); it != std::sregex_iterator(); ++it) {
      std::string name = (*it)[1].str();
      name.erase(0, name.find_first_not_of(" +"));
      account.parts.emplace_back(name, std::stod((*it)[2].str()));
    }
    return account;
  }
  return std::nullopt;
}

}  // namespace cuconv::test
