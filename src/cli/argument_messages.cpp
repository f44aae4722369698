// SPDX-License-Identifier: Apache-2.0
// What cuconv says about arguments it does not take (see argument_messages.hpp).
#include "cli/argument_messages.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace cuconv::cli {

namespace {

/// Options of ImageMagick, libvips, OpenCV and other tools' command lines that people type at
/// cuconv, each with cuconv's way of saying it (docs/coming-from.md has the measured mappings).
struct ForeignOption {
  std::string_view name;
  std::string_view cuconv;
};
constexpr std::array<ForeignOption, 14> kForeignOptions{{
    {"-o", "the output is the second argument (cuconv INPUT OUTPUT), or --out-dir DIR for many"},
    {"--output", "the output is the second argument: cuconv INPUT OUTPUT --filter SPEC"},
    {"-i", "the input is the first argument: cuconv INPUT OUTPUT --filter SPEC"},
    {"--input", "the input is the first argument: cuconv INPUT OUTPUT --filter SPEC"},
    {"--sigma", "a Gaussian's sigma is part of the filter: --filter gaussian:0,SIGMA"},
    {"--radius", "the radius is part of the filter: --filter gaussian:R,SIGMA (or box:N, disk:R)"},
    {"--ksize", "the size is part of the filter: --filter gaussian:R,SIGMA or box:N"},
    {"--kernel", "a kernel is a filter: --filter 'WxH:v,v,...' or --filter FILE"},
    {"-blur", "ImageMagick's -blur 0xSIGMA is about --filter gaussian:0,SIGMA --border replicate"},
    {"-gaussian-blur", "ImageMagick's -gaussian-blur 0xSIGMA is --filter gaussian:0,SIGMA --border replicate"},
    {"-sharpen", "ImageMagick's -sharpen 0xSIGMA is about --filter unsharp:0,SIGMA,1 --border replicate"},
    {"-unsharp", "ImageMagick's -unsharp 0xSIGMA+AMOUNT is --filter unsharp:0,SIGMA,AMOUNT --border replicate"},
    {"-convolve", "ImageMagick's -convolve 'WxH: v,...' is --filter 'WxH:v,...' --normalize"},
    {"-morphology", "ImageMagick's -morphology Correlate 'WxH: v,...' is --filter 'WxH:v,...'"},
}};

}  // namespace

CLI::Validator one_of(std::vector<std::string> names, std::string what) {
  std::string listed;
  for (const std::string& name : names) listed += (listed.empty() ? "" : ",") + name;
  return CLI::Validator(
      [names, what](std::string& text) -> std::string {
        for (const std::string& name : names) {
          if (common::equal_ignoring_case(name, text)) {
            text = name;
            return {};
          }
        }
        std::string message = "'" + text + "' is not a " + what;
        const std::vector<std::string> nearest = common::nearest_names(text, names);
        if (!nearest.empty()) message += "; did you mean " + common::quoted_alternatives(nearest) + "?";
        return message + " (one of " + common::quoted_alternatives(names) + ")";
      },
      "{" + listed + "}");
}

/// The long names of `app`'s options ("--filter" ...).
std::vector<std::string> long_option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* option : app.get_options())
    for (const std::string& name : option->get_lnames()) out.push_back("--" + name);
  return out;
}

/// "-filter" (ImageMagick's single dash) for a long option: CLI11 would read it as -f with the
/// value "ilter". Returns the message that explains, or "" when argv has no such argument.
std::string single_dash_long_option(const CLI::App& app, int argc, const char* const* argv) {
  const std::vector<std::string> long_names = long_option_names(app);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg[0] != '-' || arg[1] == '-' || !std::isalpha(static_cast<unsigned char>(arg[1]))) continue;
    const std::string as_long = "-" + std::string(arg.substr(0, arg.find('=')));
    if (std::find(long_names.begin(), long_names.end(), as_long) != long_names.end()) {
      return "unknown option '" + std::string(arg) + "': long options take two dashes, '" + as_long +
             "' (ImageMagick's single dash is not understood)";
    }
  }
  return {};
}

/// What to say about an argument CLI11 left over: another tool's option with cuconv's spelling,
/// an unknown option with the nearest names, or a positional argument too many.
std::string unexpected_argument_message(const CLI::App& app, const std::string& argument) {
  if (argument.size() < 2 || argument[0] != '-')
    return "unexpected argument '" + argument +
           "' (single-image mode takes INPUT OUTPUT; several inputs need --out-dir DIR)";
  const std::string name = argument.substr(0, argument.find('='));
  for (const ForeignOption& foreign : kForeignOptions)
    if (common::equal_ignoring_case(foreign.name, name))
      return "unknown option '" + name + "': " + std::string(foreign.cuconv) + " (docs/coming-from.md)";
  std::string message = "unknown option '" + name + "'";
  const std::vector<std::string> nearest = common::nearest_names(name, long_option_names(app));
  if (!nearest.empty()) message += "; did you mean " + common::quoted_alternatives(nearest) + "?";
  return message;
}

}  // namespace cuconv::cli
