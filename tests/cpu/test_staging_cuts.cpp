// SPDX-License-Identifier: Apache-2.0
// How a staged copy is cut (src/gpu/memory/host_transfer.hpp: staging_cuts, whole_copy_cuts)
// on the CPU: every row of the copy in exactly one piece, the pieces of a chunk in order and
// together the chunk, the chunks in order and together the copy, a chunk's transfer queued after
// its last piece, at most one piece a copy thread; and the sizes the rules give at the shapes
// they were chosen for.
#include "gpu/memory/host_transfer.hpp"
#include "gpu/seams.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

using cuconv::gpu::staging_cuts;
using cuconv::gpu::StagingCuts;
using cuconv::gpu::whole_copy_cuts;

namespace {

/// Checks the invariants of `cuts` for a copy of `rows` rows copied by `threads` threads.
void check_cuts(const StagingCuts& cuts, int rows, int threads) {
  REQUIRE(cuts.rows == rows);
  REQUIRE(cuts.chunk_rows >= 1);
  REQUIRE(cuts.piece_rows >= 1);
  CHECK(cuts.pieces >= 1);
  CHECK(cuts.pieces <= (threads < 1 ? 1 : threads));
  CHECK(static_cast<long long>(cuts.chunks) * cuts.chunk_rows >= rows);
  CHECK(static_cast<long long>(cuts.chunks - 1) * cuts.chunk_rows < (rows > 0 ? rows : 1));
  std::vector<int> copied(static_cast<std::size_t>(rows), 0);
  int next_chunk_row = 0;
  int chunk_ends = 0;
  for (int c = 0; c < cuts.chunks; ++c) {
    const StagingCuts::Rows chunk = cuts.chunk(c);
    CHECK(chunk.first == next_chunk_row);  // chunks in order, back to back
    CHECK(chunk.last > chunk.first);       // none empty
    next_chunk_row = chunk.last;
    int next_piece_row = chunk.first;
    for (int k = 0; k < cuts.pieces; ++k) {
      const int index = c * cuts.pieces + k;
      const StagingCuts::Rows piece = cuts.piece(index);
      CHECK(piece.first == next_piece_row);  // a chunk's pieces in order, back to back, inside it
      CHECK(piece.last >= piece.first);
      CHECK(piece.last <= chunk.last);
      next_piece_row = piece.last;
      for (int r = piece.first; r < piece.last; ++r) ++copied[static_cast<std::size_t>(r)];
      CHECK(cuts.ends_chunk(index) == (k == cuts.pieces - 1));
      chunk_ends += cuts.ends_chunk(index) ? 1 : 0;
    }
    CHECK(next_piece_row == chunk.last);  // the pieces make up the chunk
  }
  CHECK(next_chunk_row == rows);  // the chunks make up the copy
  CHECK(chunk_ends == cuts.chunks);
  int wrong = 0;
  for (const int n : copied) wrong += n != 1 ? 1 : 0;
  CHECK(wrong == 0);  // every row in exactly one piece
}

}  // namespace

TEST_CASE("staging cuts: every row in one piece, pieces and chunks in order, one transfer a chunk") {
  const std::size_t row_bytes_cases[] = {
      1, 3, 100, 2048, 4096, 8192, 12000, std::size_t{1} << 20, std::size_t{3} << 20};
  const int rows_cases[] = {1, 2, 3, 5, 7, 8, 63, 64, 65, 255, 256, 257, 1000, 2048, 4099, 16384};
  for (const std::size_t chunk_bytes : {std::size_t{0}, std::size_t{3000}}) {  // default, and the GPU test's seam
    const std::size_t before = cuconv::gpu::set_staging_chunk_bytes(chunk_bytes);
    for (const std::size_t row_bytes : row_bytes_cases)
      for (const int rows : rows_cases)
        for (const int threads : {1, 2, 3, 4}) {
          CAPTURE(chunk_bytes);
          CAPTURE(row_bytes);
          CAPTURE(rows);
          CAPTURE(threads);
          check_cuts(staging_cuts(row_bytes, rows, threads), rows, threads);
          if (row_bytes == 1) check_cuts(whole_copy_cuts(rows, threads), rows, threads);  // no row size
        }
    cuconv::gpu::set_staging_chunk_bytes(before);
  }
}

TEST_CASE("staging cuts: the sizes at the shapes the rules were chosen for") {
  struct Expected {
    const char* what;
    std::size_t row_bytes;
    int rows, threads, chunk_rows, chunks, pieces, piece_rows;
  };
  const Expected cases[] = {
      {"512x512 float, one thread: eight 128 KiB transfers", 2048, 512, 1, 64, 8, 1, 64},
      {"512x512 float, four threads: one transfer after four pieces", 2048, 512, 4, 512, 1, 4, 128},
      {"2048x2048 float, four threads: eight 2 MiB transfers of four 512 KiB pieces", 8192, 2048, 4, 256, 8, 4, 64},
      {"16384x16384 float: at most 16 transfers (64 MiB each)", 65536, 16384, 4, 1024, 16, 4, 256},
      {"rows wider than a chunk: one row a chunk, in one piece", std::size_t{8} << 20, 5, 4, 1, 5, 1, 1},
  };
  // A download into pageable memory: one transfer, one piece a thread.
  const StagingCuts whole = whole_copy_cuts(512, 4);
  CHECK(whole.chunks == 1);
  CHECK(whole.pieces == 4);
  CHECK(whole.piece_rows == 128);
  for (const Expected& e : cases) {
    CAPTURE(e.what);
    const StagingCuts cuts = staging_cuts(e.row_bytes, e.rows, e.threads);
    CHECK(cuts.chunk_rows == e.chunk_rows);
    CHECK(cuts.chunks == e.chunks);
    CHECK(cuts.pieces == e.pieces);
    CHECK(cuts.piece_rows == e.piece_rows);
  }
}
