// SPDX-License-Identifier: Apache-2.0
// `cuconv --help` teaches: the forms of the command and examples first, the options in groups
// with placeholders instead of CLI11's type tags, no line over 100 columns (issue 62).
#include "test_support.hpp"
#include "text_lines.hpp"

#include "cli/command_line.hpp"
#include "cli/help_page.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using cuconv::test::lines_of;

std::string help_of(std::vector<std::string> args) {
  args.insert(args.begin(), "cuconv");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const cuconv::cli::ParsedCommand command =
      cuconv::cli::parse_command_line(static_cast<int>(argv.size()), argv.data());
  REQUIRE(command.action == cuconv::cli::Action::exit_now);
  REQUIRE(command.exit_code == 0);
  return command.stdout_text;
}

}  // namespace

TEST_CASE("help page: usage with serve and 4-5 examples first, grouped options, no type tags, 100 columns") {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--help"}, {"--out-dir", "o", "--help"}}) {
    const std::string help = help_of(args);
    const std::vector<std::string> lines = lines_of(help);
    CAPTURE(args.size());
    for (const std::string& line : lines) CHECK_MESSAGE(line.size() <= 100, "over 100 columns: ", line);
    // The forms of the command, `cuconv serve` among them, before anything else.
    REQUIRE(lines.size() > 3);
    CHECK(lines[2].starts_with("Usage: cuconv INPUT OUTPUT --filter SPEC"));
    const std::size_t usage_end = help.find("\n\n", help.find("Usage:"));
    CHECK(help.substr(0, usage_end).find("  or:  cuconv serve") != std::string::npos);
    CHECK(help.substr(0, usage_end).find("  or:  cuconv --out-dir DIR") != std::string::npos);
    // Examples before the options: single image, batch, Slurm, serve, compare.
    const std::size_t examples = help.find("\nExamples:\n");
    const std::size_t options = help.find("\nOptions:\n");
    REQUIRE(examples != std::string::npos);
    REQUIRE(options != std::string::npos);
    CHECK(examples < options);
    const std::string example_block = help.substr(examples, help.find("\n\n", examples) - examples);
    const std::vector<std::string> example_lines = lines_of(example_block.substr(1));
    CHECK(example_lines.size() - 1 >= 4);
    CHECK(example_lines.size() - 1 <= 5);
    for (const char* use : {"cuconv photo.jpg", "--out-dir", "slurm", "cuconv serve", "--compare"})
      CHECK_MESSAGE(example_block.find(use) != std::string::npos, use, " has no example");
    // The groups, in this order.
    std::size_t at = options;
    for (const char* group : {"\nOptions:\n", "\nOutput files and metadata:\n", "\nWhere and how it runs:\n",
                              "\nBatch mode (--out-dir DIR):\n", "\nInformation:\n", "\nVariants (--variant):\n"}) {
      const std::size_t found = help.find(group);
      CHECK_MESSAGE(found != std::string::npos, group, " missing");
      CHECK_MESSAGE(found >= at, group, " out of order");
      at = found;
    }
    // No CLI11 type tags, defaults glued to the option, or exclusion notes.
    for (const char* tag : {" TEXT", " INT", " UINT", " FLOAT", ":{", "=auto", "=reflect101", "Excludes", "Needs:"})
      CHECK_MESSAGE(help.find(tag) == std::string::npos, "type tag '", tag, "' in --help");
    CHECK(help.find("  -f, --filter SPEC ") != std::string::npos);
    CHECK(help.find("  --border MODE ") != std::string::npos);
  }
}

TEST_CASE("help page: help_row puts the text at the indent and wraps it at kHelpWidth") {
  using cuconv::cli::help_row;
  CHECK(help_row("  --x N", "short text", 10) == "  --x N   short text\n");
  // A head too long for the column: the text starts on the next line, at the indent.
  CHECK(help_row("  --a-very-long-option VALUE", "text", 10) == "  --a-very-long-option VALUE\n          text\n");
  std::string words;
  for (int i = 0; i < 60; ++i) words += "word" + std::to_string(i) + " ";
  const std::vector<std::string> lines = lines_of(help_row("  --y", words, 26));
  REQUIRE(lines.size() > 2);
  std::string joined;
  for (const std::string& line : lines) {
    CHECK(line.size() <= cuconv::cli::kHelpWidth);
    CHECK(line.substr(0, 26).find_first_not_of(' ') == (&line == &lines.front() ? 2 : std::string::npos));
    joined += line.substr(26) + " ";
  }
  CHECK(joined == words);  // every word once, in order, nothing cut
}

TEST_CASE("help page: cuconv serve --help has the same layout: usage, examples, placeholders, 100 columns") {
  const cuconv::test::CommandResult result = cuconv::test::run_cuconv({"serve", "--help"});
  REQUIRE(result.exit_code == 0);
  const std::string& help = result.out;
  for (const std::string& line : lines_of(help)) CHECK_MESSAGE(line.size() <= 100, "over 100 columns: ", line);
  CHECK(help.find("\nUsage: cuconv serve [options]\n") != std::string::npos);
  CHECK(help.find("\nExamples:\n") < help.find("\nOptions:\n"));
  CHECK(help.find("  --idle-exit SECONDS ") != std::string::npos);
  for (const char* tag : {" TEXT", " UINT", ":UINT", "=600", "=64"})
    CHECK_MESSAGE(help.find(tag) == std::string::npos, "type tag '", tag, "' in serve --help");
}
