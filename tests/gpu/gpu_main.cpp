// SPDX-License-Identifier: Apache-2.0
// Entry point of the GPU suite: without a usable CUDA device it says why and exits 77, which
// CTest reports as "Skipped" (SKIP_RETURN_CODE); listing test cases needs no device. A run in
// which every case that ran skipped itself (skip.hpp: a two-device case on one device) and none
// failed also exits 77, so CTest's one-case entries report such a case as Skipped, not passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "skip.hpp"

#include <cuconv/convolve.hpp>

#include <cstdio>
#include <cstring>

namespace {

/// Counts the cases that ran, failed, and skipped themselves (a listener: it prints nothing).
struct SkipCounter : doctest::IReporter {
  static inline unsigned ran = 0;
  static inline unsigned failed = 0;
  static inline unsigned skipped = 0;

  explicit SkipCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    ran = stats.numTestCasesPassingFilters;
    failed = stats.numTestCasesFailed;
  }
  void test_case_start(const doctest::TestCaseData&) override { cuconv::test::current_case_skipped() = false; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    if (cuconv::test::current_case_skipped()) ++skipped;
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

REGISTER_LISTENER("skip_counter", 1, SkipCounter);

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    listing = listing || std::strncmp(argv[i], "--list", 6) == 0 || std::strncmp(argv[i], "-l", 2) == 0;
  std::string reason;
  if (!listing && !cuconv::cuda_device_available(&reason)) {
    std::printf("SKIPPED: GPU tests need a CUDA device: %s\n", reason.c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (result == 0 && !context.shouldExit() && SkipCounter::ran > 0 && SkipCounter::failed == 0 &&
      SkipCounter::skipped == SkipCounter::ran) {
    std::printf("SKIPPED: every test case that ran skipped itself (see its message)\n");
    return 77;
  }
  return result;
}
