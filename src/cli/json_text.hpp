// SPDX-License-Identifier: Apache-2.0
#pragma once
// JSON text from strings that are not always UTF-8: file names on Linux are bytes, and
// nlohmann::json refuses to dump a string that is not valid UTF-8 (type_error 316), which would
// end a run that has done its work without its summary.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace cuconv::cli {

/// `text` as valid UTF-8: well-formed UTF-8 sequences are kept as they are; every other byte
/// becomes the four characters `\xHH` (its value in upper-case hexadecimal), as Python's
/// "backslashreplace" writes it, so the name stays recognisable (docs/batch.md documents it).
/// A name holding the characters `\xHH` itself reads the same: the summary is for people and
/// scripts that match names, not a byte-exact record.
[[nodiscard]] std::string json_safe(std::string_view text);

/// `value` as JSON text (nlohmann's dump with `indent`), every string and object key passed
/// through json_safe first: never throws for bytes that are not UTF-8.
[[nodiscard]] std::string json_dump(const nlohmann::json& value, int indent = -1);

}  // namespace cuconv::cli
