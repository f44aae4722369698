// SPDX-License-Identifier: Apache-2.0
// cuconv's help pages: a row wrapper and a CLI11 formatter (see help_page.hpp).
#include "cli/help_page.hpp"

#include <algorithm>
#include <utility>

namespace cuconv::cli {

std::string help_row(std::string_view head, std::string_view text, std::size_t indent) {
  std::string out(head);
  if (out.size() + 2 > indent)
    out += "\n" + std::string(indent, ' ');
  else
    out.resize(indent, ' ');
  std::size_t column = indent;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    const std::string_view word = text.substr(at, end - at);
    at = end + 1;
    if (word.empty()) continue;
    if (column > indent && column + 1 + word.size() > kHelpWidth) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out + "\n";
}

namespace {

/// cuconv's help page in CLI11: the usage and examples given (which say what the positional
/// arguments are), the option groups in the order given, each option as "-f, --filter SPEC" and its text wrapped at
/// kHelpWidth columns, no type tags, defaults or exclusions (the texts say what matters of those).
class HelpPage : public CLI::Formatter {
 public:
  HelpPage(std::string usage, std::vector<std::string> groups) : usage_(std::move(usage)), groups_(std::move(groups)) {}

  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::string out = app->get_description() + "\n\n" + usage_;  // the usage says what the arguments are
    for (const std::string& group : groups_) {
      const auto in_group = [&group](const CLI::Option* opt) {
        return opt->nonpositional() && opt->get_group() == group;
      };
      if (const std::vector<const CLI::Option*> opts = app->get_options(in_group); !opts.empty())
        out += make_group(group, false, opts);
    }
    if (!app->get_footer().empty()) out += "\n" + app->get_footer();
    return out;
  }

  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    std::string names = is_positional ? opt->get_name(true, false) : opt->get_name(false, true);
    for (std::size_t comma = names.find(','); comma != std::string::npos; comma = names.find(',', comma + 2))
      names.insert(comma + 1, " ");
    if (!opt->get_option_text().empty()) names += " " + opt->get_option_text();
    return help_row("  " + names, opt->get_description(), kHelpIndent);
  }

 private:
  static constexpr std::size_t kHelpIndent = 26;
  std::string usage_;
  std::vector<std::string> groups_;
};

}  // namespace

std::shared_ptr<CLI::Formatter> help_page(std::string usage, std::vector<std::string> groups) {
  return std::make_shared<HelpPage>(std::move(usage), std::move(groups));
}

}  // namespace cuconv::cli
