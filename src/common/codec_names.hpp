// SPDX-License-Identifier: Apache-2.0
#pragma once
// --codec: which codec decodes and encodes JPEG -> JPEG jobs. Its names live in src/common/names.cpp
// with the other enums' (CUDA-free, so the command-line fuzz target links them alone).
#include <optional>
#include <string>
#include <string_view>

namespace cuconv::common {

enum class Codec { automatic, gpu, opencv };
[[nodiscard]] std::string_view to_string(Codec codec) noexcept;
[[nodiscard]] std::optional<Codec> parse_codec(std::string_view text) noexcept;

}  // namespace cuconv::common
