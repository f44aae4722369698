// SPDX-License-Identifier: Apache-2.0
// Hints for habits from other tools (issue 62): a MATLAB-style matrix given to --filter gets
// cuconv's inline spelling, and a single output into a missing folder gets the `mkdir -p` that
// creates it. Each hint is then followed, and the command it names works.
#include "test_support.hpp"

#include <doctest/doctest.h>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <string>

using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

TEST_CASE("newcomer hints: a MATLAB matrix for --filter gets the inline spelling, which then works") {
  TempDir dir;
  const auto matlab = run_cuconv({sample("camera.png"), dir.file("m.png"), "--filter", "[1 2; 3 4]", "--normalize"});
  CHECK(matlab.exit_code == 3);
  CHECK(matlab.err.find("MATLAB-style matrix; cuconv spells it 2x2:1,2,3,4") != std::string::npos);
  // The spelling it names is a filter cuconv takes, with the same weights row by row.
  const cuconv::Filter f = cuconv::load_filter("2x2:1,2,3,4");
  CHECK(f.width == 2);
  CHECK(f.height == 2);
  CHECK(f.at(1, 0) == 3.0);
  CHECK(run_cuconv({sample("camera.png"), dir.file("i.png"), "--filter", "2x2:1,2,3,4", "--normalize"}).exit_code == 0);
  // Commas, a single row, negative and decimal values; a ragged matrix is no matrix.
  CHECK_THROWS_WITH_AS(cuconv::load_filter("[1, -2.5, 1]"), doctest::Contains("cuconv spells it 3x1:1,-2.5,1"),
                       cuconv::Error);
  CHECK_THROWS_WITH_AS(cuconv::load_filter("[1 2 1; 2 4 2; 1 2 1]"),
                       doctest::Contains("cuconv spells it 3x3:1,2,1,2,4,2,1,2,1"), cuconv::Error);
  try {
    (void)cuconv::load_filter("[1 2; 3]");
    FAIL("a ragged matrix loaded");
  } catch (const cuconv::Error& e) {
    CHECK(std::string(e.what()).find("MATLAB") == std::string::npos);
    CHECK(std::string(e.what()).find("is not a preset") != std::string::npos);
  }
}

TEST_CASE("newcomer hints: a single output in a missing folder names the mkdir -p that creates it") {
  TempDir dir;
  const std::string folder = dir.file("new folder/sub");
  const std::string output = folder + "/out.png";
  const auto missing = run_cuconv({sample("camera.png"), output, "--filter", "gauss3"});
  CHECK(missing.exit_code == 4);
  const std::string hint = "mkdir -p '" + folder + "'";
  REQUIRE(missing.err.find(hint) != std::string::npos);
  // The hint as a shell runs it creates the folder, and the same command then succeeds.
  REQUIRE(std::system(hint.c_str()) == 0);
  CHECK(run_cuconv({sample("camera.png"), output, "--filter", "gauss3"}).exit_code == 0);
  // A folder name with nothing to quote is shown as it is.
  const auto plain = run_cuconv({sample("camera.png"), dir.file("plain/out.png"), "--filter", "gauss3"});
  CHECK(plain.err.find("mkdir -p " + dir.file("plain") + ")") != std::string::npos);
}
