// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the filter parsers. The first byte picks the parser; the rest is the text.
// A parse either throws cuconv::Error or returns a filter that satisfies every invariant the
// kernels rely on; anything else (another exception, a crash, a sanitizer report) is a bug.
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string_view>

namespace {

void check_invariants(const cuconv::Filter& f) {
  const bool size_ok = f.width >= 1 && f.height >= 1 && f.width <= cuconv::kMaxFilterSide &&
                       f.height <= cuconv::kMaxFilterSide &&
                       f.weights.size() == static_cast<std::size_t>(f.width) * static_cast<std::size_t>(f.height);
  const bool anchor_ok = f.anchor_x >= -1 && f.anchor_x < f.width && f.anchor_y >= -1 && f.anchor_y < f.height;
  // Finite in float, the precision the kernels hold weights and offset in (issue 48: a .mat scale
  // of 1e-320 made every weight infinite).
  const auto finite_float = [](double v) {
    return std::isfinite(v) && std::abs(v) <= std::numeric_limits<float>::max();
  };
  bool finite = finite_float(f.offset);
  for (double w : f.weights) finite = finite && finite_float(w);
  if (!size_ok || !anchor_ok || !finite) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 4) {
      case 0:
        check_invariants(cuconv::parse_plain_matrix(text, "fuzz.txt"));
        break;
      case 1:
        check_invariants(cuconv::parse_vips_mat(text, "fuzz.mat"));
        break;
      case 2:
        check_invariants(cuconv::parse_inline_filter(text));
        break;
      default:
        // Resolution as --filter does it; paths are only tried when they exist, never created.
        check_invariants(cuconv::load_filter(text));
        break;
    }
  } catch (const cuconv::Error&) {
    // Rejected input: the expected outcome for most of what the fuzzer makes.
  }
  return 0;
}
