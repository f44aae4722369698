// The command line: CLI11 options into one request, the checks that need no file or GPU, and the
// request as library options. Printing and running are main.cpp's.
#include "cli/command_line.hpp"

#include "codec/codec_names.hpp"
#include "whole_number.hpp"

#include <cuconv/error.hpp>
#include <cuconv/version.hpp>

#include <charconv>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

namespace cuconv::cli {

namespace {

template <class Enum>
std::map<std::string, Enum> names_of(std::initializer_list<Enum> values) {
  std::map<std::string, Enum> m;
  for (Enum v : values) m.emplace(std::string(to_string(v)), v);
  return m;
}

/// One integer of --anchor: blanks and a '+' before it allowed, as sscanf's %d has it, but a
/// value beyond int is refused rather than undefined.
std::optional<int> read_anchor_int(std::string_view& rest) {
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  if (!rest.empty() && rest.front() == '+') rest.remove_prefix(1);
  int value = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (ec != std::errc{}) return std::nullopt;
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  return value;
}

/// "X,Y" -> anchor; Error{usage} otherwise.
std::pair<int, int> parse_anchor(const std::string& text) {
  std::string_view rest = text;
  const std::optional<int> x = read_anchor_int(rest);
  const bool comma = !rest.empty() && rest.front() == ',';
  if (comma) rest.remove_prefix(1);
  const std::optional<int> y = comma ? read_anchor_int(rest) : std::nullopt;
  if (!x || !y || !rest.empty() || *x < 0 || *y < 0)
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

/// Registers the batch options on `app` (all but --json and the positionals, which are
/// registered per mode). Returns the options that make sense only with --out-dir.
std::vector<CLI::Option*> add_batch_options(CLI::App& app, BatchRequest& request) {
  const std::string group = "Batch mode (cuconv --out-dir DIR [options] IN...)";
  return {
      app.add_option("--out-dir", request.out_dir, "batch mode: write the results into DIR (created if missing)")
          ->group(group),
      app.add_option("--name", request.name_template,
                     "output file name: %s = input name without extension, %% = '%'; the template's "
                     "extension picks the format, none keeps the input's")
          ->capture_default_str()
          ->group(group),
      app.add_option("--from", request.from_lists, "read input paths from FILE, or - for stdin, one per line")
          ->allow_extra_args(false)  // one list per --from; what follows is an input again
          ->group(group),
      app.add_flag("--recursive", request.recursive, "directories given as inputs: also take their subdirectories' images")
          ->group(group),
      app.add_option("--jobs", request.jobs, "decode/encode threads (default: one per hardware thread)")
          ->check(CLI::Range(1, 4096))
          ->group(group),
      app.add_option("--gpu-threads", request.gpu_threads,
                     "filter threads per GPU, each with its own stream and buffers (default: 2)")
          ->check(CLI::Range(1, 64))
          ->group(group),
      app.add_option("--devices", request.devices, "all, or CUDA device indices 0,1,...: images dealt round-robin")
          ->group(group),
      app.add_option("--shard", request.shard,
                     "I/N: take the inputs whose sorted position is I modulo N (default: from "
                     "SLURM_ARRAY_TASK_ID/COUNT)")
          ->group(group),
      app.add_flag("--fail-fast", request.fail_fast, "stop at the first failing input, exit with its code")
          ->group(group),
      app.add_flag("--no-filter", request.no_filter,
                   "benchmark aid: run the same pipeline without the filter stage (decode and encode only)")
          ->group(group),
  };
}

/// A CLI11 validator that accepts what `accepts` returns true for, else says `expected`.
template <class Accepts>
CLI::Validator by_hand(Accepts accepts, std::string expected, std::string type_name) {
  return CLI::Validator(
      [accepts, expected](std::string& text) -> std::string {
        return accepts(text) ? std::string() : expected + ", got '" + text + "'";
      },
      std::move(type_name));
}

}  // namespace

bool is_batch_invocation(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--out-dir" || arg.starts_with("--out-dir=")) return true;
  }
  return false;
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::uint64_t value = 0;
  const char* const end = text.data() + text.size();
  const auto [digits_end, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || digits_end == text.data() || value == 0) return std::nullopt;
  const std::string_view suffix(digits_end, static_cast<std::size_t>(end - digits_end));
  int shift = 0;
  if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      case 'T': case 't': shift = 40; break;
      default: return std::nullopt;
    }
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  if (value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

ParsedCommand parse_command_line(int argc, const char* const* argv) {
  ParsedCommand command;
  CliRequest& req = command.request;
  BatchRequest& batch = command.batch;
  const bool batch_mode = is_batch_invocation(argc, argv);
  CLI::App app{"cuconv: filter images on an NVIDIA GPU with the semantics of cv::filter2D"};
  app.set_version_flag("--version", std::string("cuconv ") + CUCONV_VERSION);
  if (batch_mode) {
    app.add_option("INPUT", batch.inputs, "input images and directories (their images)");
  } else {
    app.add_option("INPUT", req.input, "input image (read unchanged: depth and alpha kept)");
    app.add_option("OUTPUT", req.output, "output image; the extension picks the format");
  }
  app.add_option("-f,--filter", req.filter_spec,
                 "preset name, box:N, gaussian:R,SIGMA, inline WxH[+X+Y]:v,v,..., or a filter file");
  app.add_option("--variant", req.variant, "kernel variant")
      ->check(CLI::IsMember(names_of({Variant::automatic, Variant::opencv, Variant::basic, Variant::constmem,
                                      Variant::tiled, Variant::tiled_halo, Variant::cached, Variant::fast,
                                      Variant::fft})))
      ->capture_default_str();
  app.add_option("--border", req.border, "border mode")
      ->check(CLI::IsMember(
          names_of({Border::reflect101, Border::reflect, Border::replicate, Border::constant, Border::wrap})))
      ->capture_default_str();
  auto* border_value = app.add_option("--border-value", req.border_value, "pixel value outside the image for --border constant");
  app.add_option("--anchor", req.anchor, "X,Y: filter cell placed over the output pixel (default: the filter's)");
  app.add_option("--delta", req.delta, "value added to every result before rounding")->capture_default_str();
  app.add_option("--depth", req.depth, "output depth")
      ->check(CLI::IsMember(names_of({Depth::same, Depth::u8, Depth::u16, Depth::s16, Depth::f32})))
      ->capture_default_str();
  app.add_option("--alpha", req.alpha, "4-channel images: filter the alpha channel or keep it")
      ->check(CLI::IsMember({"filter", "keep"}))
      ->capture_default_str();
  // Checked by hand: CLI11's conversion wraps "-5" and 2^64 around.
  app.add_option("--max-pixels", req.max_pixels, "refuse larger images (PNG/JPEG/TIFF/BMP: from the header, before decoding)")
      ->check(by_hand(
          [](const std::string& text) {
            const std::optional<std::uint64_t> value = detail::parse_whole_number<std::uint64_t>(text);
            return value && *value > 0;
          },
          "expected a whole number from 1 to 2^64-1", "PIXELS"))
      ->capture_default_str();
  app.add_option("--gpu-memory", req.gpu_memory,
                 "device memory the GPU variants may use (bytes, or with K/M/G/T, binary); larger images go "
                 "through in strips (default: the free memory less a margin)")
      ->check(by_hand([](const std::string& text) { return parse_byte_size(text).has_value(); },
                      "expected bytes as a whole number >= 1, optionally followed by K, M, G or T (1K = 1024)",
                      "BYTES"));
  auto* verbose = app.add_flag("-v,--verbose", req.verbose, "print each stage's time");
  app.add_flag("-q,--quiet", req.quiet, "print errors only")->excludes(verbose);
  app.add_flag("--list-filters", req.list_filters, "list the built-in filters and exit");
  app.add_option("--show-filter", req.show_filter, "print a filter (preset, file or string) and exit");
  app.add_flag("--compare", req.compare, "also run cv::filter2D and report the difference and speed-up");
  if (batch_mode)
    app.add_option("--json", batch.json_path, "write the batch summary as JSON to FILE, or - for stdout");
  else
    app.add_flag("--json", req.json,
                 "with --compare: print the report as one JSON object (batch mode: --json FILE|- "
                 "writes the summary)");
  app.add_option("--bench", req.bench_runs,
                 "also time the GPU kernel N more times: median ms, GB/s and % of a device-to-device copy")
      ->check(CLI::Range(1, 100000));
  app.add_option("--codec", req.codec,
                 "JPEG -> JPEG: decode and encode with nvJPEG on the GPU (gpu), with OpenCV (opencv), or gpu "
                 "when a GPU and nvJPEG are usable (auto)")
      ->check(CLI::IsMember(codec::codec_names()))
      ->capture_default_str();
  app.add_flag("--overwrite", req.overwrite,
               "replace an existing output (default: never; one image: refused, exit 4; batch: skipped)");
  const std::vector<CLI::Option*> batch_only = add_batch_options(app, batch);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {  // --help and --version (CLI::Success) too
    std::ostringstream out;
    std::ostringstream err;
    const int code = app.exit(e, out, err);
    command.action = Action::exit_now;
    command.stdout_text = out.str();
    command.stderr_text = err.str();
    command.exit_code = dynamic_cast<const CLI::Success*>(&e) != nullptr ? code : static_cast<int>(ExitCode::usage);
    return command;
  }

  if (req.list_filters) {
    command.action = Action::list_filters;
    return command;
  }
  if (!req.show_filter.empty()) {
    command.action = Action::show_filter;
    return command;
  }
  if (!batch_mode && (req.input.empty() || req.output.empty()))
    throw Error(ErrorKind::usage, "INPUT and OUTPUT are required (see --help)");
  if (req.filter_spec.empty() && !(batch_mode && batch.no_filter))
    throw Error(ErrorKind::usage, "--filter is required (see --list-filters)");
  if (border_value->count() > 0 && req.border != "constant")
    throw Error(ErrorKind::usage, "--border-value only applies to --border constant");
  if (batch_mode) {
    if (req.compare)
      throw Error(ErrorKind::usage, "--compare works on one image (cuconv INPUT OUTPUT), not with --out-dir");
    batch.quiet = req.quiet;
    batch.overwrite = req.overwrite;
    batch.max_pixels = req.max_pixels;
    command.action = Action::filter_batch;
  } else {
    for (const CLI::Option* option : batch_only)
      if (option->count() > 0)
        throw Error(ErrorKind::usage, option->get_name() + " applies to batch mode: add --out-dir DIR");
    if (req.json && !req.compare) throw Error(ErrorKind::usage, "--json reports a comparison; use it with --compare");
    command.action = Action::filter_image;
  }
  command.options = to_options(req);
  return command;
}

}  // namespace cuconv::cli
