// SPDX-License-Identifier: Apache-2.0
// The byte budget that bounds the GPU codec pipeline's decoded images (src/engine/byte_budget.hpp),
// step by step: a take that does not fit waits until enough is given back, one that fits exactly
// does not, and the peak is what was held at once. (test_batch_engine.cpp's threaded case hammers
// it; its takers hold bytes so briefly that a doubled limit went unseen there.)
#include "engine/byte_budget.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

TEST_CASE("byte budget: a take that does not fit waits for a give, one that fits exactly does not") {
  cuconv::engine::ByteBudget budget(100);
  budget.take(60);
  budget.take(40);  // 100: exactly the limit
  budget.give(40);
  std::atomic<bool> taken{false};
  std::thread taker([&] {
    budget.take(50);  // 60 + 50 > 100: waits
    taken = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(taken.load());
  budget.give(60);
  taker.join();
  CHECK(taken.load());
  CHECK(budget.peak() == 100);
  budget.give(50);
}
