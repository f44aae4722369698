// Names of the public enums (Variant, Border, Depth) and of --codec, as the command line and the
// docs spell them.
// Host code only, no CUDA, so the command-line fuzz target (tests/fuzz) can link it on its own.
#include "codec/codec_names.hpp"

#include <cuconv/convolve.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cuconv {

namespace {

constexpr std::array<std::pair<Variant, std::string_view>, 9> kVariantNames{{
    {Variant::automatic, "auto"},
    {Variant::opencv, "opencv"},
    {Variant::basic, "basic"},
    {Variant::constmem, "constmem"},
    {Variant::tiled, "tiled"},
    {Variant::tiled_halo, "tiled-halo"},
    {Variant::cached, "cached"},
    {Variant::fast, "fast"},
    {Variant::fft, "fft"},
}};
constexpr std::array<std::pair<Border, std::string_view>, 5> kBorderNames{{
    {Border::reflect101, "reflect101"},
    {Border::reflect, "reflect"},
    {Border::replicate, "replicate"},
    {Border::constant, "constant"},
    {Border::wrap, "wrap"},
}};
constexpr std::array<std::pair<Depth, std::string_view>, 5> kDepthNames{{
    {Depth::same, "same"}, {Depth::u8, "8u"}, {Depth::u16, "16u"}, {Depth::s16, "16s"}, {Depth::f32, "32f"},
}};
constexpr std::array<std::pair<codec::Codec, std::string_view>, 3> kCodecNames{{
    {codec::Codec::automatic, "auto"}, {codec::Codec::gpu, "gpu"}, {codec::Codec::opencv, "opencv"},
}};

template <class Enum, std::size_t N>
std::string_view name_of(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}
template <class Enum, std::size_t N>
std::optional<Enum> value_of(const std::array<std::pair<Enum, std::string_view>, N>& table,
                             std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Variant v) noexcept { return name_of(kVariantNames, v); }
std::string_view to_string(Border b) noexcept { return name_of(kBorderNames, b); }
std::string_view to_string(Depth d) noexcept { return name_of(kDepthNames, d); }
std::optional<Variant> parse_variant(std::string_view s) noexcept { return value_of(kVariantNames, s); }
std::optional<Border> parse_border(std::string_view s) noexcept { return value_of(kBorderNames, s); }
std::optional<Depth> parse_depth(std::string_view s) noexcept { return value_of(kDepthNames, s); }

namespace codec {
std::string_view to_string(Codec c) noexcept { return name_of(kCodecNames, c); }
std::optional<Codec> parse_codec(std::string_view s) noexcept { return value_of(kCodecNames, s); }
const std::vector<std::string>& codec_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [codec, name] : kCodecNames) n.emplace_back(name);
    return n;
  }();
  return names;
}
}  // namespace codec

}  // namespace cuconv
