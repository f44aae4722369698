// SPDX-License-Identifier: Apache-2.0
// nvJPEG's batched decode must write its outputs in stream order: on H100 its hardware decoder
// has been reported to write them when called instead (nvJPEG 12.3-13.2). Here a filter kernel
// reads each batch's decoded images on the stream while the next batch decodes into the same,
// reused buffers (given back to the pool right after the filter was queued, as the engine's
// pipeline reuses them); 10,000 decodes, every decoded image and every filtered one compared
// with a serial decode of the same file. Skips without a device or without nvJPEG.
#include "codec/codec_stream.hpp"
#include "codec/gpu_codec.hpp"
#include "codec/nvjpeg_codec.hpp"
#include "skip.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/device_image.hpp>
#include <cuconv/filter.hpp>

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

using namespace cuconv;

namespace {

bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0.0;
}

}  // namespace

TEST_CASE(
    "gpu nvjpeg order: 10,000 batched decodes into reused buffers, read by a kernel meanwhile, equal serial decodes") {
  std::string reason;
  if (!codec::nvjpeg_available(&reason)) {
    test::skip_case("nvJPEG cannot be loaded: " + reason);
    return;
  }
  const codec::GpuCodecFormat* format = codec::gpu_codec_for("a.jpg", "b.jpg");
  REQUIRE(format != nullptr);
  // 48 baseline 4:2:0 JPEGs (OpenCV's default, a kind the hardware decoder takes) of different
  // sizes and qualities.
  std::vector<std::vector<std::uint8_t>> files;
  cv::RNG rng(61);
  for (int i = 0; i < 48; ++i) {
    cv::Mat image(200 + 10 * i, 680 - 9 * i, CV_8UC3);
    rng.fill(image, cv::RNG::UNIFORM, 0, 256);
    std::vector<std::uint8_t> bytes;
    REQUIRE(cv::imencode(".jpg", image, bytes, std::vector<int>{cv::IMWRITE_JPEG_QUALITY, 70 + i % 30}));
    files.push_back(std::move(bytes));
  }
  const std::unique_ptr<codec::GpuCodec> decoder = format->make(0);
  codec::CodecStream stream;
  codec::DeviceImagePool pool;
  const Filter box = load_filter("box3");
  ConvolveOptions options;
  options.variant = Variant::fast;

  // The serial decodes (one file a call, waited for) and their filtered images.
  std::vector<cv::Mat> serial;
  std::vector<cv::Mat> filtered;
  for (const auto& file : files) {
    const std::span<const std::uint8_t> bytes(file);
    std::vector<codec::GpuPlan> plans{decoder->plan(bytes, nullptr)};
    REQUIRE(plans[0].decodable());
    std::vector<codec::GpuDecoded> decoded = decoder->decode({bytes}, std::move(plans), stream.get(), pool, nullptr);
    REQUIRE(decoded.size() == 1);
    REQUIRE(decoded[0].bad_file.empty());
    REQUIRE(decoded[0].not_supported.empty());
    serial.push_back(download(decoded[0].view));
    filtered.push_back(convolve(serial.back(), box, options).image);
    pool.give(std::move(decoded[0].image));
  }

  constexpr int kBatch = 16;
  constexpr int kImages = 10000;
  GpuWorkspace workspace;
  std::vector<DeviceImage> outputs;  // the filter's outputs of the batch before
  std::vector<std::size_t> output_files;
  int decoded_count = 0;
  int wrong_decodes = 0;
  int wrong_filtered = 0;
  std::size_t next = 0;
  while (decoded_count < kImages || !outputs.empty()) {
    std::vector<codec::GpuDecoded> batch;
    std::vector<std::size_t> batch_files;
    if (decoded_count < kImages) {
      std::vector<std::span<const std::uint8_t>> spans;
      std::vector<codec::GpuPlan> plans;
      for (int i = 0; i < kBatch && decoded_count + i < kImages; ++i) {
        batch_files.push_back(next);
        spans.emplace_back(files[next]);
        plans.push_back(decoder->plan(spans.back(), nullptr));
        next = (next + 5) % files.size();  // neighbours differ in size and kind from batch to batch
      }
      // The previous batch's images went back to the pool while the filter still reads them:
      // this decode reuses their buffers, and stream order must keep it behind the filter.
      batch = decoder->decode(spans, std::move(plans), stream.get(), pool, nullptr);
      decoded_count += static_cast<int>(batch.size());
    }
    // The previous batch's filtered images, now that its filter and this decode are both queued
    // (and done: the downloads do not wait for this non-blocking stream).
    REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
    for (std::size_t i = 0; i < outputs.size(); ++i)
      if (!same_pixels(download(outputs[i].view()), filtered[output_files[i]])) ++wrong_filtered;
    outputs.clear();
    output_files.clear();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      REQUIRE(batch[i].bad_file.empty());
      REQUIRE(batch[i].not_supported.empty());
      if (!same_pixels(download(batch[i].view), serial[batch_files[i]])) ++wrong_decodes;
      const cv::Mat& want = serial[batch_files[i]];
      outputs.emplace_back(want.cols, want.rows, 3, CV_8U);
      (void)convolve(batch[i].view, outputs.back().view(), box, options, workspace, stream.get());
      output_files.push_back(batch_files[i]);
      pool.give(std::move(batch[i].image));  // reused by the next batch's decode
    }
  }
  INFO(decoded_count << " decodes: " << wrong_decodes << " differ from the serial decode, " << wrong_filtered
                     << " filtered images differ");
  CHECK(decoded_count == kImages);
  CHECK(wrong_decodes == 0);
  CHECK(wrong_filtered == 0);
}
