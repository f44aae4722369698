// SPDX-License-Identifier: Apache-2.0
// The GPU JPEG path's host side, on any machine: the marker walk (which files nvJPEG may
// decode, which APP segments are copied), segment insertion, the codec choice, and the CLI's
// fallback behaviour without a GPU (auto takes OpenCV; --codec gpu exits 5 and writes nothing).
#include "jpeg_test_support.hpp"
#include "test_support.hpp"

#include "engine/batch_pipeline.hpp"
#include "gpu/launch/cufft_api.hpp"
#include "codec/nvjpeg_codec.hpp"
#include "engine/gpu_jpeg_route.hpp"
#include "gpu/shared_library.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include <filesystem>

using namespace cuconv;
using cuconv::codec::gpu_decode_obstacle;
using cuconv::codec::read_jpeg_markers;
using cuconv::test::Bytes;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

Bytes photo_jpeg(bool progressive = false) {
  return cuconv::test::encode_jpeg(cv::imread(sample("chelsea.png"), cv::IMREAD_COLOR), 90, progressive);
}

std::string obstacle(const Bytes& jpeg) { return gpu_decode_obstacle(read_jpeg_markers(jpeg)); }

}  // namespace

TEST_CASE("jpeg markers: frame, components and which files nvJPEG may decode") {
  const Bytes baseline = photo_jpeg();
  const codec::JpegMarkers m = read_jpeg_markers(baseline);
  REQUIRE(m.valid);
  CHECK(m.frame_marker == 0xC0);
  CHECK(m.precision == 8);
  CHECK(m.components == 3);
  CHECK(m.width == 451);
  CHECK(m.height == 300);
  CHECK(obstacle(baseline).empty());
  CHECK(obstacle(photo_jpeg(true)).empty());  // progressive: nvJPEG's CUDA decoder takes it
  CHECK(read_jpeg_markers(photo_jpeg(true)).frame_marker == 0xC2);
  const cv::Mat gray = cv::imread(sample("camera.png"), cv::IMREAD_GRAYSCALE);
  CHECK(obstacle(cuconv::test::encode_jpeg(gray)).empty());

  const std::size_t sof = cuconv::test::frame_offset(baseline);
  REQUIRE(sof > 0);
  Bytes twelve_bit = baseline;
  twelve_bit[sof + 4] = 12;
  CHECK(obstacle(twelve_bit) == "12-bit samples");
  Bytes arithmetic = baseline;
  arithmetic[sof + 1] = 0xC9;
  CHECK(obstacle(arithmetic) == "arithmetic coding");
  Bytes lossless = baseline;
  lossless[sof + 1] = 0xC3;
  CHECK(obstacle(lossless) == "lossless JPEG");
  Bytes four_components = baseline;
  four_components[sof + 9] = 4;
  CHECK(obstacle(four_components) == "CMYK colour");
  CHECK(obstacle(cuconv::test::with_segments(four_components, {cuconv::test::adobe_segment(2)})) == "YCCK colour");
  CHECK(obstacle(cuconv::test::with_segments(baseline, {cuconv::test::adobe_segment(0)})) ==
        "RGB-coded colour (Adobe transform 0)");
  CHECK(obstacle(cuconv::test::with_segments(baseline, {cuconv::test::adobe_segment(1)})).empty());

  const Bytes cut(baseline.begin(), baseline.begin() + static_cast<std::ptrdiff_t>(sof + 6));
  CHECK_FALSE(read_jpeg_markers(cut).valid);
  CHECK_FALSE(obstacle(cut).empty());
  const Bytes png{0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  CHECK_FALSE(read_jpeg_markers(png).valid);
}

TEST_CASE("jpeg markers: EXIF, ICC and XMP are copied after JFIF, APP0 and Adobe APP14 are not") {
  const Bytes exif = cuconv::test::exif_segment();
  const Bytes icc = cuconv::test::icc_segment();
  const Bytes xmp = cuconv::test::app_segment(1, std::string("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>", 41));
  const Bytes input = cuconv::test::with_segments(photo_jpeg(), {exif, icc, xmp, cuconv::test::adobe_segment(1)});
  const codec::JpegMarkers m = read_jpeg_markers(input);
  REQUIRE(m.valid);
  REQUIRE(m.copied_segments.size() == 3);
  CHECK(Bytes(m.copied_segments[0].begin(), m.copied_segments[0].end()) == exif);
  CHECK(Bytes(m.copied_segments[1].begin(), m.copied_segments[1].end()) == icc);
  CHECK(Bytes(m.copied_segments[2].begin(), m.copied_segments[2].end()) == xmp);
  CHECK(m.adobe_transform == 1);

  // Into an encoder's output (OpenCV's here: SOI, JFIF APP0, ...): after the APP0, and the
  // image decodes to the same pixels.
  const Bytes encoded = photo_jpeg();
  REQUIRE(encoded[3] == 0xE0);
  const Bytes out = codec::insert_app_segments(encoded, m.copied_segments);
  const std::size_t app0_end = 4 + ((static_cast<std::size_t>(encoded[4]) << 8) | encoded[5]);
  CHECK(Bytes(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(app0_end)) ==
        Bytes(encoded.begin(), encoded.begin() + static_cast<std::ptrdiff_t>(app0_end)));
  CHECK(Bytes(out.begin() + static_cast<std::ptrdiff_t>(app0_end),
              out.begin() + static_cast<std::ptrdiff_t>(app0_end + exif.size())) == exif);
  CHECK(read_jpeg_markers(out).copied_segments.size() == 3);
  const cv::Mat a = cv::imdecode(encoded, cv::IMREAD_UNCHANGED);
  const cv::Mat b = cv::imdecode(out, cv::IMREAD_UNCHANGED);
  REQUIRE(a.size() == b.size());
  CHECK(cv::norm(a, b, cv::NORM_INF) == 0);
}

TEST_CASE("codec choice: JPEG -> JPEG only, auto takes the GPU codec for large batches, gpu without a GPU is exit 5") {
  using codec::Codec;
  int asked = 0;
  const auto usable = [&asked] { ++asked; return std::string(); };
  const auto unusable = [&asked] { ++asked; return std::string("no usable CUDA device (test)"); };
  codec::CodecRequest request;
  // auto: OpenCV's codec for fewer JPEG -> JPEG jobs than 16 per CPU thread (at least 64), without
  // asking for a GPU; from there the GPU codec when it is usable, and OpenCV's quietly when not.
  CHECK(codec::auto_gpu_codec_threshold(2) == 64);
  CHECK(codec::auto_gpu_codec_threshold(16) == 256);
  CHECK(codec::auto_gpu_codec_threshold(0) >= 64);
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.JPEG", usable));  // one job: single-image mode
  request.cpu_threads = 16;
  request.jpeg_jobs = 255;
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.JPEG", usable));
  CHECK(asked == 0);
  request.jpeg_jobs = 256;
  CHECK(codec::choose_gpu_codec(request, "a.jpg", "b.JPEG", usable));
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.JPEG", unusable));  // no throw under auto
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.png", usable));
  request.jpeg_jobs = 1;
  request.codec = Codec::gpu;
  CHECK(codec::choose_gpu_codec(request, "a.jpg", "b.JPEG", usable));
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.png", "b.jpg", usable));
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.png", usable));
  asked = 0;
  request.codec = Codec::opencv;
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  CHECK(asked == 0);  // --codec opencv never looks for a GPU
  request.codec = Codec::gpu;
  CHECK(codec::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.png", "b.png", unusable));  // mixed batches: others keep OpenCV
  try {
    (void)codec::choose_gpu_codec(request, "a.jpg", "b.jpg", unusable);
    FAIL("--codec gpu without a GPU must throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::gpu);
    CHECK(std::string(e.what()).find("no usable CUDA device (test)") != std::string::npos);
  }
  request.variant = Variant::opencv;
  CHECK_THROWS_AS((void)codec::choose_gpu_codec(request, "a.jpg", "b.jpg", usable), Error);
  request.codec = Codec::automatic;
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  request.variant = Variant::automatic;
  request.auto_orient = true;
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  request.auto_orient = false;
  request.host_features = true;
  CHECK_FALSE(codec::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  CHECK(codec::parse_codec("gpu") == Codec::gpu);
  CHECK_FALSE(codec::parse_codec("nvjpeg").has_value());
}

TEST_CASE("cli without a GPU: --codec auto uses OpenCV, --codec gpu exits 5 and writes nothing") {
  std::string reason;
  if (cuda_device_available(&reason)) {
    MESSAGE("skipped: this machine has a CUDA device; the GPU suite covers the GPU codec");
    return;
  }
  TempDir dir;
  const std::string in = dir.file("in.jpg");
  cuconv::test::write_bytes(in, photo_jpeg());
  const auto gpu = run_cuconv({in, dir.file("gpu.jpg"), "-f", "gauss5", "--codec", "gpu"});
  CHECK(gpu.exit_code == 5);
  CHECK(gpu.err.find("--codec gpu") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("gpu.jpg")));
  const auto automatic = run_cuconv({in, dir.file("auto.jpg"), "-f", "gauss5"});
  CHECK(automatic.exit_code == 0);
  CHECK(std::filesystem::exists(dir.file("auto.jpg")));
  // A PNG job never needs the GPU codec, even with --codec gpu.
  const auto png = run_cuconv({sample("camera.png"), dir.file("out.png"), "-f", "gauss5", "--codec", "gpu"});
  CHECK(png.exit_code == 0);

  const auto batch_gpu = run_cuconv({"--out-dir", dir.file("b1"), in, "-f", "gauss5", "--codec", "gpu"});
  CHECK(batch_gpu.exit_code == 5);
  CHECK_FALSE(std::filesystem::exists(dir.file("b1")));
  const auto batch_auto = run_cuconv({"--out-dir", dir.file("b2"), in, sample("camera.png"), "-f", "gauss5",
                                      "--json", dir.file("summary.json")});
  CHECK(batch_auto.exit_code == 0);
  const nlohmann::json summary = nlohmann::json::parse(cuconv::test::read_file(dir.file("summary.json")));
  for (const auto& file : summary["files"]) {
    CHECK(file["decoder"] == "opencv");
    CHECK(file["encoder"] == "opencv");
  }
}

TEST_CASE("batch engine: GPU JPEG items whose codec cannot start fail with a GPU error, the others are written") {
  std::string reason;
  if (cuda_device_available(&reason)) {
    MESSAGE("skipped: this machine has a CUDA device; the GPU suite covers the GPU codec in batches");
    return;
  }
  TempDir dir;
  std::vector<batch::BatchItem> items;
  for (const char* name : {"a", "b", "c"}) {
    const std::string in = dir.file(std::string(name) + ".jpg");
    cuconv::test::write_bytes(in, photo_jpeg(std::string(name) == "b"));
    items.push_back({in, dir.file(std::string("out-") + name + ".jpg")});
  }
  items.push_back({sample("camera.png"), dir.file("out-camera.png")});
  batch::BatchOptions options;
  options.run.filter = load_filter("gauss5");
  options.jobs = 2;
  options.jpeg_pipeline.batch = 2;
  for (const batch::BatchItem& item : items)
    options.routes.push_back(codec::is_jpeg_path(item.output) ? engine::Route::gpu_jpeg : engine::Route::host);
  const batch::BatchSummary summary = batch::run_batch(items, options);
  REQUIRE(summary.items.size() == 4);
  for (const batch::ItemReport& item : summary.items) {
    CAPTURE(item.input);
    if (item.input.ends_with(".png")) {
      CHECK(item.status == batch::ItemStatus::ok);
      CHECK(std::filesystem::exists(item.output));
      CHECK(item.decoder == "opencv");
    } else {
      CHECK(item.status == batch::ItemStatus::failed);
      CHECK(item.exit_code == ExitCode::gpu);
      CHECK_FALSE(std::filesystem::exists(item.output));
    }
  }
}

TEST_CASE("run-time loaders: cuFFT and nvJPEG are found and every function they need resolves (no GPU needed)") {
  // dlopen and dlsym need no device: scripts/install-deps.sh provides libnvjpeg (toolkit or the
  // pinned wheel) and the CUDA toolkit libcufft, so both must load here; a missing symbol or a
  // search path that misses the library fails with the loader's own reason.
  std::string reason;
  CHECK_MESSAGE(cuconv::detail::cufft_api(&reason) != nullptr, reason);
  reason.clear();
  CHECK_MESSAGE(codec::nvjpeg_available(&reason), reason);
  // The search order: the loader's own paths first, then the given folders, then the toolkit.
  const std::vector<std::string> c = cuconv::detail::library_candidates("libx.so.1", {"/opt/x"});
  REQUIRE(c.size() >= 3);
  CHECK(c.front() == "libx.so.1");
  CHECK(c[1] == "/opt/x/libx.so.1");
  CHECK(c.back() == "/usr/local/cuda/lib64/libx.so.1");
  CHECK(cuconv::detail::open_first({"libcuconv-no-such-library.so"}) == nullptr);
}
