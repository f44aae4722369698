#pragma once
// Batch mode of the command line (`cuconv --out-dir DIR IN...`): its options, and running the
// batch engine (src/batch/) with log lines, a progress line and the JSON summary.
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace cuconv::cli {

/// The batch options as parsed from argv.
struct BatchRequest {
  std::vector<std::string> inputs;      ///< images and directories named on the command line
  std::string out_dir;
  std::string name_template = "%s";     ///< --name
  std::vector<std::string> from_lists;  ///< --from FILE|-
  bool recursive = false;
  std::size_t jobs = 0;                 ///< 0: one per hardware thread
  std::string devices;                  ///< --devices all|0,1,...; empty: the current device
  std::string shard;                    ///< --shard I/N; empty: from Slurm's array variables
  bool overwrite = false;
  bool fail_fast = false;
  bool no_filter = false;
  std::string json_path;                ///< --json FILE|- (batch mode only)
  bool quiet = false;                   ///< -q: no progress line
};

/// Whether argv asks for batch mode. Decided before parsing because it changes what the
/// positional arguments are (inputs only) and what --json takes (a file).
[[nodiscard]] bool is_batch_invocation(int argc, char** argv);

/// Registers the batch options on `app` (all but --json and the positionals, which main.cpp
/// registers per mode). Returns the options that make sense only with --out-dir.
std::vector<CLI::Option*> add_batch_options(CLI::App& app, BatchRequest& request);

/// Runs a batch; `filter` is unused with --no-filter. Returns the process exit code; throws
/// cuconv::Error for problems found before any image is read (usage, no inputs, name clashes).
[[nodiscard]] ExitCode run_batch_command(const BatchRequest& request, const Filter& filter,
                                         const ConvolveOptions& options);

}  // namespace cuconv::cli
