// SPDX-License-Identifier: Apache-2.0
// How kernels that walk strips of rows cut an image: strip_rows_for_warmup, for kernels whose
// strips each read warm-up rows that give no output (`fast`'s double-precision kernel), takes the
// strip count of the fewest waves x (rows + warm-up), never worse by that count than
// strip_rows_for_waves' fixed 128 to 32 rows.
#include "gpu/launch/occupancy.cuh"

#include <doctest/doctest.h>

#include <algorithm>

namespace {

using cuconv::gpu::strip_rows_for_warmup;
using cuconv::gpu::strip_rows_for_waves;

/// Waves x (rows + warm-up): the time the choice minimises, in rows.
long long cost(int height, int columns, int slots, int warmup, int rows) {
  const long long strips = (height + rows - 1) / rows;
  return (columns * strips + slots - 1) / slots * (rows + warmup);
}

}  // namespace

TEST_CASE("launch strips: the double sums' strips minimise waves x (rows + warm-up)") {
  // An H100: 132 SMs, 2 blocks of the 15x15 kernel each; 256 elements a block column.
  constexpr int kSlots = 264;
  // 8192^2: 32 columns; 8 strips of 1024 rows fill one wave (256 blocks): 1 x 1038 rows, where
  // 128-row strips take 8 waves of 142.
  CHECK(strip_rows_for_warmup(8192, 32, kSlots, 14) == 1024);
  CHECK(strip_rows_for_waves(8192, 32, kSlots) == 128);
  // 2896^2: 12 columns; 22 strips of 132 rows, one wave (264 blocks), where 32-row strips take 5
  // waves of 46 rows.
  CHECK(strip_rows_for_warmup(2896, 12, kSlots, 14) == 132);
  CHECK(strip_rows_for_waves(2896, 12, kSlots) == 32);
  // 31x31 (30 warm-up rows) on 4096^2: 16 columns, 16 strips of 256 rows.
  CHECK(strip_rows_for_warmup(4096, 16, kSlots, 30) == 256);
  // A short image and a narrow one: every strip count is tried, down to one row a strip.
  CHECK(strip_rows_for_warmup(1, 4, kSlots, 14) == 1);
  CHECK(strip_rows_for_warmup(100, 1, kSlots, 30) == 1);  // 100 strips in one wave
  CHECK(strip_rows_for_warmup(5000, 1, 1, 14) == 5000);   // one slot: one strip
  // Never more by that count than strip_rows_for_waves' strips, nor than any strip height (every
  // one up to 64 rows, every 7th past it).
  for (const int height : {1, 7, 100, 723, 1024, 2048, 2896, 4000, 6000, 8192, 16384}) {
    for (const int columns : {1, 3, 12, 32, 64, 140}) {
      for (const int warmup : {14, 30}) {
        CAPTURE(height);
        CAPTURE(columns);
        CAPTURE(warmup);
        const int chosen = strip_rows_for_warmup(height, columns, kSlots, warmup);
        REQUIRE(chosen >= 1);
        REQUIRE(chosen <= height);
        const long long best = cost(height, columns, kSlots, warmup, chosen);
        CHECK(best <= cost(height, columns, kSlots, warmup, strip_rows_for_waves(height, columns, kSlots)));
        long long cheapest = best;
        for (int rows = 1; rows <= height; rows += rows < 64 ? 1 : 7)
          cheapest = std::min(cheapest, cost(height, columns, kSlots, warmup, rows));
        CHECK(best == cheapest);
      }
    }
  }
}

TEST_CASE("launch strips: the FP64 tensor-core kernel's strips are whole 8-row tiles") {
  // An H100 with 4 blocks of the 15x15 kernel an SM; 128 columns a block, 2 tiles of 8 row sums
  // (16 rows) before the first output tile.
  constexpr int kSlots = 528;
  // 8192^2: 64 columns; 8 strips of 1024 rows fill one wave (512 blocks).
  CHECK(strip_rows_for_warmup(8192, 64, kSlots, 16, 8) == 1024);
  // 1001 rows over 8 columns: one wave of 66 strips would be 16 rows (15.2 rounded up to a tile).
  CHECK(strip_rows_for_warmup(1001, 8, kSlots, 16, 8) == 16);
  CHECK(strip_rows_for_warmup(5, 1, kSlots, 16, 8) == 8);  // shorter than a tile: one tile
  for (const int height : {1, 7, 9, 100, 723, 1024, 2896, 6000, 8192}) {
    for (const int columns : {1, 8, 64, 140}) {
      CAPTURE(height);
      CAPTURE(columns);
      const int chosen = strip_rows_for_warmup(height, columns, kSlots, 16, 8);
      REQUIRE(chosen % 8 == 0);
      REQUIRE(chosen >= 8);
      REQUIRE(chosen < height + 8);
      // The cheapest of every strip height of whole tiles.
      long long cheapest = cost(height, columns, kSlots, 16, chosen);
      for (int rows = 8; rows < height + 8; rows += 8)
        cheapest = std::min(cheapest, cost(height, columns, kSlots, 16, rows));
      CHECK(cost(height, columns, kSlots, 16, chosen) == cheapest);
    }
  }
}
