// SPDX-License-Identifier: Apache-2.0
// The GPU JPEG path on a real device: nvJPEG's decoded pixels against OpenCV's (libjpeg-turbo)
// for baseline, progressive, gray and 4:2:0/4:2:2/4:4:4 files, within each kind's bounds on the
// max and mean absolute difference and on the worst MCU block's mean (a wrong MCU row fails it;
// jpeg_test_support.hpp, docs/testing.md); the device filter against cv::filter2D on the same decoded pixels (pass
// rule); the encoder's PSNR against OpenCV's at the same quality; and the CLI end to end: --codec gpu, files that fall
// back to OpenCV, truncated and corrupt files (no output), EXIF/ICC kept, mixed batches.
#include "adversarial_files.hpp"
#include "gpu_seams.hpp"
#include "jpeg_test_support.hpp"
#include "test_support.hpp"

#include "codec/jpeg_markers.hpp"
#include "codec/nvjpeg_codec.hpp"
#include "engine/gpu_codec_pipeline.hpp"
#include "engine/gpu_codec_route.hpp"

#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>

using namespace cuconv;
using cuconv::test::Bytes;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

struct Case {
  std::string name;
  Bytes jpeg;
  cuconv::test::JpegBound bound;  ///< how far nvJPEG's pixels may lie from OpenCV's
};

cv::Mat photo() { return cv::imread(sample("chelsea.png"), cv::IMREAD_COLOR); }

/// `image` (the photo by default) encoded by nvJPEG with `chroma` (OpenCV 4.6 writes 4:2:0 only).
Bytes nvjpeg_encoded(codec::GpuJpegCodec& codec, codec::Chroma chroma, const cv::Mat& source = photo()) {
  const DeviceImage image = upload(source);
  codec::JpegEncodeOptions options;
  options.quality = 90;
  options.chroma = chroma;
  return codec.encode(image.view(), options, nullptr);
}

/// Baseline 4:2:0, progressive, gray (OpenCV's encoder) and 4:2:2 / 4:4:4 (nvJPEG's).
std::vector<Case> decode_cases(codec::GpuJpegCodec& codec) {
  const cv::Mat gray = cv::imread(sample("camera.png"), cv::IMREAD_GRAYSCALE);
  return {{"baseline 4:2:0", cuconv::test::encode_jpeg(photo(), 90), cuconv::test::kDecode420},
          {"progressive 4:2:0", cuconv::test::encode_jpeg(photo(), 90, true), cuconv::test::kDecode420},
          {"gray", cuconv::test::encode_jpeg(gray, 90), cuconv::test::kDecodeGray},
          {"gray progressive", cuconv::test::encode_jpeg(gray, 90, true), cuconv::test::kDecodeGray},
          {"4:2:2", nvjpeg_encoded(codec, codec::Chroma::s422), cuconv::test::kDecode422},
          {"4:4:4", nvjpeg_encoded(codec, codec::Chroma::s444), cuconv::test::kDecode444}};
}

/// Every kind of decode_cases for each of bound_photos (five per kind, the photos the bounds were
/// derived from), named "KIND, PHOTO".
std::vector<std::pair<std::string, Case>> bound_cases(codec::GpuJpegCodec& codec) {
  std::vector<std::pair<std::string, Case>> cases;
  for (const cuconv::test::Photo& p : cuconv::test::bound_photos(false)) {
    cases.push_back({"baseline 4:2:0", {p.name, cuconv::test::encode_jpeg(p.image, 90), cuconv::test::kDecode420}});
    cases.push_back(
        {"progressive 4:2:0", {p.name, cuconv::test::encode_jpeg(p.image, 90, true), cuconv::test::kDecode420}});
    cases.push_back({"4:2:2", {p.name, nvjpeg_encoded(codec, codec::Chroma::s422, p.image), cuconv::test::kDecode422}});
    cases.push_back({"4:4:4", {p.name, nvjpeg_encoded(codec, codec::Chroma::s444, p.image), cuconv::test::kDecode444}});
  }
  for (const cuconv::test::Photo& p : cuconv::test::bound_photos(true)) {
    cases.push_back({"gray", {p.name, cuconv::test::encode_jpeg(p.image, 90), cuconv::test::kDecodeGray}});
    cases.push_back(
        {"gray progressive", {p.name, cuconv::test::encode_jpeg(p.image, 90, true), cuconv::test::kDecodeGray}});
  }
  return cases;
}

cv::Mat opencv_decoded(const Bytes& jpeg) { return cv::imdecode(jpeg, cv::IMREAD_UNCHANGED); }

}  // namespace

TEST_CASE(
    "gpu jpeg: nvJPEG decodes baseline, progressive, gray and 4:2:0/4:2:2/4:4:4 within each kind's bounds of OpenCV on "
    "five photos, in BGR order") {
  // Prints each kind's largest numbers over the photos: the measurements the bounds in
  // tests/support/jpeg_test_support.hpp are checked against (docs/testing.md, "JPEG decoders").
  codec::GpuJpegCodec codec;
  MESSAGE("nvJPEG decode backend: " << codec.backend());
  std::map<std::string, std::pair<cuconv::test::JpegDifference, int>> worst;  // kind: maxima, photos
  for (const auto& one : bound_cases(codec)) {
    const std::string& kind = one.first;  // doctest's lambdas cannot name structured bindings (clang 14)
    const Case& c = one.second;
    CAPTURE(kind);
    CAPTURE(c.name);
    const std::vector<codec::DecodedJpeg> decoded = codec.decode({std::span<const std::uint8_t>(c.jpeg)}, nullptr);
    REQUIRE(decoded.size() == 1);
    REQUIRE(decoded[0].not_supported.empty());
    REQUIRE(decoded[0].bad_file.empty());
    const cv::Mat gpu = download(decoded[0].view);
    const cv::Mat cpu = opencv_decoded(c.jpeg);
    REQUIRE(gpu.size() == cpu.size());
    REQUIRE(gpu.type() == cpu.type());
    const cuconv::test::JpegDifference d = cuconv::test::jpeg_difference(gpu, cpu, c.bound.block_w, c.bound.block_h);
    INFO(kind << ", " << c.name << ": nvJPEG " << std::string(decoded[0].hardware ? "hardware" : "cuda")
              << " vs OpenCV, " << cuconv::test::describe(d, c.bound));
    // Chroma upsampling differs between the decoders (4:2:0, 4:2:2), the IDCT at most by its
    // rounding; swapped channels, a wrong MCU row or a shifted one, one block off by 20 or one
    // MCU off by 5 exceed the bounds (the CPU suite's "jpeg bounds" cases plant them).
    CHECK(cuconv::test::within(d, c.bound));
    // The same defects planted in nvJPEG's own pixels, at a corner, the middle and the last
    // whole MCU: one 8x8 block off by 20, one MCU off by 5.
    const int mcu_w = c.bound.block_w;
    const int mcu_h = c.bound.block_h;
    for (const cv::Point at : {cv::Point(0, 0), cv::Point(gpu.cols / 2 / mcu_w * mcu_w, gpu.rows / 2 / mcu_h * mcu_h),
                               cv::Point((gpu.cols / mcu_w - 1) * mcu_w, (gpu.rows / mcu_h - 1) * mcu_h)}) {
      CAPTURE(at);
      CHECK_FALSE(cuconv::test::within(
          cuconv::test::jpeg_difference(cuconv::test::planted(gpu, cv::Rect(at.x, at.y, 8, 8), 20), cpu, mcu_w, mcu_h),
          c.bound));
      CHECK_FALSE(cuconv::test::within(
          cuconv::test::jpeg_difference(cuconv::test::planted(gpu, cv::Rect(at.x, at.y, mcu_w, mcu_h), 5), cpu, mcu_w,
                                        mcu_h),
          c.bound));
    }
    cuconv::test::take_worst(worst[kind].first, d);
    ++worst[kind].second;
    if (kind == "baseline 4:2:0" && codec.backend() == "hardware") CHECK(decoded[0].hardware);
  }
  for (const auto& [kind, w] : worst) {
    const cuconv::test::JpegBound& bound = kind.find("4:2:0") != std::string::npos ? cuconv::test::kDecode420
                                           : kind == "4:2:2"                       ? cuconv::test::kDecode422
                                           : kind == "4:4:4"                       ? cuconv::test::kDecode444
                                                                                   : cuconv::test::kDecodeGray;
    MESSAGE("measured maxima, " << kind << " over " << w.second
                                << " photos at quality 90: " << cuconv::test::describe(w.first, bound));
    CHECK(w.second >= 5);
  }
}

TEST_CASE("gpu jpeg: a batch decodes every file, and says which ones OpenCV must take or are broken") {
  codec::GpuJpegCodec codec;
  const Bytes good = cuconv::test::encode_jpeg(photo(), 90);
  const Bytes rgb_coded = cuconv::test::with_segments(good, {cuconv::test::adobe_segment(0)});
  Bytes corrupt = good;
  corrupt[2] = 0x00;  // the first marker after SOI is gone
  corrupt[3] = 0x00;
  const Bytes png{0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  const std::vector<std::span<const std::uint8_t>> files{good, rgb_coded, corrupt, png, good};
  const std::vector<codec::DecodedJpeg> decoded = codec.decode(files, nullptr);
  REQUIRE(decoded.size() == 5);
  CHECK_FALSE(decoded[0].image.empty());
  CHECK_FALSE(decoded[4].image.empty());
  CHECK(decoded[1].not_supported == "RGB-coded colour (Adobe transform 0)");
  CHECK(decoded[1].image.empty());
  CHECK_FALSE(decoded[2].bad_file.empty());
  CHECK(decoded[2].image.empty());
  CHECK(decoded[3].not_supported == "not a JPEG stream");
  CHECK(cv::norm(download(decoded[0].view), download(decoded[4].view), cv::NORM_INF) == 0);
}

TEST_CASE(
    "gpu jpeg pipeline: each file comes back once, as one codec alone makes it, at any batch size and encoder count") {
  codec::GpuJpegCodec codec;
  GpuWorkspace workspace;
  const Filter filter = load_filter("gauss5");
  ConvolveOptions options;
  options.device = 0;
  const cuconv::test::PoisonOutputs poisoned;
  codec::GpuOutputOptions output;
  output.quality = 90;
  // Every kind of decodable file twice, one for OpenCV (RGB-coded) and one corrupt file.
  std::vector<Bytes> files;
  std::vector<std::string> names;
  for (int round = 0; round < 2; ++round)
    for (Case& c : decode_cases(codec)) {
      names.push_back(c.name);
      files.push_back(std::move(c.jpeg));
    }
  const std::size_t rgb_coded = files.size();
  files.push_back(cuconv::test::with_segments(files.front(), {cuconv::test::adobe_segment(0)}));
  names.emplace_back("RGB-coded");
  const std::size_t corrupt = files.size();
  files.push_back(files.front());
  files.back()[2] = 0x00;  // the first marker after SOI is gone
  files.back()[3] = 0x00;
  names.emplace_back("corrupt");
  // What one codec makes of each decodable file: decode, filter, encode.
  std::vector<Bytes> expected(files.size());
  std::size_t largest = 0;  // pixel bytes of the largest decoded file
  for (std::size_t i = 0; i < rgb_coded; ++i) {
    std::vector<codec::DecodedJpeg> decoded = codec.decode({std::span<const std::uint8_t>(files[i])}, nullptr);
    REQUIRE_FALSE(decoded[0].image.empty());
    const DeviceImageView in = decoded[0].view;
    largest = std::max(largest, static_cast<std::size_t>(in.width) * static_cast<std::size_t>(in.height) *
                                    static_cast<std::size_t>(in.channels));
    const DeviceImage out(in.width, in.height, in.channels, CV_8U);
    static_cast<void>(convolve(in, out.view(), filter, options, workspace, nullptr));
    codec::JpegEncodeOptions encode_options;
    encode_options.quality = output.quality;
    expected[i] = codec.encode(out.view(), encode_options, nullptr);
  }
  // The last: decode calls of one largest file's bytes, so decoded images may hold at most two
  // (one encoder is slower than the JPEG engine: without the bound the decoder runs far ahead).
  for (const auto& limits :
       {std::tuple<std::size_t, std::size_t, std::size_t>{1, 1, 0}, {3, 3, 0}, {64, 4, 0}, {64, 1, largest}}) {
    const std::size_t batch = std::get<0>(limits);  // plain locals: doctest's CAPTURE is a lambda (clang 14)
    const std::size_t encoders = std::get<1>(limits);
    const std::size_t bytes = std::get<2>(limits);
    CAPTURE(batch);
    CAPTURE(encoders);
    CAPTURE(bytes);
    std::mutex mutex;
    std::vector<std::vector<engine::GpuJobResult>> results(files.size());
    {
      engine::GpuPipelineOptions sizes;
      sizes.batch = batch;
      sizes.encoders = encoders;
      if (bytes > 0) sizes.batch_bytes = bytes;
      engine::GpuCodecPipeline pipeline(*codec::gpu_codec_for("a.jpg", "b.jpg"), 0, &filter, options, output, sizes,
                                        [&](std::size_t id, engine::GpuJobResult r) {
                                          const std::lock_guard lock(mutex);
                                          results.at(id).push_back(std::move(r));
                                        });
      for (std::size_t i = 0; i < files.size(); ++i) pipeline.submit(i, files[i]);
      pipeline.finish();
      const std::size_t peak = pipeline.stats().peak_decoded_bytes;
      CHECK(peak >= largest);
      CHECK(peak <= 2 * sizes.batch_bytes);
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
      CAPTURE(names[i]);
      REQUIRE(results[i].size() == 1);
      const engine::GpuJobResult& r = results[i].front();
      if (i == corrupt) {
        REQUIRE(r.error.has_value());
        CHECK(r.error->kind() == ErrorKind::bad_input);
        CHECK(r.encoded.empty());
        continue;
      }
      REQUIRE_FALSE(r.error.has_value());
      if (i == rgb_coded) {
        CHECK(r.decoder == "opencv");
        CHECK_FALSE(r.decoder_fallback.empty());
        CHECK_FALSE(cv::imdecode(r.encoded, cv::IMREAD_UNCHANGED).empty());
        continue;
      }
      CHECK(r.decoder.starts_with("nvjpeg"));
      CHECK(r.encoder == "nvjpeg");
      CHECK(r.variant_used.has_value());
      CHECK(r.encoded == expected[i]);
    }
  }
}

TEST_CASE("gpu jpeg: the filter on decoded pixels matches cv::filter2D on the same pixels") {
  codec::GpuJpegCodec codec;
  GpuWorkspace workspace;
  for (const Case& c : decode_cases(codec)) {
    for (const char* spec : {"gauss5", "gaussian:7,3"}) {
      for (Variant variant : {Variant::automatic, Variant::fast, Variant::tiled}) {
        CAPTURE(c.name);
        CAPTURE(spec);
        CAPTURE(to_string(variant));
        const Filter filter = load_filter(spec);
        std::vector<codec::DecodedJpeg> decoded = codec.decode({std::span<const std::uint8_t>(c.jpeg)}, nullptr);
        REQUIRE_FALSE(decoded[0].image.empty());
        const DeviceImageView in = decoded[0].view;
        const DeviceImage out(in.width, in.height, in.channels, CV_8U);
        ConvolveOptions options;
        options.variant = variant;
        const cuconv::test::PoisonOutputs poisoned;
        const Variant ran = convolve(in, out.view(), filter, options, workspace, nullptr);
        const cv::Mat pixels = download(in);
        ConvolveOptions reference_options;
        reference_options.variant = Variant::opencv;
        reference_options.opencv_method = OpenCvMethod::reference;
        const ConvolveResult reference = convolve(pixels, filter, reference_options);
        const ComparisonStats stats =
            compare_to_reference(download(out.view()), reference.image, pixels, filter, ConvolveOptions{}, ran);
        CHECK(stats.within_tolerance);
      }
    }
  }
}

TEST_CASE("gpu jpeg: nvJPEG's encoding is within 0.5 dB of OpenCV's at the same quality") {
  codec::GpuJpegCodec codec;
  const cv::Mat gray = cv::imread(sample("camera.png"), cv::IMREAD_GRAYSCALE);
  for (const cv::Mat& image : {photo(), gray}) {
    for (int quality : {75, 90, 95}) {
      CAPTURE(quality);
      CAPTURE(image.channels());
      const DeviceImage device = upload(image);
      codec::JpegEncodeOptions options;
      options.quality = quality;
      const Bytes gpu = codec.encode(device.view(), options, nullptr);
      Bytes cpu;
      REQUIRE(cv::imencode(".jpg", image, cpu, {cv::IMWRITE_JPEG_QUALITY, quality}));
      const cv::Mat gpu_back = opencv_decoded(gpu);
      REQUIRE(gpu_back.type() == image.type());  // gray stays one component
      const double psnr_gpu = cv::PSNR(gpu_back, image);
      const double psnr_cpu = cv::PSNR(opencv_decoded(cpu), image);
      MESSAGE("quality " << quality << ", " << image.channels() << " channel(s): PSNR nvJPEG " << psnr_gpu << " dB ("
                         << gpu.size() << " bytes), OpenCV " << psnr_cpu << " dB (" << cpu.size() << " bytes)");
      CHECK(psnr_gpu >= psnr_cpu - 0.5);
    }
  }
}

TEST_CASE("gpu jpeg cli: --codec gpu writes what the OpenCV path writes, up to the codecs' rounding") {
  TempDir dir;
  const cv::Mat gray = cv::imread(sample("camera.png"), cv::IMREAD_GRAYSCALE);
  struct Input {
    const char* name;
    Bytes bytes;
    cuconv::test::JpegBound bound;
  };
  const Input inputs[] = {
      {"baseline.jpg", cuconv::test::encode_jpeg(photo(), 90), cuconv::test::kOutputColour},
      {"progressive.jpg", cuconv::test::encode_jpeg(photo(), 90, true), cuconv::test::kOutputColour},
      {"gray.jpg", cuconv::test::encode_jpeg(gray, 90), cuconv::test::kOutputGray}};
  for (const Input& input : inputs) {
    const char* name = input.name;  // plain locals: doctest's INFO is a lambda (clang 14)
    const Bytes& bytes = input.bytes;
    const cuconv::test::JpegBound& bound = input.bound;
    INFO(name);
    const std::string in = dir.file(name);
    cuconv::test::write_bytes(in, bytes);
    const std::string gpu_out = dir.file(std::string("gpu-") + name);
    const std::string cpu_out = dir.file(std::string("cpu-") + name);
    const auto gpu = run_cuconv({in, gpu_out, "-f", "gauss5", "--codec", "gpu", "-v"});
    REQUIRE(gpu.exit_code == 0);
    CHECK(gpu.err.find("decoder nvjpeg") != std::string::npos);
    CHECK(gpu.err.find("encoder nvjpeg") != std::string::npos);
    REQUIRE(run_cuconv({in, cpu_out, "-f", "gauss5", "--codec", "opencv"}).exit_code == 0);
    const cv::Mat a = cv::imread(gpu_out, cv::IMREAD_UNCHANGED);
    const cv::Mat b = cv::imread(cpu_out, cv::IMREAD_UNCHANGED);
    REQUIRE(a.size() == b.size());
    REQUIRE(a.type() == b.type());
    const cuconv::test::JpegDifference d = cuconv::test::jpeg_difference(a, b, bound.block_w, bound.block_h);
    MESSAGE(std::string(name) << ": --codec gpu vs --codec opencv output, " << cuconv::test::describe(d, bound));
    CHECK(cuconv::test::within(d, bound));
  }
}

TEST_CASE("gpu jpeg cli: EXIF and ICC segments are kept, files nvJPEG refuses go through OpenCV") {
  TempDir dir;
  const Bytes exif = cuconv::test::exif_segment();
  const Bytes icc = cuconv::test::icc_segment();
  const Bytes base = cuconv::test::encode_jpeg(photo(), 90);
  const std::string in = dir.file("meta.jpg");
  cuconv::test::write_bytes(in, cuconv::test::with_segments(base, {exif, icc}));
  const std::string out = dir.file("meta-out.jpg");
  REQUIRE(run_cuconv({in, out, "-f", "gauss5", "--codec", "gpu"}).exit_code == 0);
  const std::string written = cuconv::test::read_file(out);
  const Bytes out_bytes(written.begin(), written.end());
  const codec::JpegMarkers markers = codec::read_jpeg_markers(out_bytes);
  REQUIRE(markers.valid);
  REQUIRE(markers.copied_segments.size() == 2);
  CHECK(Bytes(markers.copied_segments[0].begin(), markers.copied_segments[0].end()) == exif);
  CHECK(Bytes(markers.copied_segments[1].begin(), markers.copied_segments[1].end()) == icc);

  // Adobe transform 0 (RGB-coded): nvJPEG would take it for YCbCr; OpenCV decodes it instead.
  const std::string odd = dir.file("rgb-coded.jpg");
  cuconv::test::write_bytes(odd, cuconv::test::with_segments(base, {cuconv::test::adobe_segment(0), exif}));
  const auto r = run_cuconv({odd, dir.file("rgb-out.jpg"), "-f", "gauss5", "--codec", "gpu", "-v"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("decoded with OpenCV") != std::string::npos);
  CHECK(r.err.find("Adobe transform 0") != std::string::npos);
  const std::string kept = cuconv::test::read_file(dir.file("rgb-out.jpg"));
  CHECK(codec::read_jpeg_markers(Bytes(kept.begin(), kept.end())).copied_segments.size() == 1);
}

TEST_CASE("gpu jpeg cli: a damaged ICC profile is dropped with the host route's warning, the EXIF beside it kept") {
  TempDir dir;
  const std::string in = dir.file("bad-icc.jpg");
  const std::string seed = cuconv::test::crafted::adversarial_seeds().at("jpeg-good-exif-bad-icc.jpg");
  cuconv::test::write_bytes(in, Bytes(seed.begin(), seed.end()));
  const std::string warned =
      "cuconv: warning: " + in +
      ": ICC profile dropped: not a valid profile (its header declares 1094795585 bytes, it holds 200)";
  // Both codecs, both modes: the same warning naming the input, the EXIF kept, no ICC segment out.
  const auto check_output = [](const std::string& out) {
    const std::string written = cuconv::test::read_file(out);
    const codec::JpegMarkers markers = codec::read_jpeg_markers(Bytes(written.begin(), written.end()));
    REQUIRE(markers.valid);
    for (const auto& segment : markers.copied_segments) CHECK_FALSE(codec::is_icc_segment(segment));
    CHECK(exif_orientation(read_metadata(out)) == 6);
  };
  for (const std::string codec : {"gpu", "opencv"}) {
    CAPTURE(codec);
    const std::string out = dir.file("out-" + codec + ".jpg");
    const auto r = run_cuconv({in, out, "-f", "gauss5", "--codec", codec});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find(warned) != std::string::npos);
    check_output(out);
    const auto batch = run_cuconv({"--out-dir", dir.file("batch-" + codec), in, "-f", "gauss5", "--codec", codec});
    INFO(batch.err);
    REQUIRE(batch.exit_code == 0);
    CHECK(batch.err.find(warned) != std::string::npos);
    check_output(dir.file("batch-" + codec + "/bad-icc.jpg"));
  }
}

TEST_CASE("gpu jpeg cli: truncated and corrupt files fail with exit 3 naming the file, and write nothing") {
  TempDir dir;
  const Bytes good = cuconv::test::encode_jpeg(photo(), 90);
  const Bytes truncated(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() * 6 / 10));
  Bytes corrupt = good;
  corrupt[2] = 0x00;
  corrupt[3] = 0x00;
  for (const auto& file : {std::pair<std::string, Bytes>{"truncated.jpg", truncated}, {"corrupt.jpg", corrupt}}) {
    const std::string& name = file.first;  // plain locals: doctest's CAPTURE is a lambda (clang 14)
    const Bytes& bytes = file.second;
    CAPTURE(name);
    const std::string in = dir.file(name);
    cuconv::test::write_bytes(in, bytes);
    const std::string out = dir.file("out-" + name);
    const auto r = run_cuconv({in, out, "-f", "gauss5", "--codec", "gpu"});
    CHECK(r.exit_code == 3);
    CHECK(r.err.find(in) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
  }
  const auto batch = run_cuconv({"--out-dir", dir.file("batch"), dir.file("truncated.jpg"), dir.file("corrupt.jpg"),
                                 "-f", "gauss5", "--codec", "gpu", "--json", dir.file("s.json")});
  CHECK(batch.exit_code == 7);  // some inputs failed
  const nlohmann::json summary = nlohmann::json::parse(cuconv::test::read_file(dir.file("s.json")));
  CHECK(summary["totals"]["failed"] == 2);
  CHECK(cuconv::test::file_names(dir.file("batch")).empty());
}

TEST_CASE("gpu jpeg cli: a mixed batch sends JPEG -> JPEG through nvJPEG and the rest through OpenCV") {
  TempDir dir;
  const std::filesystem::path in = dir.path() / "in";
  std::filesystem::create_directory(in);
  const cv::Mat gray = cv::imread(sample("camera.png"), cv::IMREAD_GRAYSCALE);
  cuconv::test::write_bytes((in / "a.jpg").string(), cuconv::test::encode_jpeg(photo(), 90));
  cuconv::test::write_bytes((in / "b.jpg").string(), cuconv::test::encode_jpeg(photo(), 90, true));
  cuconv::test::write_bytes((in / "c.jpg").string(), cuconv::test::encode_jpeg(gray, 90));
  cuconv::test::write_bytes((in / "d.jpg").string(), cuconv::test::with_segments(cuconv::test::encode_jpeg(photo(), 90),
                                                                                 {cuconv::test::adobe_segment(0)}));
  std::filesystem::copy_file(sample("camera.png"), in / "e.png");
  for (const bool no_filter : {false, true}) {
    CAPTURE(no_filter);
    const std::string out = dir.file(no_filter ? "out-nofilter" : "out");
    std::vector<std::string> args{"--out-dir",        out,      in.string(), "--codec", "gpu", "--json",
                                  dir.file("s.json"), "--jobs", "2"};
    if (no_filter)
      args.emplace_back("--no-filter");
    else
      args.insert(args.end(), {"-f", "gauss5"});
    const auto r = run_cuconv(args);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json summary = nlohmann::json::parse(cuconv::test::read_file(dir.file("s.json")));
    REQUIRE(summary["files"].size() == 5);
    for (const auto& file : summary["files"]) {
      const std::string input = file["input"];
      CAPTURE(input);
      CHECK(file["status"] == "ok");
      const std::string decoder = file["decoder"];
      if (input.ends_with("e.png")) {
        CHECK(decoder == "opencv");
        CHECK(file["encoder"] == "opencv");
      } else if (input.ends_with("d.jpg")) {
        CHECK(decoder == "opencv");
        CHECK_FALSE(file["decoder_reason"].get<std::string>().empty());
      } else {
        CHECK(decoder.starts_with("nvjpeg"));
        CHECK(file["encoder"] == "nvjpeg");
      }
      CHECK(file["variant"].is_null() == no_filter);
    }
    CHECK(cuconv::test::file_names(out).size() == 5);
  }
}

TEST_CASE(
    "gpu jpeg cli: --codec auto takes the GPU codec from 16 JPEG -> JPEG files per --jobs thread (at least 64), "
    "OpenCV's below") {
  TempDir dir;
  const std::filesystem::path in = dir.path() / "in";
  std::filesystem::create_directory(in);
  cv::Mat small;
  cv::resize(photo(), small, cv::Size(96, 64));
  const Bytes jpeg = cuconv::test::encode_jpeg(small, 90);
  for (int i = 0; i < 63; ++i) cuconv::test::write_bytes((in / ("p" + std::to_string(i) + ".jpg")).string(), jpeg);
  for (const bool enough : {false, true}) {
    CAPTURE(enough);
    if (enough) cuconv::test::write_bytes((in / "p63.jpg").string(), jpeg);  // 64 with --jobs 2: the threshold
    const std::string out = dir.file(enough ? "out64" : "out63");
    const auto r =
        run_cuconv({"--out-dir", out, in.string(), "-f", "gauss5", "--json", dir.file("s.json"), "--jobs", "2", "-v"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find(enough ? "GPU codec (--codec auto takes it from 64"
                            : "OpenCV's codec (--codec auto takes the GPU codec from 64") != std::string::npos);
    const nlohmann::json summary = nlohmann::json::parse(cuconv::test::read_file(dir.file("s.json")));
    REQUIRE(summary["files"].size() == (enough ? 64U : 63U));
    for (const auto& file : summary["files"]) {
      CHECK(file["status"] == "ok");
      CHECK(file["decoder"].get<std::string>().starts_with(enough ? "nvjpeg" : "libjpeg"));
      CHECK(file["encoder"] == (enough ? "nvjpeg" : "libjpeg"));
    }
    CHECK(summary["totals"]["gpu_codec"]["files"] == (enough ? 64 : 0));
  }
}
