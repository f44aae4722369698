// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one list of each enum's values (Border, Depth, and --codec's Codec; Variant's is
// cuconv::kVariantList, beside its enum in the public header): the name the command line and the
// docs use and a one-line description for --help. to_string/parse_*, gpu_variants(), the CLI
// validators and the tests all read these tables, so a new value is added there and nowhere
// else. Host code only, no CUDA.
#include "common/codec_names.hpp"

#include <cuconv/convolve.hpp>

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv::common {

template <class Enum>
struct Entry {
  Enum value;
  std::string_view name;  ///< as typed on the command line (lower case; parsing ignores case)
  std::string_view help;  ///< one line for --help and docs/cli.md
};

/// The variants' list lives in the public header, beside the enum (cuconv::kVariantList).
inline constexpr const auto& kVariants = kVariantList;

inline constexpr std::array<Entry<Border>, 5> kBorders{{
    {Border::reflect101, "reflect101", "gfedcb|abcdefgh|gfedcba (OpenCV's default)"},
    {Border::reflect, "reflect", "fedcba|abcdefgh|hgfedcb"},
    {Border::replicate, "replicate", "aaaaaa|abcdefgh|hhhhhhh"},
    {Border::constant, "constant", "vvvvvv|abcdefgh|vvvvvvv, v from `border_value`"},
    {Border::wrap, "wrap", "cdefgh|abcdefgh|abcdefg"},
}};

inline constexpr std::array<Entry<Depth>, 5> kDepths{{
    {Depth::same, "same", "the input's depth"},
    {Depth::u8, "8u", "8-bit unsigned, saturated"},
    {Depth::u16, "16u", "16-bit unsigned, saturated"},
    {Depth::s16, "16s", "16-bit signed, saturated"},
    {Depth::f32, "32f", "32-bit float, not rounded"},
}};

inline constexpr std::array<Entry<common::Codec>, 3> kCodecs{{
    {common::Codec::automatic, "auto", "OpenCV's codecs while they are the faster ones (docs/gpu-jpeg.md)"},
    {common::Codec::gpu, "gpu", "the GPU codec of the files' format, on the GPU (exit 5 without it)"},
    {common::Codec::opencv, "opencv", "OpenCV's codecs on the CPU"},
}};

template <class Enum>
struct Table;
template <>
struct Table<Variant> {
  static constexpr std::span<const VariantInfo> entries{kVariantList};
  static constexpr std::string_view what = "variant";
};
template <>
struct Table<Border> {
  static constexpr std::span<const Entry<Border>> entries{kBorders};
  static constexpr std::string_view what = "border mode";
};
template <>
struct Table<Depth> {
  static constexpr std::span<const Entry<Depth>> entries{kDepths};
  static constexpr std::string_view what = "depth";
};

template <>
struct Table<common::Codec> {
  static constexpr std::span<const Entry<common::Codec>> entries{kCodecs};
  static constexpr std::string_view what = "codec";
};

/// The names of a table, in table order.
template <class Enum>
std::vector<std::string> all_names() {
  std::vector<std::string> out;
  for (const auto& e : Table<Enum>::entries) out.emplace_back(e.name);
  return out;
}

/// `a` and `b` equal ignoring ASCII letter case.
[[nodiscard]] bool equal_ignoring_case(std::string_view a, std::string_view b) noexcept;

/// A word other tools (ImageMagick, libvips, OpenCV, NumPy/SciPy, MATLAB) use where cuconv has
/// a name of its own: "mirror" for a border, "float" for a depth, "blur" for a filter. `ours` is
/// what cuconv calls it, a value of one of the tables above, a preset or a parametric filter.
struct ForeignWord {
  std::string_view word;  ///< as the other tool spells it (matched ignoring case)
  std::string_view ours;
};

/// The one list of other tools' words, read by nearest_names (values, options) and the filter
/// parser's "did you mean" (presets). A word may map to several names, best first.
inline constexpr std::array<ForeignWord, 34> kForeignWords{{
    // Borders: ImageMagick -virtual-pixel, libvips extend, SciPy/NumPy modes, MATLAB imfilter.
    {"mirror", "reflect"},     // ImageMagick, libvips: the edge pixel repeated
    {"mirror", "reflect101"},  // SciPy's 'mirror': the edge pixel not repeated
    {"symmetric", "reflect"},  // NumPy pad, MATLAB
    {"reflect_101", "reflect101"},
    {"default", "reflect101"},  // OpenCV's BORDER_DEFAULT
    {"edge", "replicate"},      // ImageMagick, NumPy pad
    {"nearest", "replicate"},   // SciPy
    {"copy", "replicate"},      // libvips
    {"clamp", "replicate"},
    {"extend", "replicate"},
    {"tile", "wrap"},      // ImageMagick
    {"repeat", "wrap"},    // libvips
    {"circular", "wrap"},  // MATLAB
    {"periodic", "wrap"},
    {"black", "constant"},       // ImageMagick, libvips
    {"background", "constant"},  // ImageMagick, libvips
    {"zero", "constant"},
    {"fill", "constant"},
    // Depths.
    {"float", "32f"},
    {"float32", "32f"},
    {"f32", "32f"},
    {"uint8", "8u"},
    {"uchar", "8u"},
    {"uint16", "16u"},
    {"ushort", "16u"},
    {"int16", "16s"},
    {"short", "16s"},
    // Variants and codecs.
    {"gpu", "auto"},
    {"cuda", "auto"},
    {"cpu", "opencv"},
    {"nvjpeg", "gpu"},
    // Filters (presets and parametric).
    {"blur", "gauss5"},
    {"blur", "box:N"},
    {"mean", "box:N"},
}};

/// What cuconv calls `word` in other tools' vocabulary (kForeignWords), best first; empty for a
/// word not in the list.
[[nodiscard]] std::vector<std::string> names_for_foreign_word(std::string_view word);

/// The candidates closest to `word` by edit distance (ignoring case), best first, at most
/// `limit`; only those near enough to be a typo (distance at most a third of the longer word,
/// and at least 1) or that start with `word` (3 letters or more), so an unrelated word gets none.
/// Candidates that other tools call `word` (kForeignWords: "mirror" -> "reflect") come first.
[[nodiscard]] std::vector<std::string> nearest_names(std::string_view word, const std::vector<std::string>& candidates,
                                                     std::size_t limit = 3);

/// "'a'", "'a' or 'b'", "'a', 'b' or 'c'".
[[nodiscard]] std::string quoted_alternatives(const std::vector<std::string>& names);

}  // namespace cuconv::common
