// SPDX-License-Identifier: Apache-2.0
#pragma once
// The library speaks of its settings by their own names, written `like_this` (WriteOptions'
// `quality`, ConvolveOptions' `gpu_memory_limit`): a Python or C++ user sets those. The CLI
// reports the library's messages with each such name written as the option that sets it
// (`quality` -> --quality), so its users read the flags they type.
#include <span>
#include <string>
#include <string_view>

namespace cuconv::cli {

/// One setting the library names, and what the CLI writes for it.
struct OptionName {
  std::string_view setting;  ///< the library's name, as it stands between backquotes
  std::string_view option;   ///< the command line's spelling
};

/// Every setting the library's messages name (tests/scripts/library_flags.py checks that each `name` in
/// a library message is here).
[[nodiscard]] std::span<const OptionName> option_names();

/// `text` (a library message) with each `setting` of option_names() written as its option; other
/// backquoted words are left as they are.
[[nodiscard]] std::string in_cli_terms(std::string_view text);

}  // namespace cuconv::cli
