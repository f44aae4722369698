// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers the adversarial suites share: writing crafted bytes to a file, and the kind and message
// of the cuconv::Error a call throws.
#include <cuconv/error.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <string>
#include <utility>

namespace cuconv::test::adversarial {

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// The kind and message of the Error `f` throws; fails the test when it throws none.
inline std::pair<ErrorKind, std::string> error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  FAIL("no cuconv::Error thrown");
  return {ErrorKind::internal, ""};
}

}  // namespace cuconv::test::adversarial
