// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the command line: the input, split at NUL bytes and newlines, is argv
// (after "cuconv"; at most kMaxArgs arguments) for parse_command_line, which never reads a file,
// runs a filter or touches the GPU. A parse either comes back as a request that satisfies what
// main() relies on, or as CLI11's refusal (Action::exit_now), or throws cuconv::Error{usage};
// anything else (another exception, a crash, a sanitizer report) is a bug.
#include "cli/command_line.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kMaxArgs = 16;

std::vector<std::string> split_arguments(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"cuconv"};
  std::string current;
  for (std::size_t i = 0; i < size && args.size() <= kMaxArgs; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (args.size() <= kMaxArgs) args.push_back(current);
  return args;
}

void check_invariants(const cuconv::cli::ParsedCommand& c) {
  using cuconv::cli::Action;
  bool ok = true;
  switch (c.action) {
    case Action::exit_now:
      // --help prints to stdout and exits 0; a refusal prints to stderr and exits 2.
      ok = (c.exit_code == 0 && !c.stdout_text.empty()) ||
           (c.exit_code == static_cast<int>(cuconv::ExitCode::usage) && !c.stderr_text.empty());
      break;
    case Action::filter_image:
      ok = !c.request.input.empty() && !c.request.output.empty() && !c.request.filter_spec.empty();
      [[fallthrough]];
    case Action::filter_batch:
      // What main() hands the library: names that exist, an anchor that is "none" or non-negative,
      // the memory limit as given.
      ok = ok && cuconv::to_string(c.options.variant) != "?" && cuconv::to_string(c.options.border) != "?" &&
           cuconv::to_string(c.options.depth) != "?" && c.options.anchor_x >= -1 && c.options.anchor_y >= -1 &&
           (c.options.anchor_x == -1) == (c.options.anchor_y == -1) &&
           (c.request.gpu_memory.empty() ? c.options.gpu_memory_limit == 0 : c.options.gpu_memory_limit > 0) &&
           c.request.max_pixels > 0;
      break;
    case Action::list_filters:
      break;
    case Action::version:
      break;
    case Action::show_filter:
      ok = !c.request.show_filter.empty();
      break;
  }
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> args = split_arguments(data, size);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    check_invariants(cuconv::cli::parse_command_line(static_cast<int>(argv.size()), argv.data()));
  } catch (const cuconv::Error& e) {
    // Refused after parsing (conflicting options, a bad --anchor ...): must be a usage error.
    if (e.kind() != cuconv::ErrorKind::usage) std::abort();
  }
  return 0;
}
