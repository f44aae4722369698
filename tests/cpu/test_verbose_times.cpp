// SPDX-License-Identifier: Apache-2.0
// Issue 62, Deliver 5: `-v` accounts for a single image's time from its process's start: the
// start-up before main, the libraries loaded on first use (OpenCV's codec module for a PNG), the
// set-up and the stages, whose sum must come within a stated margin of the total. Served (the
// served suite runs this case through a server), the client's start-up and the libraries the
// server had loaded already.
#include "test_support.hpp"
#include "text_lines.hpp"
#include "verbose_account.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

using cuconv::test::lines_of;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;
using cuconv::test::verbose_account;
using cuconv::test::VerboseAccount;

namespace {

/// The first line of `messages` holding `needle`; empty when none does.
std::string line_with(const std::string& messages, const std::string& needle) {
  for (const std::string& line : lines_of(messages))
    if (line.find(needle) != std::string::npos) return line;
  return {};
}

bool has_line(const std::string& messages, const std::string& needle) { return !line_with(messages, needle).empty(); }

}  // namespace

TEST_CASE("verbose: -v accounts for start-up, library loads and stages within 15 ms or 15% of the total") {
  TempDir dir;
  const auto r = run_cuconv({sample("camera.png"), dir.file("out.png"), "--filter", "gauss5", "-v"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const bool served = has_line(r.err, "served by cuconv serve");
  CHECK(has_line(r.err, "info: start-up: "));
  if (served) {
    // The server loaded its libraries before (or for) this command; the client's start is its own.
    CHECK(has_line(r.err, "start-up: the client's "));
    CHECK(has_line(r.err, "libraries already loaded in the server: "));
  } else {
    // A PNG is decoded by OpenCV's codec module, which this process loads on first use.
    const std::string loads = line_with(r.err, "libraries loaded on first use: ");
    CHECK(loads.find("OpenCV image codecs ") != std::string::npos);
  }
  const std::optional<VerboseAccount> account = verbose_account(r.err);
  REQUIRE(account.has_value());
  std::vector<std::string> names;
  double sum = 0;
  for (const auto& [name, ms] : account->parts) {
    names.push_back(name);
    sum += ms;
    CHECK(ms >= -0.05);
  }
  const auto named = [&](const char* name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  CHECK(named(served ? "client start-up" : "start-up"));
  CHECK(named("read and decode"));
  CHECK(named("filter"));
  CHECK(named("encode"));
  CHECK(named("write"));
  if (!served) CHECK(named("libraries"));
  // The line's own arithmetic (each number rounded to 0.1 ms)...
  CHECK(std::abs(sum + account->unaccounted_ms - account->total_ms) <= 0.05 * (names.size() + 2));
  // ... and the claim under test: what the parts leave of the total is small.
  const double margin = std::max(15.0, 0.15 * account->total_ms);
  CHECK(std::abs(account->unaccounted_ms) <= margin);
}
