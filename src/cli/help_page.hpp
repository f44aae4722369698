// SPDX-License-Identifier: Apache-2.0
#pragma once
// How cuconv's help pages are laid out (`cuconv --help`, `cuconv serve --help`): rows wrapped at
// one width, option groups in a given order, placeholders instead of CLI11's type tags.
#include "cli/option_names.hpp"
#include "common/names.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv::cli {

/// The widest line of cuconv's help pages, in columns.
inline constexpr std::size_t kHelpWidth = 100;

/// One entry of a help page: `head`, then `text` from column `indent` (on the next line when the
/// head is too long), wrapped at kHelpWidth with every further line indented as much; ends in '\n'.
[[nodiscard]] std::string help_row(std::string_view head, std::string_view text, std::size_t indent);

/// A CLI11 formatter for cuconv's help pages: `usage` (the forms of the command and examples)
/// after the description, then the option groups in the order of `groups`, each
/// option with its placeholder (Option::option_text) and its text wrapped by help_row.
[[nodiscard]] std::shared_ptr<CLI::Formatter> help_page(std::string usage, std::vector<std::string> groups);

/// "TITLE:\n  name   help\n..." for one table, for the --help footer.
template <class Enum>
std::string table_help(const std::string& title) {
  std::string text = title + ":\n";
  for (const auto& e : common::Table<Enum>::entries)
    text += help_row("  " + std::string(e.name), in_cli_terms(e.help), 16);
  return text;
}

}  // namespace cuconv::cli
