// SPDX-License-Identifier: Apache-2.0
// The command line: CLI11 options into one request, the checks that need no file or GPU, and the
// request as library options. Printing and running are main.cpp's.
#include "cli/command_line.hpp"

#include "cli/byte_size.hpp"
#include "cli/option_names.hpp"

#include "cli/argument_messages.hpp"
#include "cli/help_page.hpp"

#include "common/names.hpp"
#include "common/whole_number.hpp"

#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <opencv2/core.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>

namespace cuconv::cli {

namespace {

/// One integer of --anchor: blanks and a '+' before it allowed, as sscanf's %d has it, but a
/// value beyond int is refused rather than undefined.
std::optional<int> read_anchor_int(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return common::parse_signed_whole_number<int>(text);
}

/// "X,Y" -> anchor; Error{usage} otherwise.
std::pair<int, int> parse_anchor(const std::string& text) {
  const std::size_t comma = text.find(',');
  const std::optional<int> x = read_anchor_int(std::string_view(text).substr(0, comma));
  const std::optional<int> y =
      comma == std::string::npos ? std::nullopt : read_anchor_int(std::string_view(text).substr(comma + 1));
  if (!x || !y || *x < 0 || *y < 0)
    throw Error(ErrorKind::usage, "--anchor '" + text + "': expected X,Y with non-negative integers");
  return {*x, *y};
}

ConvolveOptions to_options(const CliRequest& req) {
  ConvolveOptions o;
  o.variant = *parse_variant(req.variant);  // CLI11 checked membership
  o.border = *parse_border(req.border);
  o.depth = *parse_depth(req.depth);
  o.border_value = req.border_value;
  o.delta = req.delta;
  o.keep_alpha = req.alpha == "keep";
  if (!req.anchor.empty()) std::tie(o.anchor_x, o.anchor_y) = parse_anchor(req.anchor);
  o.bench_runs = req.bench_runs;
  if (!req.gpu_memory.empty()) o.gpu_memory_limit = *parse_byte_size(req.gpu_memory);  // validated by CLI11
  return o;
}

/// A CLI11 validator that accepts what `accepts` returns true for, else says `expected`.
template <class Accepts>
CLI::Validator by_hand(Accepts accepts, const std::string& expected, std::string type_name) {
  return CLI::Validator(
      [accepts, expected](std::string& text) -> std::string {
        return accepts(text) ? std::string() : expected + ", got '" + text + "'";
      },
      std::move(type_name));
}

/// Registers the batch options on `app` (all but --json and the positionals, which are
/// registered per mode). Returns the options that make sense only with --out-dir.
std::vector<CLI::Option*> add_batch_options(CLI::App& app, BatchRequest& request) {
  const std::string group = "Batch mode (--out-dir DIR)";
  return {
      app.add_option("--out-dir", request.out_dir, "batch mode: write the results into DIR (created if missing)")
          ->option_text("DIR")
          ->group(group),
      app.add_option("--name", request.name_template,
                     "output file names: %s = the input's name without extension, %% = '%' (default %s); "
                     "the template's extension picks the format, none keeps the input's")
          ->option_text("TEMPLATE")
          ->group(group),
      app.add_option("--from", request.from_lists, "read input paths from FILE, or - for stdin, one per line")
          ->allow_extra_args(false)  // one list per --from; what follows is an input again
          ->option_text("FILE")
          ->group(group),
      app.add_flag("--recursive", request.recursive, "folders given as inputs: also take their subfolders' images")
          ->group(group),
      app.add_option("--jobs", request.jobs, "decode/encode threads (default: one per hardware thread)")
          ->check(CLI::Range(1, 4096))
          ->option_text("N")
          ->group(group),
      app.add_option("--gpu-threads", request.gpu_threads,
                     "filter threads per GPU, each with its own stream and buffers (default 2)")
          ->check(CLI::Range(1, 64))
          ->option_text("N")
          ->group(group),
      app.add_option("--devices", request.devices,
                     "all, or CUDA device indices 0,1,...: each image goes to the device with the least work in hand")
          ->option_text("LIST")
          ->group(group),
      app.add_option("--shard", request.shard,
                     "take the inputs whose sorted position is I modulo N (default: from Slurm's "
                     "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT)")
          ->option_text("I/N")
          ->group(group),
      app.add_flag("--fail-fast", request.fail_fast, "stop at the first failing input, exit with its code")
          ->group(group),
      app.add_flag("--no-filter", request.no_filter,
                   "benchmark aid: run the same pipeline without the filter stage (decode and encode only)")
          ->group(group),
  };
}

/// Registers what is written and how (both modes): encoders, metadata, existing outputs, sizes.
void add_output_options(CLI::App& app, CliRequest& request) {
  const std::string group = "Output files and metadata";
  CLI::Option* overwrite =
      app.add_flag("--overwrite", request.overwrite,
                   "replace an existing output (default: never; one image: refused, exit 4; batch: skipped)")
          ->group(group);
  app.add_flag("--skip-existing", request.skip_existing,
               "an output that exists already is left as it is and the run succeeds (exit 0): for re-runs "
               "(batch mode does this anyway)")
      ->excludes(overwrite)
      ->group(group);
  app.add_option("--quality", request.quality, "JPEG and WebP quality, 1-100 (default: JPEG 95, WebP lossless)")
      ->check(CLI::Range(1, 100))
      ->option_text("Q")
      ->group(group);
  app.add_option("--compression", request.compression,
                 "PNG: zlib level 0-9 (default 1); TIFF: none, lzw or deflate (default deflate); all lossless")
      ->check(CLI::IsMember({"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "none", "lzw", "deflate"}))
      ->option_text("LEVEL")
      ->group(group);
  app.add_flag("--strip", request.strip_metadata,
               "write no metadata (default: EXIF, ICC profile and XMP are kept where the output format holds them)")
      ->group(group);
  app.add_flag("--auto-orient", request.auto_orient,
               "rotate the pixels upright by the EXIF Orientation before filtering, and reset the tag")
      ->group(group);
  // Checked by hand: CLI11's conversion wraps "-5" and 2^64 around.
  app.add_option("--max-pixels", request.max_pixels,
                 "refuse larger images (default 2^30; PNG, JPEG, TIFF, BMP: from the header, before decoding)")
      ->check(by_hand(
          [](const std::string& text) {
            const std::optional<std::uint64_t> value = common::parse_whole_number<std::uint64_t>(text);
            return value && *value > 0;
          },
          "expected a whole number from 1 to 2^64-1", "PIXELS"))
      ->option_text("N")
      ->group(group);
}

}  // namespace

WriteOptions write_options_of(const CliRequest& request) {
  WriteOptions options;
  options.overwrite = request.overwrite;
  options.quality = request.quality;
  options.compression = request.compression;
  return options;
}

FilterLoadOptions filter_load_options_of(const CliRequest& request) {
  FilterLoadOptions options;
  options.normalize = request.normalize;
  return options;
}

bool is_batch_invocation(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--out-dir" || arg.starts_with("--out-dir=")) return true;
  }
  return false;
}

namespace {

/// The top of `cuconv --help`: the forms of the command, its arguments and an example of each
/// use. "Usage:", "or:", "Examples:" and the first group's "Options:" are what help2man turns into
/// the man page's SYNOPSIS, EXAMPLES and OPTIONS.
constexpr std::string_view kUsage =
    "Usage: cuconv INPUT OUTPUT --filter SPEC [options]\n"
    "  or:  cuconv --out-dir DIR --filter SPEC [options] INPUT...\n"
    "  or:  cuconv serve [serve options]\n"
    "  or:  cuconv --list-filters | --show-filter SPEC | --version | --help\n"
    "\n"
    "INPUT is an image (depth and alpha kept) or - for standard input. OUTPUT's extension picks the\n"
    "format; FORMAT:- (png:-) writes to standard output. With --out-dir, INPUTs are images and folders.\n"
    "`cuconv serve` keeps one process resident for later calls (cuconv serve --help).\n"
    "\n"
    "Examples:\n"
    "  cuconv photo.jpg soft.jpg --filter gaussian:0,2           one image: a Gaussian of sigma 2\n"
    "  cuconv --out-dir out/ photos/ --filter gauss5 --jobs 8    a folder, 8 codec threads\n"
    "  sbatch samples/slurm-array.sh photos/ out/ gauss5         4 Slurm tasks, a --shard each\n"
    "  cuconv serve &                                            later calls run in it, no start-up\n"
    "  cuconv in.png out.png --filter sobel-x --depth 32f --compare   checked against cv::filter2D\n";

/// The option groups of `cuconv --help`, in the order shown.
const std::vector<std::string> kGroupOrder = {"Options", "Output files and metadata", "Where and how it runs",
                                              "Batch mode (--out-dir DIR)", "Information"};

/// Registers --filter and what shapes its result (both modes). Returns --border-value, whose use
/// without --border constant is refused after parsing.
CLI::Option* add_filter_options(CLI::App& app, CliRequest& req) {
  const std::string& group = kGroupOrder[0];  // the filter's options lead: "Options"
  std::string parametric;
  for (const ParametricFilter& kind : parametric_filters())
    parametric += (parametric.empty() ? "" : ", ") + std::string(kind.syntax);
  app.add_option("-f,--filter", req.filter_spec,
                 "a preset name, a parametric filter (" + parametric +
                     "), an inline WxH[+X+Y]:v,v,... or a filter file (--list-filters; docs/filters.md)")
      ->option_text("SPEC")
      ->group(group);
  app.add_option("--border", req.border, "how pixels outside the image are made up (default reflect101; MODE below)")
      ->transform(one_of_table<Border>())
      ->option_text("MODE")
      ->group(group);
  CLI::Option* border_value =
      app.add_option("--border-value", req.border_value, "the value outside the image for --border constant")
          ->option_text("V")
          ->group(group);
  app.add_option("--anchor", req.anchor,
                 "the filter cell placed over the output pixel (default: the filter's own, else its centre)")
      ->option_text("X,Y")
      ->group(group);
  app.add_option("--delta", req.delta, "a value added to every result before rounding (default 0)")
      ->option_text("D")
      ->group(group);
  app.add_option("--depth", req.depth, "the output's depth (default same: the input's; DEPTH below)")
      ->transform(one_of_table<Depth>())
      ->option_text("DEPTH")
      ->group(group);
  app.add_option("--alpha", req.alpha, "4-channel images: filter the alpha channel (default) or keep it")
      ->transform(one_of({"filter", "keep"}, "--alpha mode"))
      ->option_text("filter|keep")
      ->group(group);
  app.add_flag("--normalize", req.normalize,
               "divide the weights by their sum (unless it is 0), as ImageMagick's -convolve does: "
               "'5x1:1,1,1,1,1' becomes a 5-tap mean")
      ->group(group);
  return border_value;
}

/// Registers the options on where the command runs and what it reports besides the image.
void add_run_options(CLI::App& app, CliRequest& req, BatchRequest& batch, bool batch_mode) {
  const std::string& group = kGroupOrder[2];
  app.add_option("--variant", req.variant,
                 "the kernel (default auto: a GPU kernel, OpenCV without a GPU; VARIANT below)")
      ->transform(one_of_table<Variant>())
      ->option_text("VARIANT")
      ->group(group);
  app.add_option("--server", req.server,
                 "auto (default): run in a `cuconv serve` process when one answers, else here; always: "
                 "only there (exit 5 when none answers); never: here (docs/serve.md)")
      ->check(CLI::IsMember({"auto", "always", "never"}, CLI::ignore_case))
      ->option_text("auto|always|never")
      ->group(group);
  app.add_option("--gpu-memory", req.gpu_memory,
                 "device memory the GPU kernels may use, e.g. 512M or 8G (binary units); larger images go "
                 "through in strips (default: the free memory less a margin)")
      ->check(by_hand([](const std::string& text) { return parse_byte_size(text).has_value(); },
                      "expected bytes as a whole number >= 1, optionally followed by K, M, G or T, alone or "
                      "with B or iB (all binary: 1K = 1KB = 1KiB = 1024)",
                      "BYTES"))
      ->option_text("BYTES")
      ->group(group);
  app.add_option("--codec", req.codec,
                 "JPEG -> JPEG files: decode and encode on the GPU (nvJPEG) or with OpenCV; auto (default): "
                 "the GPU's for batches of 16 or more such files per --jobs thread (docs/gpu-jpeg.md)")
      ->transform(one_of_table<common::Codec>())
      ->option_text("auto|gpu|opencv")
      ->group(group);
  app.add_flag("--compare", req.compare, "also run cv::filter2D and report the difference and the speed-up")
      ->group(group);
  if (batch_mode)
    app.add_option("--json", batch.json_path, "write the batch summary as JSON to FILE, or - for stdout")
        ->option_text("FILE")
        ->group(group);
  else
    app.add_flag("--json", req.json,
                 "with --compare: print the report as one JSON object (with --out-dir: "
                 "--json FILE writes the batch summary)")
        ->group(group);
  app.add_option("--bench", req.bench_runs, "also time the GPU kernel N more times: median ms, GB/s, % of a copy")
      ->check(CLI::Range(1, 100000))
      ->option_text("N")
      ->group(group);
}

/// Registers what asks for information instead of, or beside, a result.
void add_information_options(CLI::App& app, CliRequest& req, bool& version) {
  const std::string& group = kGroupOrder.back();
  app.get_help_ptr()->description("print this help and exit")->group(group);
  app.add_flag("--version", version, "print the version, the build, OpenCV, CUDA and the GPU found, and exit")
      ->group(group);
  app.add_flag("--list-filters", req.list_filters, "list the built-in filters and exit")->group(group);
  app.add_option("--show-filter", req.show_filter, "print the weights of a filter (preset, file or string) and exit")
      ->option_text("SPEC")
      ->group(group);
  CLI::Option* verbose =
      app.add_flag("-v,--verbose", req.verbose, "print each stage's time (not with -q)")->group(group);
  app.add_flag("-q,--quiet", req.quiet, "print errors only")->excludes(verbose)->group(group);
}

/// Registers every option of cuconv's command line on `app`, with its help page.
struct Registered {
  CLI::Option* border_value = nullptr;
  std::vector<CLI::Option*> batch_only;  ///< the options that make sense only with --out-dir
};
Registered add_all_options(CLI::App& app, ParsedCommand& command, bool batch_mode, bool& version) {
  CliRequest& req = command.request;
  BatchRequest& batch = command.batch;
  app.formatter(help_page(std::string(kUsage), kGroupOrder));
  if (batch_mode) {
    app.add_option("INPUT", batch.inputs, "input images and folders (their images)");
  } else {
    app.add_option("INPUT", req.input,
                   "the input image (read unchanged: depth and alpha kept), or - for standard input");
    app.add_option("OUTPUT", req.output,
                   "the output image; its extension picks the format; FORMAT:- (e.g. png:-) writes to standard output");
  }
  Registered registered;
  registered.border_value = add_filter_options(app, req);
  add_output_options(app, req);
  add_run_options(app, req, batch, batch_mode);
  registered.batch_only = add_batch_options(app, batch);
  add_information_options(app, req, version);
  app.footer(table_help<Variant>("Variants (--variant)") + "\n" + table_help<Border>("Border modes (--border)") + "\n" +
             table_help<Depth>("Output depths (--depth)"));
  app.allow_extras();  // unknown arguments: reported in cuconv's own words
  return registered;
}

/// The command that prints `message` as a usage error and exits with ExitCode::usage.
ParsedCommand refused(ParsedCommand command, const std::string& message) {
  command.action = Action::exit_now;
  command.stderr_text = "cuconv: error: " + message + "\nRun 'cuconv --help' for the options.\n";
  command.exit_code = static_cast<int>(ExitCode::usage);
  return command;
}

/// Runs CLI11 over argv. Returns the command to exit with (--help, a parse error, an argument
/// left over), or nullopt when the request is filled in.
std::optional<ParsedCommand> parse_into(CLI::App& app, ParsedCommand& command, int argc, const char* const* argv) {
  if (const std::string single_dash = single_dash_long_option(app, argc, argv); !single_dash.empty())
    return refused(std::move(command), single_dash);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    std::ostringstream out;
    std::ostringstream err;
    command.exit_code = app.exit(e, out, err);
    command.action = Action::exit_now;
    command.stdout_text = out.str();
    command.stderr_text = err.str();
    return std::move(command);
  } catch (const CLI::ParseError& e) {
    return refused(std::move(command), in_cli_terms(e.what()));
  }
  std::vector<std::string> extras = app.remaining();
  // CLI11 (with allow_extras) lists the end-of-options mark `--` among the leftovers; it is no
  // argument of its own (the first `--` is always the mark: after it every argument is a
  // positional, and one taken as an option's value is not left over).
  if (const auto mark = std::find(extras.begin(), extras.end(), "--"); mark != extras.end()) extras.erase(mark);
  if (!extras.empty()) return refused(std::move(command), unexpected_argument_message(app, extras.front()));
  return std::nullopt;
}

/// The checks that need the whole request; throws Error{usage}. Sets the action.
void check_request(ParsedCommand& command, const Registered& registered, bool batch_mode) {
  CliRequest& req = command.request;
  BatchRequest& batch = command.batch;
  if (!batch_mode && (req.input.empty() || req.output.empty()))
    throw Error(ErrorKind::usage, "INPUT and OUTPUT are required (see --help)");
  if (req.filter_spec.empty() && !(batch_mode && batch.no_filter))
    throw Error(ErrorKind::usage, "--filter is required (see --list-filters)");
  if (registered.border_value->count() > 0 && req.border != "constant")
    throw Error(ErrorKind::usage, "--border-value only applies to --border constant");
  if (batch_mode) {
    if (req.compare)
      throw Error(ErrorKind::usage, "--compare works on one image (cuconv INPUT OUTPUT), not with --out-dir");
    batch.quiet = req.quiet;
    batch.overwrite = req.overwrite;
    batch.max_pixels = req.max_pixels;
    batch.write = write_options_of(req);
    batch.strip_metadata = req.strip_metadata;
    batch.auto_orient = req.auto_orient;
    command.action = Action::filter_batch;
    return;
  }
  for (const CLI::Option* option : registered.batch_only)
    if (option->count() > 0)
      throw Error(ErrorKind::usage, option->get_name() + " applies to batch mode: add --out-dir DIR");
  if (req.json && !req.compare) throw Error(ErrorKind::usage, "--json reports a comparison; use it with --compare");
  if (req.skip_existing && req.output.ends_with(":-"))
    throw Error(ErrorKind::usage, "--skip-existing skips an output file that exists; standard output is none");
  command.action = Action::filter_image;
}

}  // namespace

ParsedCommand parse_command_line(int argc, const char* const* argv) {
  ParsedCommand command;
  const bool batch_mode = is_batch_invocation(argc, argv);
  CLI::App app{"cuconv: filter images with the weights and borders of OpenCV's cv::filter2D, on an NVIDIA GPU"};
  bool version = false;
  const Registered registered = add_all_options(app, command, batch_mode, version);
  if (std::optional<ParsedCommand> exit_now = parse_into(app, command, argc, argv)) return std::move(*exit_now);
  if (version) {
    command.action = Action::version;
    return command;
  }
  if (command.request.list_filters) {
    command.action = Action::list_filters;
    return command;
  }
  if (!command.request.show_filter.empty()) {
    command.action = Action::show_filter;
    return command;
  }
  check_request(command, registered, batch_mode);
  command.options = to_options(command.request);
  return command;
}

}  // namespace cuconv::cli
