// SPDX-License-Identifier: Apache-2.0
// stderr routed by thread (src/common/thread_stderr.hpp), the way `cuconv serve` hands each
// command the image libraries' lines: threads printing at once through C's stderr and std::cerr
// each reach their own sink, whole lines only, and a thread without one writes to descriptor 2.
#include "common/thread_stderr.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

class Collect final : public cuconv::common::StderrSink {
 public:
  void line(std::string_view text) override {
    const std::lock_guard lock(mutex_);
    lines_.emplace_back(text);
  }
  [[nodiscard]] std::vector<std::string> lines() {
    const std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

}  // namespace

TEST_CASE("thread stderr: concurrent writers through stderr and std::cerr each reach their own sink, line by line") {
  cuconv::common::route_stderr_by_thread();
  REQUIRE(cuconv::common::stderr_routed_by_thread());
  constexpr int kThreads = 8;
  constexpr int kLines = 200;
  std::vector<Collect> sinks(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &sinks] {
      const cuconv::common::ThreadStderrSink bound(&sinks[static_cast<std::size_t>(t)]);
      for (int i = 0; i < kLines; ++i) {
        // A line in two writes, as libpng prints its warnings, and one through std::cerr.
        std::fprintf(stderr, "libpng warning: thread %d", t);
        std::fprintf(stderr, " line %d\n", i);
        std::cerr << "OpenCV note " << t << ' ' << i << '\n';
      }
      std::fprintf(stderr, "unfinished %d", t);  // handed on when the binding ends
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    const std::vector<std::string> lines = sinks[static_cast<std::size_t>(t)].lines();
    REQUIRE(lines.size() == 2 * kLines + 1);
    for (int i = 0; i < kLines; ++i) {
      CHECK(lines[static_cast<std::size_t>(2 * i)] ==
            "libpng warning: thread " + std::to_string(t) + " line " + std::to_string(i));
      CHECK(lines[static_cast<std::size_t>(2 * i + 1)] == "OpenCV note " + std::to_string(t) + " " + std::to_string(i));
    }
    CHECK(lines.back() == "unfinished " + std::to_string(t));
  }
  // Bindings nest and come back.
  Collect outer, inner;
  {
    const cuconv::common::ThreadStderrSink a(&outer);
    {
      const cuconv::common::ThreadStderrSink b(&inner);
      CHECK(cuconv::common::thread_stderr_sink() == &inner);
      std::fprintf(stderr, "to inner\n");
    }
    CHECK(cuconv::common::thread_stderr_sink() == &outer);
    std::fprintf(stderr, "to outer\n");
  }
  CHECK(cuconv::common::thread_stderr_sink() == nullptr);
  CHECK(inner.lines() == std::vector<std::string>{"to inner"});
  CHECK(outer.lines() == std::vector<std::string>{"to outer"});
}
