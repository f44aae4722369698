// SPDX-License-Identifier: Apache-2.0
#pragma once
// Moving a strip of a host image (cv::Mat, interleaved) into a device image and its filtered rows
// back: pageable copies for a call's own state, or staged through the workspace's pinned buffers
// in chunks when the workspace is kept between calls (the host copies one chunk while the link
// moves the one before); a host image in page-locked memory is copied straight from or into.
#include "gpu/gpu_convolve.hpp"
#include "gpu/memory/strips.hpp"
#include "gpu/memory/workspace.hpp"

#include <cuconv/device_image.hpp>

#include <opencv2/core/mat.hpp>

#include <cstddef>

namespace cuconv::gpu {

/// How a staged copy of `rows` rows is cut: transfers of chunk_rows rows each (the last may be
/// shorter), each chunk copied on the host in `pieces` pieces of piece_rows rows, one a copy
/// thread (the last chunk's last pieces may be shorter or empty).
struct StagingCuts {
  struct Rows {
    int first;
    int last;  ///< [first, last) of the copy's rows
  };
  int rows = 0;
  int chunk_rows = 1;
  int chunks = 0;
  int pieces = 1;  ///< a chunk's
  int piece_rows = 1;

  [[nodiscard]] Rows chunk(int c) const;
  /// Piece `index` of chunks * pieces, chunk by chunk.
  [[nodiscard]] Rows piece(int index) const;
  /// Whether piece `index` is its chunk's last (the chunk's transfer is queued after it).
  [[nodiscard]] bool ends_chunk(int index) const { return index % pieces == pieces - 1; }
};

/// The cuts of a staged copy of `rows` rows of `row_bytes` bytes that `copy_threads` threads copy:
/// chunks small enough that the link moves one while the host copies the next, larger ones when
/// several threads copy (they copy about three times faster than the link moves), one piece a
/// thread.
[[nodiscard]] StagingCuts staging_cuts(std::size_t row_bytes, int rows, int copy_threads);
/// One chunk of all `rows` rows (one transfer), in one piece a copy thread.
[[nodiscard]] StagingCuts whole_copy_cuts(int rows, int copy_threads);

class StripCopier {
 public:
  /// Copies for `image` under `job`'s border rule, through `workspace`'s stream and buffers.
  StripCopier(gpu::WorkspaceState& workspace, const ConvolveJob& job, const cv::Mat& image);

  /// Input rows [rows.in_begin, rows.in_end) of the image into the first rows of `device`; rows
  /// outside the image are made by the border rule, so the strip the kernel sees is exactly the
  /// rows it would have read.
  void upload(const StripRows& rows, const DeviceImageView& device) const;
  /// The strip's output rows of `device` into rows [rows.out_begin, rows.out_end) of `result`.
  /// Returns once they are there (waits for the stream).
  void download(const DeviceImageView& device, const StripRows& rows, cv::Mat& result) const;

 private:
  /// Whether a copy of `rows` rows of `row_bytes` goes through the host copy pool's threads: the
  /// job asks for them and the copy is large enough to pay for waking them.
  [[nodiscard]] bool copies_in_parallel(int rows, std::size_t row_bytes) const;
  /// The image row (or the border-value row) that stands in row `y` of a strip.
  [[nodiscard]] const unsigned char* source_row_at(int y) const;

  gpu::WorkspaceState& workspace_;
  const ConvolveJob& job_;
  const cv::Mat& image_;
  cv::Mat constant_row_;    ///< the border value, only for Border::constant
  bool image_page_locked_;  ///< the image lies in page-locked memory: uploads need no staging
};

}  // namespace cuconv::gpu
