// SPDX-License-Identifier: Apache-2.0
// The host copy pool (src/gpu/memory/host_copy_pool.hpp) on the CPU: every chunk copied once,
// ready() called once a chunk in increasing order and only after its copy returned, the pool's
// threads really taking chunks, an exception from ready() stopping the job without a hang, and
// several callers at once (all but one copy alone), one copying alone beside one that asks, and
// how long the workers look for the next job; the staging copy with streaming stores.
#include "gpu/memory/host_copy_pool.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using cuconv::gpu::HostCopyPool;

namespace {

/// What one run() did: how often each chunk was copied, the order of ready() calls, whether
/// each ready() found its copy finished, and the threads that copied.
struct Record {
  explicit Record(int count) : copies(static_cast<std::size_t>(count)), copied(static_cast<std::size_t>(count)) {}
  std::vector<std::atomic<int>> copies;
  std::vector<std::atomic<bool>> copied;
  std::vector<int> ready_order;
  bool ready_before_copy = false;
  std::mutex mutex;
  std::set<std::thread::id> threads;
};

void run_recorded(HostCopyPool& pool, int count, bool parallel, Record& r,
                  std::chrono::microseconds copy_time = std::chrono::microseconds{0}) {
  pool.run(
      count, parallel,
      [&](int i) {
        if (copy_time.count() > 0) std::this_thread::sleep_for(copy_time);
        r.copies[static_cast<std::size_t>(i)].fetch_add(1);
        {
          const std::lock_guard lock(r.mutex);
          r.threads.insert(std::this_thread::get_id());
        }
        r.copied[static_cast<std::size_t>(i)].store(true);
      },
      [&](int i) {
        if (!r.copied[static_cast<std::size_t>(i)].load()) r.ready_before_copy = true;
        r.ready_order.push_back(i);
      });
}

void check_complete(Record& r, int count) {
  for (int i = 0; i < count; ++i) CHECK_MESSAGE(r.copies[static_cast<std::size_t>(i)].load() == 1, "chunk " << i);
  CHECK_FALSE(r.ready_before_copy);
  REQUIRE(r.ready_order.size() == static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) CHECK(r.ready_order[static_cast<std::size_t>(i)] == i);
}

}  // namespace

TEST_CASE("host copy pool: every chunk copied once, ready in order after its copy") {
  HostCopyPool pool(4);
  for (const bool parallel : {false, true})
    for (const int count : {0, 1, 2, 3, 8, 17, 200}) {
      CAPTURE(parallel);
      CAPTURE(count);
      for (int round = 0; round < 20; ++round) {
        Record r(count);
        run_recorded(pool, count, parallel, r, std::chrono::microseconds{round % 3 == 0 ? 50 : 0});
        check_complete(r, count);
      }
    }
}

TEST_CASE("host copy pool: the pool's threads take chunks, and a caller asking for one thread copies alone") {
  HostCopyPool pool(4);
  // Chunks long enough for sleeping workers to wake while some are left.
  Record parallel(16);
  run_recorded(pool, 16, true, parallel, std::chrono::milliseconds{2});
  check_complete(parallel, 16);
  CHECK(parallel.threads.size() >= 2);
  CHECK(parallel.threads.size() <= 4);
  CHECK(pool.parallel_jobs() == 1);
  Record alone(16);
  run_recorded(pool, 16, false, alone, std::chrono::milliseconds{1});
  check_complete(alone, 16);
  CHECK(alone.threads == std::set<std::thread::id>{std::this_thread::get_id()});
  CHECK(pool.parallel_jobs() == 1);
  HostCopyPool single(1);
  Record one(8);
  run_recorded(single, 8, true, one, std::chrono::milliseconds{1});
  check_complete(one, 8);
  CHECK(one.threads.size() == 1);
  CHECK(single.parallel_jobs() == 0);
}

TEST_CASE("host copy pool: ready() throwing stops the job and reaches the caller") {
  HostCopyPool pool(4);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> copies{0};
    std::vector<int> ready;
    CHECK_THROWS_AS(pool.run(
                        64, true,
                        [&](int) {
                          // 1 ms a chunk: 3 workers would need 20 ms for all 64, far longer
                          // than the caller takes to reach ready(3) on a loaded machine
                          std::this_thread::sleep_for(std::chrono::milliseconds{1});
                          copies.fetch_add(1);
                        },
                        [&](int i) {
                          ready.push_back(i);
                          if (i == 3) throw std::runtime_error("transfer refused");
                        }),
                    std::runtime_error);
    CHECK(ready == std::vector<int>{0, 1, 2, 3});
    CHECK(copies.load() < 64);  // chunks not yet taken are left
    // Nothing of the stopped job touches the next one.
    Record r(32);
    run_recorded(pool, 32, true, r);
    check_complete(r, 32);
  }
}

TEST_CASE("host copy pool: callers on several threads at once each get every chunk") {
  HostCopyPool pool(4);
  constexpr int kCallers = 4;
  constexpr int kRounds = 50;
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < kRounds; ++round) {
        Record r(24);
        run_recorded(pool, 24, true, r, std::chrono::microseconds{round % 5 == 0 ? 20 : 0});
        bool ok = !r.ready_before_copy && r.ready_order.size() == 24;
        for (int i = 0; i < 24 && ok; ++i)
          ok = r.copies[static_cast<std::size_t>(i)].load() == 1 && r.ready_order[static_cast<std::size_t>(i)] == i;
        if (!ok) failures.fetch_add(1);
      }
    });
  for (std::thread& t : callers) t.join();
  CHECK(failures.load() == 0);
}

TEST_CASE("host copy pool: a caller copying alone does not keep the workers from another that asks") {
  HostCopyPool pool(4);
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::thread alone([&] {
    pool.run(
        2, false,
        [&](int) {
          started.store(true);
          while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds{1});
        },
        [](int) {});
  });
  while (!started.load()) std::this_thread::yield();
  Record r(16);
  run_recorded(pool, 16, true, r, std::chrono::milliseconds{2});
  release.store(true);
  alone.join();
  check_complete(r, 16);
  CHECK(pool.parallel_jobs() == 1);
  CHECK(r.threads.size() >= 2);
}

TEST_CASE("host copy pool: workers stay awake twice the interval between jobs, up to 2 ms") {
  using std::chrono::microseconds;
  // A loop of 512x512 float calls starts a copy about every 150 us: the workers must still be
  // awake for the next one.
  CHECK(HostCopyPool::spin_after(microseconds{150}) == microseconds{300});
  CHECK(HostCopyPool::spin_after(microseconds{1000}) == microseconds{2000});
  // Never shorter than 100 us; jobs further apart than 1 ms (or a clock that went back) let the
  // workers sleep after 100 us.
  CHECK(HostCopyPool::spin_after(microseconds{20}) == microseconds{100});
  CHECK(HostCopyPool::spin_after(microseconds{1001}) == microseconds{100});
  CHECK(HostCopyPool::spin_after(microseconds{50000}) == microseconds{100});
  CHECK(HostCopyPool::spin_after(microseconds{-5}) == microseconds{100});
}

TEST_CASE("host copy pool: run() sets the workers' spin from the interval between its jobs") {
  using std::chrono::microseconds;
  using Clock = std::chrono::steady_clock;
  HostCopyPool pool(3);
  Record first(6);
  run_recorded(pool, 6, true, first);
  CHECK(pool.spin() == microseconds{100});  // one job: no interval yet
  // Two jobs at least 300 us apart (from the first's return to the second's call) and at most
  // 1 ms (from before the first to the second's return): the spin follows the interval, 600 us
  // to 2 ms. A loaded machine can stretch the pair past 1 ms, where the rule gives 100 us: those
  // tries repeat.
  bool checked = false;
  for (int attempt = 0; attempt < 200 && !checked; ++attempt) {
    Record a(6), b(6);
    const Clock::time_point before = Clock::now();
    run_recorded(pool, 6, true, a);
    const Clock::time_point first_done = Clock::now();
    while (Clock::now() - first_done < microseconds{300}) {
    }
    run_recorded(pool, 6, true, b);
    if (Clock::now() - before > microseconds{1000}) continue;
    CHECK(pool.spin() >= microseconds{600});
    CHECK(pool.spin() <= microseconds{2000});
    checked = true;
  }
  CHECK(checked);
}

TEST_CASE("copy_streaming: every byte, at every alignment of source and destination and every length up to 300") {
  std::vector<unsigned char> source(512);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<unsigned char>(i * 37 + 11);
  std::vector<unsigned char> destination(512);
  int wrong = 0;
  for (std::size_t from = 0; from < 16; ++from)
    for (std::size_t to = 0; to < 16; ++to)
      for (std::size_t bytes = 0; bytes <= 300; ++bytes) {
        std::fill(destination.begin(), destination.end(), static_cast<unsigned char>(0xA5));
        cuconv::gpu::copy_streaming(destination.data() + to, source.data() + from, bytes);
        cuconv::gpu::streaming_fence();
        for (std::size_t i = 0; i < destination.size(); ++i) {
          const bool inside = i >= to && i < to + bytes;
          const unsigned char want = inside ? source[from + i - to] : static_cast<unsigned char>(0xA5);
          wrong += destination[i] != want ? 1 : 0;  // a byte not copied, or one written outside
        }
      }
  CHECK(wrong == 0);
}
