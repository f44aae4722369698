// SPDX-License-Identifier: Apache-2.0
// A size in bytes as a user writes it (--gpu-memory, `cuconv serve --gpu-memory`).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cuconv::cli {

/// --gpu-memory: a whole number of bytes >= 1, optionally followed by a unit K, M, G or T, alone or
/// with B or iB, or B alone (all binary: 512M = 512MB = 512MiB = 512 x 2^20; any letter case);
/// nullopt for anything else, or a value beyond 2^64 - 1.
[[nodiscard]] std::optional<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace cuconv::cli
