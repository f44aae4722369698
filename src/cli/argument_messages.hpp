// SPDX-License-Identifier: Apache-2.0
#pragma once
// What cuconv says about arguments it does not take: a value outside a list (with the nearest
// names), ImageMagick's single-dash long options, and other tools' options (ImageMagick, libvips,
// OpenCV) with cuconv's spelling of them (docs/coming-from.md).
#include "common/names.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace cuconv::cli {

/// A CLI11 transform for one of `names`: accepts any letter case and turns the value into the
/// listed spelling; otherwise says what was expected (`what`), with the nearest names.
[[nodiscard]] CLI::Validator one_of(std::vector<std::string> names, std::string what);

/// one_of for the names of one of common/names.hpp's tables.
template <class Enum>
CLI::Validator one_of_table() {
  return one_of(common::all_names<Enum>(), std::string(common::Table<Enum>::what));
}

/// The long names of `app`'s options ("--filter" ...).
[[nodiscard]] std::vector<std::string> long_option_names(const CLI::App& app);

/// "-filter" (ImageMagick's single dash) for a long option: CLI11 would read it as -f with the
/// value "ilter". Returns the message that explains, or "" when argv has no such argument.
[[nodiscard]] std::string single_dash_long_option(const CLI::App& app, int argc, const char* const* argv);

/// What to say about an argument CLI11 left over: another tool's option with cuconv's spelling,
/// an unknown option with the nearest names, or a positional argument too many.
[[nodiscard]] std::string unexpected_argument_message(const CLI::App& app, const std::string& argument);

}  // namespace cuconv::cli
