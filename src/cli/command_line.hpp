// SPDX-License-Identifier: Apache-2.0
#pragma once
// The command line, parsed in-process and checked without touching files or the GPU: what main()
// runs, and what the command-line fuzz target (tests/fuzz/fuzz_cli_options.cpp) exercises.
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <CLI/CLI.hpp>
#include <opencv2/core/mat.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <vector>

namespace cuconv::cli {

/// The single-image options (and those batch mode shares) as parsed from argv.
struct CliRequest {
  std::string input;
  std::string output;
  std::string filter_spec;
  std::string variant = "auto";
  std::string border = "reflect101";
  std::string depth = "same";
  std::string alpha = "filter";
  std::string anchor;
  std::string gpu_memory;  ///< --gpu-memory as given; empty: automatic
  double border_value = 0;
  double delta = 0;
  std::uint64_t max_pixels = kDefaultMaxPixels;
  bool verbose = false;
  bool quiet = false;
  bool list_filters = false;
  std::string show_filter;
  bool compare = false;
  bool json = false;
  int bench_runs = 0;
  bool overwrite = false;  ///< --overwrite: replace an existing output (both modes)
  /// --skip-existing: an output file that exists already is left as it is and the run succeeds
  /// (single-image mode: see skipped_existing_output; batch mode skips existing outputs anyway).
  bool skip_existing = false;
  bool normalize = false;  ///< --normalize: divide the filter's weights by their sum (FilterLoadOptions)
  // Encoder and metadata options (both modes; issue 23). Any output encoder reads these.
  std::optional<int> quality;   ///< --quality 1-100 (JPEG, WebP); unset: JPEG kDefaultJpegQuality, WebP lossless
  std::string compression;      ///< --compression: PNG level 0-9, TIFF none|lzw|deflate; empty: the format's default
  bool strip_metadata = false;  ///< --strip: write no EXIF, ICC or XMP
  bool auto_orient = false;     ///< --auto-orient: rotate the pixels upright by EXIF Orientation, reset the tag to 1
  std::string codec = "auto";   ///< --codec auto|gpu|opencv (JPEG -> JPEG jobs; both modes)
  std::string server = "auto";  ///< --server auto|always|never: where the command runs (main() acts on it)
};

/// The encoder options of `request` (quality, compression, overwrite) as write_image_atomic takes them.
[[nodiscard]] WriteOptions write_options_of(const CliRequest& request);

/// How `request` asks load_filter to treat the weights (--normalize); every load_filter call of
/// the command line (single image, batch, --show-filter) takes these.
[[nodiscard]] FilterLoadOptions filter_load_options_of(const CliRequest& request);

/// The batch options as parsed from argv.
struct BatchRequest {
  std::vector<std::string> inputs;  ///< images and directories named on the command line
  std::string out_dir;
  std::string name_template = "%s";     ///< --name
  std::vector<std::string> from_lists;  ///< --from FILE|-
  bool recursive = false;
  std::size_t jobs = 0;         ///< 0: one per hardware thread
  std::size_t gpu_threads = 0;  ///< filter threads per device; 0: BatchOptions' default (2)
  std::string devices;          ///< --devices all|0,1,...; empty: the current device
  std::string shard;            ///< --shard I/N; empty: from Slurm's array variables
  bool overwrite = false;
  bool fail_fast = false;
  bool no_filter = false;
  std::string json_path;                         ///< --json FILE|- (batch mode only)
  bool quiet = false;                            ///< -q: no progress line
  std::uint64_t max_pixels = kDefaultMaxPixels;  ///< --max-pixels (shared with single-image mode)
  WriteOptions write;                            ///< --quality, --compression (shared with single-image mode)
  bool strip_metadata = false;                   ///< --strip (shared)
  bool auto_orient = false;                      ///< --auto-orient (shared)
};

/// What the command line asks for.
enum class Action {
  filter_image,  ///< cuconv INPUT OUTPUT ...
  filter_batch,  ///< cuconv --out-dir DIR ... IN...
  list_filters,  ///< --list-filters
  show_filter,   ///< --show-filter SPEC
  version,       ///< --version (main.cpp prints it: it asks OpenCV, CUDA and the GPU)
  exit_now,      ///< --help, or a command line that does not parse: print and exit
};

struct ParsedCommand {
  Action action = Action::filter_image;
  CliRequest request;
  BatchRequest batch;
  ConvolveOptions options;  ///< filter_image and filter_batch: the request as library options
  // exit_now: what to print on stdout and stderr, and the exit code (0 for --help, ExitCode::usage
  // for a parse error, whose message reads "cuconv: error: ...", with the nearest option or value
  // names where one is close).
  std::string stdout_text;
  std::string stderr_text;
  int exit_code = 0;
};

/// Parses argv (argv[0] is the program name). Throws cuconv::Error{usage} for a command line that
/// parses but asks for something inconsistent (--border-value without --border constant, a bad
/// --anchor, a batch-only option without --out-dir ...); problems CLI11 finds (unknown options,
/// values outside their sets, "-filter" for "--filter") come back as Action::exit_now with the
/// message in stderr_text.
[[nodiscard]] ParsedCommand parse_command_line(int argc, const char* const* argv);

/// Whether argv asks for batch mode. Decided before parsing because it changes what the
/// positional arguments are (inputs only) and what --json takes (a file).
[[nodiscard]] bool is_batch_invocation(int argc, const char* const* argv);

}  // namespace cuconv::cli
