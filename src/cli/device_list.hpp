// SPDX-License-Identifier: Apache-2.0
#pragma once
// `--devices all|0,1,...`, the option of batch mode and of `cuconv serve`.
#include <string>
#include <vector>

namespace cuconv::cli {

/// --devices: "all" or a comma-separated list of device indices, each checked to exist (Error
/// usage naming the option; Error gpu when there is no device at all). `uses_gpu` false (the
/// opencv variant, --no-filter) ignores it; no devices means the current one (or the CPU fallback).
[[nodiscard]] std::vector<int> parse_devices(const std::string& text, bool uses_gpu);

}  // namespace cuconv::cli
