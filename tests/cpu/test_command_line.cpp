// SPDX-License-Identifier: Apache-2.0
// The command-line parser in-process (src/cli/command_line.hpp): what main() runs, without files
// or a GPU. The binary end to end is tests/cpu/test_cli.cpp's; the fuzz target
// tests/fuzz/fuzz_cli_options.cpp throws arbitrary argv at the same function.
#include "cli/byte_size.hpp"
#include "cli/command_line.hpp"
#include "cli/help_page.hpp"
#include "cli/option_names.hpp"
#include "cli/single_image.hpp"
#include "cli/warnings.hpp"
#include "common/names.hpp"
#include "engine/files.hpp"

#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace cuconv;
using cuconv::cli::Action;
using cuconv::cli::parse_byte_size;
using cuconv::cli::ParsedCommand;

namespace {

ParsedCommand parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cuconv");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return cli::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

/// The usage error parse() throws for `args`, or "" when it throws none.
std::string usage_error(const std::vector<std::string>& args) {
  try {
    (void)parse(args);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("command line: --gpu-memory sizes, plain or with binary K M G T, alone or as KB or KiB") {
  CHECK(parse_byte_size("1") == std::uint64_t{1});
  CHECK(parse_byte_size("1048576") == std::uint64_t{1} << 20);
  CHECK(parse_byte_size("512M") == std::uint64_t{512} << 20);
  CHECK(parse_byte_size("512m") == std::uint64_t{512} << 20);
  CHECK(parse_byte_size("3K") == std::uint64_t{3072});
  CHECK(parse_byte_size("2G") == std::uint64_t{2} << 30);
  CHECK(parse_byte_size("1t") == std::uint64_t{1} << 40);
  CHECK(parse_byte_size("18446744073709551615") == std::numeric_limits<std::uint64_t>::max());
  CHECK(parse_byte_size("16777215T") == std::uint64_t{16777215} << 40);  // the largest T that fits
  // 512M, 512MB and 512MiB are the same binary size, in any letter case; B alone is bytes.
  for (const char* same : {"512M", "512MB", "512MiB", "512mb", "512mib", "512Mb"})
    CHECK_MESSAGE(parse_byte_size(same) == std::uint64_t{512} << 20, same);
  CHECK(parse_byte_size("12KB") == std::uint64_t{12} << 10);
  CHECK(parse_byte_size("3GiB") == std::uint64_t{3} << 30);
  CHECK(parse_byte_size("2TB") == std::uint64_t{2} << 40);
  CHECK(parse_byte_size("100B") == std::uint64_t{100});
  for (const char* garbage : {"",
                              "0",
                              "0G",
                              "-1",
                              "-1G",
                              "+5",
                              " 5",
                              "5 ",
                              "1.5G",
                              "12KiBs",
                              "12iB",
                              "12BB",
                              "12KBB",
                              "12MiiB",
                              "B",
                              "G",
                              "GB",
                              "12Q",
                              "12QB",
                              "0x10",
                              "16777216T",
                              "16777216TiB",
                              "18446744073709551616",
                              "99999999999999999999999"}) {
    INFO("'", garbage, "'");
    CHECK_FALSE(parse_byte_size(garbage).has_value());
  }
}

TEST_CASE("command line: a single-image request becomes library options") {
  const ParsedCommand c =
      parse({"in.png",         "out.tif", "--filter",     "gauss5", "--variant", "fast", "--border", "constant",
             "--border-value", "7",       "--anchor",     "1,2",    "--delta",   "-3",   "--depth",  "32f",
             "--alpha",        "keep",    "--gpu-memory", "64M",    "-v"});
  CHECK(c.action == Action::filter_image);
  CHECK(c.request.input == "in.png");
  CHECK(c.request.output == "out.tif");
  CHECK(c.request.filter_spec == "gauss5");
  CHECK(c.request.verbose);
  CHECK(c.options.variant == Variant::fast);
  CHECK(c.options.border == Border::constant);
  CHECK(c.options.border_value == 7.0);
  CHECK(c.options.anchor_x == 1);
  CHECK(c.options.anchor_y == 2);
  CHECK(c.options.delta == -3.0);
  CHECK(c.options.depth == Depth::f32);
  CHECK(c.options.keep_alpha);
  CHECK(c.options.gpu_memory_limit == std::uint64_t{64} << 20);
  // Without --gpu-memory the library picks the limit (0).
  CHECK(parse({"a.png", "b.png", "--filter", "box3"}).options.gpu_memory_limit == 0);
}

TEST_CASE("command line: batch mode, informational commands, --help and --version") {
  ParsedCommand c =
      parse({"--out-dir", "out", "a.png", "dir", "--filter", "box3", "--json", "-", "--gpu-memory", "1G"});
  CHECK(c.action == Action::filter_batch);
  CHECK(c.batch.out_dir == "out");
  CHECK(c.batch.inputs == std::vector<std::string>{"a.png", "dir"});
  CHECK(c.batch.json_path == "-");
  CHECK(c.options.gpu_memory_limit == std::uint64_t{1} << 30);
  CHECK(parse({"--list-filters"}).action == Action::list_filters);
  c = parse({"--show-filter", "gauss3"});
  CHECK(c.action == Action::show_filter);
  CHECK(c.request.show_filter == "gauss3");
  c = parse({"--help"});
  CHECK(c.action == Action::exit_now);
  CHECK(c.exit_code == 0);
  CHECK(c.stdout_text.find("--gpu-memory") != std::string::npos);
  CHECK(c.stdout_text.find("--version") != std::string::npos);
  CHECK(parse({"--version"}).action == Action::version);  // main.cpp prints it (it asks the GPU)
  CHECK(parse({"--out-dir", "o", "--version"}).action == Action::version);
}

TEST_CASE("command line: what CLI11 refuses comes back as exit 2 with its message, naming the option") {
  const struct {
    std::vector<std::string> args;
    const char* names;
  } refused[] = {
      {{"a.png", "b.png", "--filter", "box3", "--gpu-memory", "lots"}, "--gpu-memory"},
      {{"a.png", "b.png", "--filter", "box3", "--gpu-memory", "0"}, "--gpu-memory"},
      {{"a.png", "b.png", "--filter", "box3", "--gpu-memory"}, "--gpu-memory"},
      {{"a.png", "b.png", "--filter", "box3", "--max-pixels", "-5"}, "--max-pixels"},
      {{"a.png", "b.png", "--filter", "box3", "--variant", "fastest"}, "--variant"},
      {{"a.png", "b.png", "--filter", "box3", "--bench", "0"}, "--bench"},
      {{"a.png", "b.png", "--filter", "box3", "--frobnicate"}, "--frobnicate"},
      {{"a.png", "b.png", "--filter", "box3", "-v", "-q"}, "--quiet"},
  };
  for (const auto& r : refused) {
    const ParsedCommand c = parse(r.args);
    INFO(r.names, ": ", c.stderr_text);
    CHECK(c.action == Action::exit_now);
    CHECK(c.exit_code == static_cast<int>(ExitCode::usage));
    CHECK(c.stderr_text.find(r.names) != std::string::npos);
    CHECK(c.stdout_text.empty());
  }
}

TEST_CASE("command line: inconsistent requests are Error{usage} naming the option") {
  CHECK(usage_error({"a.png"}).find("INPUT and OUTPUT are required") != std::string::npos);
  CHECK(usage_error({"a.png", "b.png"}).find("--filter is required") != std::string::npos);
  CHECK(usage_error({"a.png", "b.png", "--filter", "box3", "--border-value", "3"}).find("--border-value") !=
        std::string::npos);
  CHECK(usage_error({"a.png", "b.png", "--filter", "box3", "--anchor", "1;2"}).find("--anchor") != std::string::npos);
  CHECK(usage_error({"a.png", "b.png", "--filter", "box3", "--shard", "0/2"}).find("--shard") != std::string::npos);
  CHECK(usage_error({"a.png", "b.png", "--filter", "box3", "--json"}).find("--compare") != std::string::npos);
  CHECK(usage_error({"--out-dir", "o", "a.png", "--filter", "box3", "--compare"}).find("--compare") !=
        std::string::npos);
  CHECK(usage_error({"a.png", "b.png", "--filter", "box3"}).empty());
}

TEST_CASE("command line: --anchor takes X,Y of non-negative ints, never an out-of-range value") {
  const auto anchor_of = [](const std::string& text) {
    const ParsedCommand c = parse({"a.png", "b.png", "--filter", "box3", "--anchor", text});
    return std::pair{c.options.anchor_x, c.options.anchor_y};
  };
  CHECK(anchor_of("1,2") == std::pair{1, 2});
  CHECK(anchor_of("0,126") == std::pair{0, 126});
  CHECK(anchor_of(" 1, 2") == std::pair{1, 2});  // blanks and '+' as sscanf's %d took them
  CHECK(anchor_of("+3,+4") == std::pair{3, 4});
  for (const char* bad : {"1;2", "1,", ",2", "1,2,", "1,2x", "1 ,2", "-1,0", "0,-1", "x,y", "1.5,2", "99999999999,1",
                          "1,2147483648", "2147483647,1,"}) {
    INFO("'", bad, "'");
    CHECK(usage_error({"a.png", "b.png", "--filter", "box3", "--anchor", bad}).find("expected X,Y") !=
          std::string::npos);
  }
}

TEST_CASE("command line: enum values in any letter case become the table's spelling") {
  const ParsedCommand c = parse({"in.png", "out.png", "--filter", "box3", "--variant", "TILED-HALO", "--border",
                                 "Constant", "--border-value", "3", "--depth", "32F", "--alpha", "KEEP"});
  CHECK(c.action == Action::filter_image);
  CHECK(c.options.variant == Variant::tiled_halo);
  CHECK(c.options.border == Border::constant);
  CHECK(c.options.border_value == 3.0);  // "Constant" counts as constant for --border-value
  CHECK(c.options.depth == Depth::f32);
  CHECK(c.options.keep_alpha);
  CHECK(c.request.border == "constant");
  CHECK(parse({"in.png", "out.png", "--filter", "box3", "--border", "REPLICATE"}).options.border == Border::replicate);
  // Every name of every table parses, in upper case too, and prints back as it is listed.
  for (const auto& e : common::kVariants) {
    CHECK(to_string(e.value) == e.name);
    std::string upper(e.name);
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    CHECK(parse_variant(upper) == e.value);
    CHECK(parse({"i.png", "o.png", "-f", "box3", "--variant", upper}).options.variant == e.value);
  }
  for (const auto& e : common::kBorders)
    CHECK(parse({"i.png", "o.png", "-f", "box3", "--border", std::string(e.name)}).options.border == e.value);
  for (const auto& e : common::kDepths)
    CHECK(parse({"i.png", "o.png", "-f", "box3", "--depth", std::string(e.name)}).options.depth == e.value);
}

TEST_CASE("command line: the variant, border and depth tables are the one list") {
  // gpu_variants() is the table's GPU rows, in table order.
  std::vector<Variant> gpu;
  for (const auto& e : common::kVariants)
    if (e.gpu) gpu.push_back(e.value);
  CHECK(gpu == gpu_variants());
  CHECK(gpu.size() == common::kVariants.size() - 2);  // all but auto and opencv
  // --help and docs/cli.md list every name of every table.
  const std::string help = parse({"--help"}).stdout_text;
  std::ifstream docs_file(std::string(CUCONV_TEST_DOCS) + "/cli.md");
  REQUIRE(docs_file);
  const std::string docs((std::istreambuf_iterator<char>(docs_file)), std::istreambuf_iterator<char>());
  const auto check_listed = [&](std::string_view name, std::string_view description) {
    // The docs' Markdown tables escape '|'.
    std::string escaped;
    for (const char ch : description) escaped += ch == '|' ? std::string("\\|") : std::string(1, ch);
    const std::string row = "| `" + std::string(name) + "` | " + escaped + " |";
    CHECK_MESSAGE(docs.find(row) != std::string::npos, row, " not in docs/cli.md");
    const std::string help_row = "  " + std::string(name);
    const std::size_t at = help.find("\n" + help_row + " ");
    REQUIRE_MESSAGE(at != std::string::npos, name, " not in the --help footer");
    // The row and the lines it wraps onto (indented 16 columns), joined again.
    const std::string wrap = "\n" + std::string(16, ' ');
    std::size_t end = help.find('\n', at + 1);
    while (end != std::string::npos && help.compare(end, wrap.size(), wrap) == 0) end = help.find('\n', end + 1);
    std::string row_text = help.substr(at, end - at);
    for (std::size_t cut = row_text.find(wrap); cut != std::string::npos; cut = row_text.find(wrap, cut))
      row_text.replace(cut, wrap.size(), " ");
    CHECK(row_text.find(std::string(description)) != std::string::npos);
  };
  // A row names a setting as the option that sets it (`border_value` -> --border-value).
  for (const auto& e : common::kVariants) check_listed(e.name, cli::in_cli_terms(e.help));
  for (const auto& e : common::kBorders) check_listed(e.name, cli::in_cli_terms(e.help));
  for (const auto& e : common::kDepths) check_listed(e.name, cli::in_cli_terms(e.help));
  CHECK(help.find("v from --border-value") != std::string::npos);
  for (const ParametricFilter& kind : parametric_filters())
    CHECK_MESSAGE(help.find(std::string(kind.syntax)) != std::string::npos, kind.syntax, " not in --help");
}

TEST_CASE("command line: mistakes are reported in cuconv's own words, with the nearest name") {
  const auto refusal = [](const std::vector<std::string>& args) {
    const ParsedCommand c = parse(args);
    CHECK(c.action == Action::exit_now);
    CHECK(c.exit_code == static_cast<int>(ExitCode::usage));
    CHECK(c.stdout_text.empty());
    return c.stderr_text;
  };
  CHECK(refusal({"a.png", "b.png", "--fliter", "gauss5"}) ==
        "cuconv: error: unknown option '--fliter'; did you mean '--filter'?\nRun 'cuconv --help' for the options.\n");
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--overwrit"}).find("did you mean '--overwrite'?") !=
        std::string::npos);
  // Other tools' options get cuconv's spelling (issue 62), in any letter case.
  for (const auto& [args, pointer] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"a.png", "-o", "b.png", "-f", "box3"}, "unknown option '-o': the output is the second argument"},
           {{"a.png", "b.png", "--sigma", "2"},
            "unknown option '--sigma': a Gaussian's sigma is part of the filter: "
            "--filter gaussian:0,SIGMA"},
           {{"a.png", "b.png", "-blur", "0x2"}, "--filter gaussian:0,SIGMA --border replicate"},
           {{"a.png", "b.png", "-Sharpen", "0x1"}, "--filter unsharp:0,SIGMA,1 --border replicate"},
           {{"a.png", "b.png", "--output=c.png", "-f", "box3"}, "unknown option '--output': the output is"}}) {
    const std::string& foreign = args[2];  // clang 14 cannot capture a structured binding (CAPTURE does)
    CAPTURE(foreign);
    const std::string message = refusal(args);
    CHECK(message.find(pointer) != std::string::npos);
    CHECK(message.find("docs/coming-from.md") != std::string::npos);
  }
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--bordr=wrap"})
            .find("unknown option '--bordr'; did you mean '--border'?") != std::string::npos);
  // No suggestion for a word like no option.
  const std::string far = refusal({"a.png", "b.png", "-f", "box3", "--zzzzzzzzzz"});
  CHECK(far.find("unknown option '--zzzzzzzzzz'") != std::string::npos);
  CHECK(far.find("did you mean") == std::string::npos);
  // ImageMagick's single dash: CLI11 alone would read "-filter" as -f "ilter".
  CHECK(refusal({"a.png", "b.png", "-filter", "gauss5"}) ==
        "cuconv: error: unknown option '-filter': long options take two dashes, '--filter' (ImageMagick's single "
        "dash is not understood)\nRun 'cuconv --help' for the options.\n");
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "-border", "wrap"}).find("'--border'") != std::string::npos);
  CHECK(parse({"a.png", "b.png", "-f", "box3", "--delta", "-5"}).options.delta == -5.0);  // a number is no option
  // Values: the nearest names, and the whole list.
  const std::string variant = refusal({"a.png", "b.png", "-f", "box3", "--variant", "fastt"});
  CHECK(variant.rfind("cuconv: error: --variant: 'fastt' is not a variant; did you mean 'fast'?", 0) == 0);
  CHECK(variant.find("'tiled-halo'") != std::string::npos);
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--border", "reflect-101"}).find("did you mean 'reflect101'") !=
        std::string::npos);
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--depth", "32"}).find("is not a depth") != std::string::npos);
  // A third positional argument.
  CHECK(refusal({"a.png", "b.png", "c.png", "-f", "box3"}).find("unexpected argument 'c.png'") != std::string::npos);
  // Every refusal starts the same way.
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--bench", "0"}).rfind("cuconv: error: --bench", 0) == 0);
}

TEST_CASE("command line: other tools' words get cuconv's names as suggestions") {
  // Before issue 49: "'mirror' is not a border mode (one of ...)" with no suggestion.
  const auto refusal = [](const std::vector<std::string>& args) {
    const ParsedCommand c = parse(args);
    CHECK(c.action == Action::exit_now);
    CHECK(c.exit_code == static_cast<int>(ExitCode::usage));
    return c.stderr_text;
  };
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--border", "mirror"})
            .find("'mirror' is not a border mode; did you mean 'reflect' or 'reflect101'?") != std::string::npos);
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--border", "Edge"}).find("did you mean 'replicate'?") !=
        std::string::npos);
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--border", "tile"}).find("did you mean 'wrap'?") !=
        std::string::npos);
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--depth", "float"}).find("did you mean '32f'?") != std::string::npos);
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--variant", "gpu"}).find("did you mean 'auto'?") !=
        std::string::npos);
  CHECK(refusal({"a.png", "b.png", "-f", "box3", "--codec", "cpu"}).find("did you mean 'opencv'") != std::string::npos);
  // A word of another tool that is a value here is taken as it is.
  CHECK(parse({"a.png", "b.png", "-f", "box3", "--codec", "gpu"}).action == Action::filter_image);
  // Every foreign word maps to a name cuconv has ("gpu" is also a --codec value, "edge" a preset:
  // the mapping serves only where the word is not a value).
  for (const common::ForeignWord& foreign : common::kForeignWords) {
    const std::string ours(foreign.ours);
    std::vector<std::string> all = common::all_names<Variant>();
    for (const auto& more :
         {common::all_names<Border>(), common::all_names<Depth>(), common::all_names<common::Codec>(), preset_names()})
      all.insert(all.end(), more.begin(), more.end());
    const bool parametric = ours.ends_with(":N");
    CHECK_MESSAGE((parametric || std::find(all.begin(), all.end(), ours) != all.end()), foreign.word, " -> ", ours);
  }
}

// ---- issue 49: --normalize, --skip-existing, the no-GPU warning ------------------------------

TEST_CASE("--normalize: weights divided by their sum where it is not 0, and the sum test behind the warning") {
  // Before issue 49 '5x1:1,1,1,1,1' multiplied every flat area by 5 (a white image, exit 0).
  const Filter ones = load_filter("5x1:1,1,1,1,1", {.normalize = true});
  CHECK(ones.weights == std::vector<double>(5, 0.2));
  CHECK(weight_sum(load_filter("5x1:1,1,1,1,1")) == 5.0);
  CHECK(load_filter("laplacian", {.normalize = true}).weights == load_filter("laplacian").weights);  // sums to 0
  Filter zeros = load_filter("3x1:0,0,0");
  CHECK_FALSE(normalize_weights(zeros));
  CHECK(sums_to_neither_zero_nor_one(load_filter("5x1:1,1,1,1,1")));
  CHECK(sums_to_neither_zero_nor_one(load_filter("3x1:1,2,1")));
  for (const char* fine : {"gauss5", "box:7", "gaussian:3,1.3", "sharpen", "laplacian", "sobel-x",
                           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one filter, split over lines
                           "3:0.111111111,0.111111111,"
                           "0.111111111,0.111111111,0.111111111,0.111111111,0.111111111,0.111111111,0.111111111"})
    CHECK_MESSAGE(!sums_to_neither_zero_nor_one(load_filter(fine)), fine);
  CHECK_FALSE(sums_to_neither_zero_nor_one(ones));
  // The command line: the flag reaches the request and the load options.
  const ParsedCommand command = parse({"a.png", "b.png", "-f", "5x1:1,1,1,1,1", "--normalize"});
  CHECK(command.request.normalize);
  CHECK(cli::filter_load_options_of(command.request).normalize);
  CHECK_FALSE(cli::filter_load_options_of(parse({"a.png", "b.png", "-f", "box3"}).request).normalize);
}

TEST_CASE("unnormalized_filter_warning: a filter not summing to 1 whose result is mostly clipped, with the cure") {
  const Filter ones = load_filter("5x1:1,1,1,1,1");
  const cv::Mat white(8, 8, CV_8UC1, cv::Scalar(255));
  const std::optional<std::string> warning = cli::unnormalized_filter_warning(ones, white);
  REQUIRE(warning.has_value());
  CHECK(warning->find("sum to 5, not 1") != std::string::npos);
  CHECK(warning->find("100% of the output values are clipped") != std::string::npos);
  CHECK(warning->find("--normalize") != std::string::npos);
  CHECK_FALSE(cli::unnormalized_filter_warning(ones, cv::Mat(8, 8, CV_8UC1, cv::Scalar(60))).has_value());  // in range
  CHECK_FALSE(cli::unnormalized_filter_warning(load_filter("gauss5"), white).has_value());                  // sums to 1
  CHECK_FALSE(cli::unnormalized_filter_warning(load_filter("laplacian"), white).has_value());               // sums to 0
  CHECK_FALSE(cli::unnormalized_filter_warning(ones, cv::Mat(8, 8, CV_32FC1, cv::Scalar(5.0F))).has_value());  // float
  cv::Mat half(2, 2, CV_16UC1, cv::Scalar(65535));
  half.at<std::uint16_t>(0, 0) = 3;
  CHECK(cli::saturated_fraction(half) == 0.75);
  CHECK(cli::saturated_fraction(cv::Mat(2, 2, CV_16SC3, cv::Scalar::all(-32768))) == 1.0);
}

TEST_CASE("--skip-existing: parsed for single-image mode, refused with --overwrite and for standard output") {
  const ParsedCommand command = parse({"a.png", "b.png", "-f", "box3", "--skip-existing"});
  CHECK(command.request.skip_existing);
  CHECK(command.action == Action::filter_image);
  const ParsedCommand both = parse({"a.png", "b.png", "-f", "box3", "--skip-existing", "--overwrite"});
  CHECK(both.action == Action::exit_now);
  CHECK(both.exit_code == static_cast<int>(ExitCode::usage));
  CHECK(both.stderr_text.find("--overwrite excludes --skip-existing") != std::string::npos);
  CHECK(usage_error({"a.png", "png:-", "-f", "box3", "--skip-existing"}).find("standard output") != std::string::npos);
  CHECK(parse({"--out-dir", "out", "a.png", "-f", "box3", "--skip-existing"}).action == Action::filter_batch);

  // What the single-image flow asks before reading the input.
  const std::string existing = (std::filesystem::temp_directory_path() / "cuconv-skip-existing-test.png").string();
  std::ofstream(existing) << "x";
  cli::CliRequest request = command.request;
  request.output = existing;
  CHECK(cli::skipped_existing_output(request, engine::local_files()) ==
        existing + " exists; skipped (--skip-existing)");
  request.skip_existing = false;
  CHECK_FALSE(cli::skipped_existing_output(request, engine::local_files()).has_value());
  request.skip_existing = true;
  std::filesystem::remove(existing);
  CHECK_FALSE(cli::skipped_existing_output(request, engine::local_files()).has_value());
  request.output =
      std::filesystem::temp_directory_path().string();  // a folder: check_output_format's error, not a skip
  CHECK_FALSE(cli::skipped_existing_output(request, engine::local_files()).has_value());
}

TEST_CASE("the no-GPU warning says how to silence it, and CUCONV_NO_GPU_WARNING=1 does") {
  // Before issue 49 only -q hid it, together with every real warning.
  const std::string warning =
      cli::no_gpu_warning("no NVIDIA driver is loaded; nvidia-smi tells whether one is installed");
  CHECK(warning == "no GPU (no NVIDIA driver is loaded), CPU used; CUCONV_NO_GPU_WARNING=1 hides this");
  // One line of at most 100 columns as printed (issue 62: it was 233), however long the reason.
  for (const std::string& reason : {std::string("no CUDA device found"), std::string(300, 'x')}) {
    const std::string printed = "cuconv: warning: " + cli::no_gpu_warning(reason);
    CHECK(printed.size() <= 100);
    CHECK(printed.find('\n') == std::string::npos);
    CHECK(printed.find("CUCONV_NO_GPU_WARNING=1") != std::string::npos);
  }
  CHECK(cli::no_gpu_warning_wanted(nullptr));
  CHECK(cli::no_gpu_warning_wanted(""));
  CHECK(cli::no_gpu_warning_wanted("0"));
  CHECK_FALSE(cli::no_gpu_warning_wanted("1"));
  // Once per process: the first call gives the text, later ones nothing (the variable unset here).
  ::unsetenv(cli::kNoGpuWarningVariable);
  CHECK(cli::no_gpu_warning_once("no driver") == cli::no_gpu_warning("no driver"));
  CHECK_FALSE(cli::no_gpu_warning_once("no driver").has_value());
}

TEST_CASE("cli: a library message's settings are written as the options that set them") {
  CHECK(cli::in_cli_terms("a.png: `quality` applies to JPEG and WebP outputs, not .png") ==
        "a.png: --quality applies to JPEG and WebP outputs, not .png");
  CHECK(cli::in_cli_terms("raise `gpu_memory_limit`, or use `variant` opencv") ==
        "raise --gpu-memory, or use --variant opencv");
  CHECK(cli::in_cli_terms("`name_template` 'x/%s'") == "--name 'x/%s'");
  // A backquoted word that is no setting, an unpaired backquote and plain text stay as they are.
  CHECK(cli::in_cli_terms("see `cuconv serve` and `") == "see `cuconv serve` and `");
  CHECK(cli::in_cli_terms("no settings here") == "no settings here");
  CHECK(cli::in_cli_terms("") == "");
  // Each setting once, each written as a flag.
  std::vector<std::string_view> seen;
  for (const cli::OptionName& name : cli::option_names()) {
    CHECK_MESSAGE(std::find(seen.begin(), seen.end(), name.setting) == seen.end(), name.setting, " twice");
    seen.push_back(name.setting);
    CHECK(name.option.starts_with("--"));
    CHECK(cli::in_cli_terms("`" + std::string(name.setting) + "`") == name.option);
  }
}
