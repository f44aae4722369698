// SPDX-License-Identifier: Apache-2.0
#pragma once
// A GPU test case that cannot run on this machine (one CUDA device where it needs two) says why
// and counts as skipped, instead of passing with nothing checked: skip_case() prints the reason
// as the case's message and marks the case; gpu_main.cpp exits 77 (CTest: "Skipped") when every
// case that ran was marked and none failed, so a case run alone under CTest reports Skipped.
#include <doctest/doctest.h>

#include <string>

namespace cuconv::test {

/// Whether the test case now running called skip_case (gpu_main.cpp's listener resets it at each
/// case's start and counts it at the end).
inline bool& current_case_skipped() {
  static bool skipped = false;
  return skipped;
}

/// Says why the case cannot run here and marks it skipped; the caller returns right after.
inline void skip_case(const std::string& reason) {
  MESSAGE("SKIPPED: " << reason);
  current_case_skipped() = true;
}

}  // namespace cuconv::test
