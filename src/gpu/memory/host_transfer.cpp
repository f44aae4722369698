// SPDX-License-Identifier: Apache-2.0
// Strip copies between a host image and a device image (src/gpu/memory/host_transfer.hpp).
#include "gpu/memory/host_transfer.hpp"

#include "gpu/memory/device_memory.hpp"
#include "gpu/memory/host_copy_pool.hpp"
#include "gpu/seams.hpp"

#include <algorithm>
#include <cstring>

namespace cuconv::gpu {

namespace {

/// Staged copies move chunks of at most this size, at most kMaxStagingChunks per copy.
constexpr std::size_t kStagingChunkBytes = std::size_t{4} << 20;
constexpr int kMaxStagingChunks = 16;
/// A copy under kOverlapChunks x kStagingChunkBytes (32 MiB) is cut into kOverlapChunks of at
/// least kMinOverlapBytes each, so the link moves one chunk while the host copies the next (a 512x512
/// float image: 8 chunks of 128 KiB instead of one copy after the other).
constexpr int kOverlapChunks = 8;
constexpr std::size_t kMinOverlapBytes = std::size_t{64} << 10;
/// Smaller uploads are copied by the caller alone (a pool's threads would cost more to start).
constexpr std::size_t kMinParallelBytes = std::size_t{256} << 10;
/// With the copy pool the host copies about three times faster than the link moves, so a
/// transfer's own cost outweighs what overlapping more chunks hides (bench/results/host-transfers.md):
/// chunks of at least this size, each copied in one piece a pool thread.
constexpr std::size_t kMinParallelOverlapBytes = std::size_t{1} << 20;

/// kStagingChunkBytes, or what a test set (gpu/seams.hpp: small chunks make every image and strip
/// go through several chunks).
std::size_t staging_chunk_bytes() {
  const std::size_t bytes = seams::staging_chunk_bytes.load(std::memory_order_relaxed);
  return bytes > 0 ? bytes : kStagingChunkBytes;
}

/// Whether `data` lies in page-locked host memory (cudaMallocHost, cudaHostRegister): the link
/// reads and writes it directly, so a copy to or from it needs no staging.
bool page_locked(const void* data) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    cudaGetLastError();  // a query: not page-locked is the answer
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

/// Chunks of `chunk_rows` over `rows` rows, each in one piece a copy thread.
StagingCuts cut_into_pieces(int rows, int chunk_rows, int copy_threads) {
  StagingCuts cuts;
  cuts.rows = rows;
  cuts.chunk_rows = chunk_rows;
  cuts.chunks = (rows + chunk_rows - 1) / chunk_rows;
  cuts.pieces = std::clamp(copy_threads, 1, chunk_rows);
  cuts.piece_rows = (chunk_rows + cuts.pieces - 1) / cuts.pieces;
  return cuts;
}

}  // namespace

StagingCuts staging_cuts(std::size_t row_bytes, int rows, int copy_threads) {
  row_bytes = std::max<std::size_t>(row_bytes, 1);
  rows = std::max(rows, 0);
  const int by_size = static_cast<int>(std::max<std::size_t>(1, staging_chunk_bytes() / row_bytes));
  const int by_count = (rows + kMaxStagingChunks - 1) / kMaxStagingChunks;
  const std::size_t min_overlap = copy_threads > 1 ? kMinParallelOverlapBytes : kMinOverlapBytes;
  const int for_overlap = std::max((rows + kOverlapChunks - 1) / kOverlapChunks,
                                   static_cast<int>(std::max<std::size_t>(1, min_overlap / row_bytes)));
  return cut_into_pieces(rows, std::max({std::min(by_size, for_overlap), by_count, 1}), copy_threads);
}

StagingCuts whole_copy_cuts(int rows, int copy_threads) {
  rows = std::max(rows, 0);
  return cut_into_pieces(rows, std::max(rows, 1), copy_threads);
}

StagingCuts::Rows StagingCuts::chunk(int c) const {
  const int first = c * chunk_rows;
  return {first, std::min(rows, first + chunk_rows)};
}

StagingCuts::Rows StagingCuts::piece(int index) const {
  const Rows whole = chunk(index / pieces);
  const int first = std::min(whole.last, whole.first + (index % pieces) * piece_rows);
  return {first, std::min(whole.last, first + piece_rows)};
}

StripCopier::StripCopier(WorkspaceState& workspace, const ConvolveJob& job, const cv::Mat& image)
    : workspace_(workspace), job_(job), image_(image), image_page_locked_(page_locked(image.data)) {
  if (job.border == Border::constant)
    constant_row_ = cv::Mat(1, image.cols, image.type(), cv::Scalar::all(job.border_value));
}

bool StripCopier::copies_in_parallel(int rows, std::size_t row_bytes) const {
  return job_.parallel_host_copies && static_cast<std::size_t>(rows) * row_bytes >= kMinParallelBytes;
}

const unsigned char* StripCopier::source_row_at(int y) const {
  const int from = source_row(y, image_.rows, job_.border);  // -1: constant
  return from < 0 ? constant_row_.data : image_.ptr(from);
}

void StripCopier::upload(const StripRows& rows, const DeviceImageView& device) const {
  const cudaStream_t stream = workspace_.stream();
  const std::size_t row_bytes = device.row_bytes();
  const auto device_row = [&](int y) { return device.row(y - rows.in_begin); };
  if (!workspace_.kept || image_page_locked_) {
    // Straight from the image (pageable copies for a call's own state, asynchronous ones from
    // page-locked memory): the rows inside the image at once, the border rows one by one.
    const int inside_begin = std::clamp(rows.in_begin, 0, image_.rows);
    const int inside_end = std::clamp(rows.in_end, 0, image_.rows);
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(device_row(inside_begin), device.pitch, image_.ptr(inside_begin), image_.step,
                                      row_bytes, static_cast<std::size_t>(inside_end - inside_begin),
                                      cudaMemcpyHostToDevice, stream));
    for (int y = rows.in_begin; y < rows.in_end; ++y) {
      if (y >= inside_begin && y < inside_end) continue;
      CUCONV_CUDA_TRY(cudaMemcpyAsync(device_row(y), source_row_at(y), row_bytes, cudaMemcpyHostToDevice, stream));
    }
    return;
  }
  // Each chunk's rows are copied into the staging buffer, in one piece a pool thread when the job
  // asks for the pool's threads, and the chunk's transfer is queued as soon as its pieces are there.
  PinnedBuffer& staging = workspace_.staging(0, row_bytes * static_cast<std::size_t>(rows.input_rows()));
  const bool parallel = copies_in_parallel(rows.input_rows(), row_bytes);
  const StagingCuts cuts = staging_cuts(row_bytes, rows.input_rows(), parallel ? HostCopyPool::shared().threads() : 1);
  const auto staged = [&](int r) { return staging.data() + static_cast<std::size_t>(r) * row_bytes; };
  HostCopyPool::shared().run(
      cuts.chunks * cuts.pieces, parallel,
      [&](int index) {
        const StagingCuts::Rows piece = cuts.piece(index);
        for (int r = piece.first; r < piece.last; ++r)
          copy_streaming(staged(r), source_row_at(rows.in_begin + r), row_bytes);
        streaming_fence();  // before the caller queues the chunk's transfer
      },
      [&](int index) {
        if (!cuts.ends_chunk(index)) return;  // pieces are ready in order: the chunk's last one
        const StagingCuts::Rows chunk = cuts.chunk(index / cuts.pieces);
        CUCONV_CUDA_TRY(cudaMemcpy2DAsync(device.row(chunk.first), device.pitch, staged(chunk.first), row_bytes,
                                          row_bytes, static_cast<std::size_t>(chunk.last - chunk.first),
                                          cudaMemcpyHostToDevice, stream));
      });
}

void StripCopier::download(const DeviceImageView& device, const StripRows& rows, cv::Mat& result) const {
  const cudaStream_t stream = workspace_.stream();
  const std::size_t row_bytes = device.row_bytes();
  const int count = rows.output_rows();
  const std::byte* first_row = device.row(rows.first_valid);
  const bool direct = page_locked(result.data);
  if (!workspace_.kept || direct) {
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(result.ptr(rows.out_begin), result.step, first_row, device.pitch, row_bytes,
                                      static_cast<std::size_t>(count), cudaMemcpyDeviceToHost, stream));
    // A copy into pageable memory returns once it is done; one into page-locked memory is queued.
    if (direct) CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    return;
  }
  PinnedBuffer& staging = workspace_.staging(1, row_bytes * static_cast<std::size_t>(count));
  const auto copy_out = [&](int first, int last) {
    for (int y = first; y < last; ++y)
      std::memcpy(result.ptr(rows.out_begin + y), staging.data() + static_cast<std::size_t>(y) * row_bytes, row_bytes);
  };
  if (copies_in_parallel(count, row_bytes)) {
    // With the copy pool the host copies out about three times faster than the link moves, so one
    // transfer, then the copy in one piece a pool thread (the threads make no CUDA calls).
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(staging.data(), row_bytes, first_row, device.pitch, row_bytes,
                                      static_cast<std::size_t>(count), cudaMemcpyDeviceToHost, stream));
    CUCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    HostCopyPool& pool = HostCopyPool::shared();
    const StagingCuts cuts = whole_copy_cuts(count, pool.threads());
    pool.run(
        cuts.pieces, true,
        [&](int index) {
          const StagingCuts::Rows piece = cuts.piece(index);
          copy_out(piece.first, piece.last);
        },
        [](int) {});
    return;
  }
  // Every chunk's transfer is queued with an event after it; the host copies a chunk out as soon
  // as its event has passed.
  const int chunk_rows = staging_cuts(row_bytes, count, 1).chunk_rows;
  std::size_t chunk = 0;
  for (int first = 0; first < count; first += chunk_rows, ++chunk) {
    const int n = std::min(count - first, chunk_rows);
    CUCONV_CUDA_TRY(cudaMemcpy2DAsync(staging.data() + static_cast<std::size_t>(first) * row_bytes, row_bytes,
                                      first_row + static_cast<std::size_t>(first) * device.pitch, device.pitch,
                                      row_bytes, static_cast<std::size_t>(n), cudaMemcpyDeviceToHost, stream));
    workspace_.chunk_event(chunk).record(stream);
  }
  chunk = 0;
  for (int first = 0; first < count; first += chunk_rows, ++chunk) {
    const int n = std::min(count - first, chunk_rows);
    CUCONV_CUDA_TRY(cudaEventSynchronize(workspace_.chunk_event(chunk).get()));
    copy_out(first, first + n);
  }
}

}  // namespace cuconv::gpu
