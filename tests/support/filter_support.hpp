// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the filter suites share: the message of the bad_input error a parse throws, and a scratch
// folder to write filter files into.
#include <doctest/doctest.h>

#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>

#include "cuconv/error.hpp"
#include "test_support.hpp"

namespace cuconv::test::filters {

/// Runs `parse`, which must throw a bad_input cuconv::Error; returns its message.
template <class Parse>
std::string error_of(Parse&& parse) {
  try {
    (void)parse();
  } catch (const cuconv::Error& error) {
    CHECK(error.kind() == cuconv::ErrorKind::bad_input);
    return error.what();
  }
  FAIL("expected a cuconv::Error");
  return {};
}

/// Checks that the message of the error thrown by `parse` holds every one of `parts`.
template <class Parse>
void check_error(Parse&& parse, std::initializer_list<std::string_view> parts) {
  const std::string message = error_of(parse);
  for (const std::string_view part : parts) {
    CHECK_MESSAGE(message.find(part) != std::string::npos,
                  "message \"" << message << "\" lacks \"" << std::string(part) << "\"");
  }
}

/// The suites' scratch folder (test::TempDir) that also writes a filter file's text into itself.
class TempDir : public cuconv::test::TempDir {
 public:
  [[nodiscard]] std::string write(const std::string& name, std::string_view text) const {
    std::string file = this->file(name);
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
};

}  // namespace cuconv::test::filters
