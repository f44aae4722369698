// SPDX-License-Identifier: Apache-2.0
// The GPU codec pipeline's byte bound (decoded images waiting for an encoder hold at most twice
// GpuPipelineOptions::batch_bytes), counted outside the pipeline's own bookkeeping: a GPU codec
// row that wraps nvJPEG's counts the pixel bytes of every decoded image from the decode that
// hands it out until the encode that reads it (without a filter the pipeline encodes the decoded
// image itself and gives it back to its pool right after), with an encoder slow enough that the
// decoder would run far ahead without the bound. docs/testing.md, "Mutation check", plants a
// raised bound and a skipped wait.
#include "jpeg_test_support.hpp"
#include "test_support.hpp"

#include "codec/gpu_codec.hpp"
#include "engine/gpu_codec_pipeline.hpp"

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace cuconv;

namespace {

/// Pixel bytes of decoded images of the test's files that no encode has read yet.
struct HeldBytes {
  std::mutex mutex;
  std::set<const std::uint8_t*> files;        ///< the test's files (the pipeline's warm-up file is not counted)
  std::map<const void*, std::size_t> images;  ///< decoded image -> its pixel bytes
  std::size_t held = 0;
  std::size_t peak = 0;
  std::chrono::milliseconds encode_delay{20};
};
// GpuCodecFormat::make is a plain function pointer: the counter and the wrapped row are globals.
HeldBytes counter;
const codec::GpuCodecFormat* wrapped = nullptr;

class CountingCodec final : public codec::GpuCodec {
 public:
  explicit CountingCodec(std::unique_ptr<codec::GpuCodec> inner) : inner_(std::move(inner)) {}
  void prepare_decoder() override { inner_->prepare_decoder(); }
  codec::GpuPlan plan(std::span<const std::uint8_t> file, std::unique_ptr<codec::FileWalk> walk) override {
    return inner_->plan(file, std::move(walk));
  }
  std::vector<codec::GpuDecoded> decode(const std::vector<std::span<const std::uint8_t>>& files,
                                        std::vector<codec::GpuPlan> plans, StreamHandle stream,
                                        codec::DeviceImagePool& pool, double* engine_call_ms) override {
    std::vector<codec::GpuDecoded> images = inner_->decode(files, std::move(plans), stream, pool, engine_call_ms);
    const std::lock_guard lock(counter.mutex);
    for (std::size_t i = 0; i < images.size(); ++i) {
      const DeviceImageView v = images[i].view;
      if (v.data == nullptr || counter.files.count(files[i].data()) == 0) continue;
      const std::size_t bytes =
          static_cast<std::size_t>(v.width) * static_cast<std::size_t>(v.height) * static_cast<std::size_t>(v.channels);
      counter.images[v.data] = bytes;
      counter.held += bytes;
      counter.peak = std::max(counter.peak, counter.held);
    }
    return images;
  }
  std::vector<std::uint8_t> encode(ConstDeviceImageView image, const codec::GpuOutputOptions& options,
                                   const codec::GpuPlan& source, StreamHandle stream,
                                   std::vector<std::string>& warnings) override {
    std::this_thread::sleep_for(counter.encode_delay);  // slower than the decoder
    std::vector<std::uint8_t> out = inner_->encode(image, options, source, stream, warnings);
    const std::lock_guard lock(counter.mutex);
    if (const auto it = counter.images.find(image.data); it != counter.images.end()) {
      counter.held -= it->second;
      counter.images.erase(it);
    }
    return out;
  }
  std::vector<std::uint8_t> encode_host(const cv::Mat& image, const codec::GpuOutputOptions& options,
                                        const codec::GpuPlan& source, std::vector<std::string>& warnings) override {
    return inner_->encode_host(image, options, source, warnings);
  }

 private:
  std::unique_ptr<codec::GpuCodec> inner_;
};

std::unique_ptr<codec::GpuCodec> make_counting(int device) {
  return std::make_unique<CountingCodec>(wrapped->make(device));
}

}  // namespace

TEST_CASE(
    "gpu jpeg pipeline: decoded images held at once stay within twice batch_bytes, counted outside the pipeline") {
  wrapped = codec::gpu_codec_for("a.jpg", "b.jpg");
  REQUIRE(wrapped != nullptr);
  codec::GpuCodecFormat counting = *wrapped;
  counting.make = make_counting;
  const test::Bytes jpeg = test::encode_jpeg(cv::imread(test::sample("chelsea.png"), cv::IMREAD_COLOR), 90);
  const std::size_t image_bytes = std::size_t{451} * 300 * 3;
  constexpr std::size_t kFiles = 40;
  for (const std::size_t encoders : {std::size_t{1}, std::size_t{2}}) {
    CAPTURE(encoders);
    {
      const std::lock_guard lock(counter.mutex);
      counter.files = {jpeg.data()};
      counter.images.clear();
      counter.held = counter.peak = 0;
    }
    engine::GpuPipelineOptions sizes;
    sizes.batch_bytes = 3 * image_bytes;  // three files per decode call, six held at most
    sizes.encoders = encoders;
    std::mutex mutex;
    std::vector<int> done(kFiles, 0);
    std::size_t failed = 0;
    std::size_t own_peak = 0;
    {
      engine::GpuCodecPipeline pipeline(counting, 0, nullptr, ConvolveOptions{}, codec::GpuOutputOptions{}, sizes,
                                        [&](std::size_t id, const engine::GpuJobResult& r) {
                                          const std::lock_guard lock(mutex);
                                          ++done.at(id);
                                          failed += r.error.has_value() ? 1 : 0;
                                        });
      for (std::size_t i = 0; i < kFiles; ++i) pipeline.submit(i, jpeg);
      pipeline.finish();
      own_peak = pipeline.stats().peak_decoded_bytes;
    }
    CHECK(failed == 0);
    CHECK(std::count(done.begin(), done.end(), 1) == static_cast<long>(kFiles));
    const std::lock_guard lock(counter.mutex);
    MESSAGE(encoders << " encoder(s): held at once (counted by the codec) " << counter.peak << " bytes ("
                     << counter.peak / image_bytes << " images), bound " << 2 * sizes.batch_bytes
                     << "; the pipeline's own count " << own_peak);
    CHECK(counter.held == 0);  // every decoded image was encoded
    CHECK(counter.peak <= 2 * sizes.batch_bytes);
    // The decoder did run ahead of the encoders (more than one decode call held): a bound that
    // were not kept would show.
    CHECK(counter.peak > sizes.batch_bytes);
  }
}
