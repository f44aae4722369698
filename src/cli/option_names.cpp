// SPDX-License-Identifier: Apache-2.0
// The library's setting names written as the CLI's options (option_names.hpp).
#include "cli/option_names.hpp"

#include <algorithm>
#include <array>

namespace cuconv::cli {

namespace {

constexpr std::array<OptionName, 21> kOptionNames{{
    {"variant", "--variant"},
    {"border_value", "--border-value"},
    {"delta", "--delta"},
    {"depth", "--depth"},
    {"bench_runs", "--bench"},
    {"compare", "--compare"},
    {"gpu_memory_limit", "--gpu-memory"},
    {"max_pixels", "--max-pixels"},
    {"quality", "--quality"},
    {"compression", "--compression"},
    {"strip_metadata", "--strip"},
    {"auto_orient", "--auto-orient"},
    {"codec", "--codec"},
    {"overwrite", "--overwrite"},
    {"fail_fast", "--fail-fast"},
    {"out_dir", "--out-dir"},
    {"name_template", "--name"},
    {"input_list", "--from"},
    {"shard", "--shard"},
    {"preset_names", "--list-filters"},
    {"filter", "--filter"},
}};

}  // namespace

std::span<const OptionName> option_names() { return kOptionNames; }

std::string in_cli_terms(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const std::size_t open = text.find('`');
    const std::size_t close = open == std::string_view::npos ? open : text.find('`', open + 1);
    if (close == std::string_view::npos) break;
    const std::string_view name = text.substr(open + 1, close - open - 1);
    const auto found =
        std::find_if(kOptionNames.begin(), kOptionNames.end(), [&](const OptionName& o) { return o.setting == name; });
    out += text.substr(0, open);
    if (found == kOptionNames.end()) {
      out += text.substr(open, close - open + 1);
    } else {
      out += found->option;
    }
    text.remove_prefix(close + 1);
  }
  out += text;
  return out;
}

}  // namespace cuconv::cli
