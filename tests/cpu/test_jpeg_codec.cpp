// SPDX-License-Identifier: Apache-2.0
// The GPU JPEG path's host side, on any machine: the marker walk (which files nvJPEG may
// decode, which APP segments are copied), segment insertion, the codec choice, the CLI's
// fallback behaviour without a GPU (auto takes OpenCV; --codec gpu exits 5 and writes nothing),
// and the GPU suite's decoder bounds against a decoder built like nvJPEG and planted defects.
#include "adversarial_files.hpp"
#include "jpeg_test_support.hpp"
#include "test_support.hpp"

#include "codec/image_header.hpp"
#include "codec/nvjpeg_codec.hpp"
#include "engine/batch_pipeline.hpp"
#include "engine/gpu_codec_route.hpp"
#include "gpu/launch/cufft_api.hpp"
#include "gpu/shared_library.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

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

struct JpegErrors {
  jpeg_error_mgr base;  // first: libjpeg hands back a pointer to it
  std::jmp_buf unwind;
};
[[noreturn]] void jpeg_failed(j_common_ptr info) { std::longjmp(reinterpret_cast<JpegErrors*>(info->err)->unwind, 1); }

/// `image` (BGR or gray) as a JPEG from libjpeg at `quality`, luma sampled h x v times the chroma
/// (2x2: 4:2:0, 2x1: 4:2:2, 1x1: 4:4:4); empty if libjpeg fails.
Bytes libjpeg_encoded(const cv::Mat& image, int quality, int h, int v) {
  jpeg_compress_struct info{};
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.base);
  errors.base.error_exit = jpeg_failed;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (setjmp(errors.unwind) != 0) {
    jpeg_destroy_compress(&info);
    std::free(buffer);
    return {};
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = static_cast<JDIMENSION>(image.cols);
  info.image_height = static_cast<JDIMENSION>(image.rows);
  info.input_components = image.channels();
  info.in_color_space = image.channels() == 1 ? JCS_GRAYSCALE : JCS_EXT_BGR;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  if (image.channels() == 3) {
    info.comp_info[0].h_samp_factor = h;
    info.comp_info[0].v_samp_factor = v;
  }
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.ptr<std::uint8_t>(static_cast<int>(info.next_scanline)));
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  Bytes out(buffer, buffer + size);
  jpeg_destroy_compress(&info);
  std::free(buffer);
  return out;
}

/// `jpeg` decoded by libjpeg with chroma upsampled by replication (`fancy` false, as nvJPEG
/// does) or by libjpeg-turbo's interpolation (true, as OpenCV), with `idct`; empty on failure.
cv::Mat libjpeg_decoded(const Bytes& jpeg, bool fancy, J_DCT_METHOD idct) {
  jpeg_decompress_struct info{};
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.base);
  errors.base.error_exit = jpeg_failed;
  cv::Mat image;
  if (setjmp(errors.unwind) != 0) {
    jpeg_destroy_decompress(&info);
    return {};
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&info, TRUE);
  info.do_fancy_upsampling = fancy ? TRUE : FALSE;
  info.dct_method = idct;
  if (info.num_components == 3) info.out_color_space = JCS_EXT_BGR;
  jpeg_start_decompress(&info);
  image.create(static_cast<int>(info.output_height), static_cast<int>(info.output_width),
               info.output_components == 1 ? CV_8UC1 : CV_8UC3);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = image.ptr<std::uint8_t>(static_cast<int>(info.output_scanline));
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return image;
}

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

TEST_CASE("jpeg markers: one walk gives read_image's header check and the GPU route's markers") {
  const TempDir dir;
  const std::string path = dir.file("exif.jpg");
  const Bytes exif = cuconv::test::exif_segment();
  const Bytes input = cuconv::test::with_segments(photo_jpeg(true), {exif});
  cuconv::test::write_bytes(path, input);

  // The GPU route's read: the bytes, and from the same walk the markers inspect_image_file's
  // header check and read_jpeg_markers find.
  codec::JpegFile file = codec::read_walked_jpeg_file(path, kDefaultMaxPixels);
  CHECK(file.bytes == input);
  REQUIRE(file.markers.valid);
  CHECK(file.markers.frame_marker == 0xC2);
  REQUIRE(file.markers.copied_segments.size() == 1);
  const codec::JpegFile moved = std::move(file);  // the segments point into the bytes, moved or not
  const std::span<const std::uint8_t> segment = moved.markers.copied_segments[0];
  CHECK(segment.data() > moved.bytes.data());
  CHECK(segment.data() + segment.size() < moved.bytes.data() + moved.bytes.size());
  CHECK(Bytes(segment.begin(), segment.end()) == exif);
  const auto header = codec::inspect_image_file(path);
  REQUIRE(header);
  CHECK(header->format == "JPEG");
  CHECK(header->width == 451);
  CHECK(header->height == 300);
  CHECK(header->channels == 3);
  CHECK(header->defect.empty());
  const codec::JpegStructure walked = codec::walk_jpeg(moved.bytes);
  const codec::JpegMarkers to_first_scan = read_jpeg_markers(moved.bytes);
  REQUIRE(walked.markers.copied_segments.size() == to_first_scan.copied_segments.size());
  CHECK(walked.markers.copied_segments[0].data() == to_first_scan.copied_segments[0].data());
  CHECK(walked.markers.width == 451);

  // A file cut inside its scans: the GPU route's read refuses it with read_image's own words,
  // and a walk to the first scan alone finds its markers whole.
  const std::string cut_path = dir.file("cut.jpg");
  const Bytes cut(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(input.size() / 2));
  cuconv::test::write_bytes(cut_path, cut);
  std::string read_image_says;
  try {
    static_cast<void>(read_image(cut_path));
  } catch (const Error& e) {
    read_image_says = e.what();
  }
  CHECK(read_image_says.find("truncated or corrupt JPEG file: the file ends after") != std::string::npos);
  CHECK_THROWS_WITH_AS(static_cast<void>(codec::read_walked_jpeg_file(cut_path, kDefaultMaxPixels)),
                       read_image_says.c_str(), Error);
  CHECK(read_jpeg_markers(cut).valid);
  CHECK(codec::walk_jpeg(cut).defect == read_image_says.substr(read_image_says.find("the file ends")));
}

TEST_CASE(
    "jpeg markers: an ICC profile is copied when its chunks and header are sound, else dropped with the host route's "
    "warning") {
  using cuconv::test::icc_chunk;
  using cuconv::test::minimal_icc_profile;
  const std::string profile = minimal_icc_profile(300);
  const Bytes c1 = icc_chunk(1, 3, profile.substr(0, 100));
  const Bytes c2 = icc_chunk(2, 3, profile.substr(100, 100));
  const Bytes c3 = icc_chunk(3, 3, profile.substr(200));
  std::string no_acsp = profile;
  no_acsp.replace(36, 4, "xxxx");
  struct Row {
    const char* what;
    std::vector<Bytes> icc;
    std::string defect;  ///< "": sound, copied
  };
  const std::vector<Row> rows = {
      {"one chunk", {icc_chunk(1, 1, profile)}, ""},
      {"three chunks", {c1, c2, c3}, ""},
      {"one chunk padded after the profile", {icc_chunk(1, 1, profile + std::string(40, '\0'))}, ""},
      {"a header of garbage (the adversarial pass's file)",
       {icc_chunk(1, 1, std::string(200, 'A'))},
       "its header declares 1094795585 bytes, it holds 200"},
      {"cut short", {icc_chunk(1, 1, profile.substr(0, 200))}, "its header declares 300 bytes, it holds 200"},
      {"shorter than a header",
       {icc_chunk(1, 1, profile.substr(0, 100))},
       "100 bytes, shorter than an ICC profile's 128-byte header"},
      {"no 'acsp'", {icc_chunk(1, 1, no_acsp)}, "no 'acsp' signature in its header"},
      {"a chunk missing", {c1, c3}, "chunk 3 of 3 where chunk 2 belongs"},
      {"the last chunk missing", {c1, c2}, "chunk 3 of 3 is missing"},
      {"a chunk twice", {c1, c1, c2, c3}, "chunk 1 of 3 where chunk 2 belongs"},
      {"chunks out of order", {c2, c1, c3}, "chunk 2 of 3 where chunk 1 belongs"},
      {"counts that disagree",
       {c1, icc_chunk(2, 2, profile.substr(100))},
       "its chunks disagree on their count (3 and 2)"},
      {"chunk number 0", {icc_chunk(0, 1, profile)}, "chunk number 0 of 1"},
      {"a count of 0", {icc_chunk(1, 0, profile)}, "chunk number 1 of 0"},
      {"a chunk of 2 bytes", {c1, c2, icc_chunk(3, 3, "ab")}, "chunk 3 of 3 holds fewer than 4 bytes"},
      {"no number nor count",
       {cuconv::test::app_segment(2, std::string("ICC_PROFILE\0", 12))},
       "an ICC_PROFILE segment without its chunk number and count"},
  };
  const Bytes exif =
      cuconv::test::app_segment(1, std::string("Exif\0\0", 6) + cuconv::test::crafted::exif_with_orientation(6));
  const Bytes xmp = cuconv::test::app_segment(1, std::string("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>", 41));
  TempDir dir;
  for (const Row& row : rows) {
    INFO(std::string(row.what));
    std::vector<Bytes> segments{exif};
    segments.insert(segments.end(), row.icc.begin(), row.icc.end());
    segments.push_back(xmp);
    const Bytes input = cuconv::test::with_segments(photo_jpeg(), segments);
    const codec::JpegMarkers m = read_jpeg_markers(input);
    REQUIRE(m.valid);
    CHECK(codec::jpeg_icc_defect(m) == row.defect);
    std::vector<std::string> warnings;
    const auto kept = codec::jpeg_segments_to_copy(m, &warnings);
    std::vector<Bytes> kept_bytes;
    for (const auto& segment : kept) kept_bytes.emplace_back(segment.begin(), segment.end());
    if (row.defect.empty()) {
      CHECK(kept_bytes == segments);
      CHECK(warnings.empty());
    } else {
      CHECK(kept_bytes == std::vector<Bytes>{exif, xmp});  // the EXIF and XMP beside it stay
      REQUIRE(warnings.size() == 1);
      CHECK(warnings.front() == "ICC profile dropped: not a valid profile (" + row.defect + ")");
    }
    // The host route (exiv2) judges the same file alike, in the same words.
    const std::string path = dir.file("icc.jpg");
    cuconv::test::write_bytes(path, input);
    const ImageMetadata host = read_metadata(path);
    CHECK(exif_orientation(host) == 6);
    CHECK(host.xmp == "<x:xmpmeta/>");  // read past a malformed chunk, too
    CHECK(host.icc.empty() == !row.defect.empty());
    INFO("host: ", fmt::format("{}", fmt::join(host.warnings, " | ")));
    CHECK(host.warnings == warnings);
  }
  // A CMYK file's profile does not describe the BGR output: dropped, sound or not, without a warning.
  Bytes cmyk = cuconv::test::with_segments(photo_jpeg(), {exif, icc_chunk(1, 1, profile)});
  cmyk[cuconv::test::frame_offset(cmyk) + 9] = 4;
  std::vector<std::string> warnings;
  const auto kept = codec::jpeg_segments_to_copy(read_jpeg_markers(cmyk), &warnings);
  REQUIRE(kept.size() == 1);
  CHECK(Bytes(kept[0].begin(), kept[0].end()) == exif);
  CHECK(warnings.empty());
  CHECK(codec::jpeg_segments_to_copy(read_jpeg_markers(cmyk), nullptr).size() == 1);
}

TEST_CASE("codec choice: JPEG -> JPEG only, auto takes the GPU codec for large batches, gpu without a GPU is exit 5") {
  using common::Codec;
  int asked = 0;
  const auto usable = [&asked](const codec::GpuCodecFormat&) {
    ++asked;
    return std::string();
  };
  const auto unusable = [&asked](const codec::GpuCodecFormat&) {
    ++asked;
    return std::string("no usable CUDA device (test)");
  };
  engine::CodecRequest request;
  // auto: OpenCV's codec for fewer JPEG -> JPEG jobs than 16 per CPU thread (at least 64), without
  // asking for a GPU; from there the GPU codec when it is usable, and OpenCV's quietly when not.
  CHECK(engine::auto_gpu_codec_threshold(2) == 64);
  CHECK(engine::auto_gpu_codec_threshold(16) == 256);
  CHECK(engine::auto_gpu_codec_threshold(0) >= 64);
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.JPEG", usable));  // one job: single-image mode
  request.cpu_threads = 16;
  request.gpu_codec_jobs = 255;
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.JPEG", usable));
  CHECK(asked == 0);
  request.gpu_codec_jobs = 256;
  CHECK(engine::choose_gpu_codec(request, "a.jpg", "b.JPEG", usable) == codec::gpu_codec_for("x.jpeg", "y.jpg"));
  CHECK(codec::gpu_codec_for("x.jpeg", "y.jpg")->name == "nvjpeg");
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.JPEG", unusable));  // no throw under auto
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.png", usable));
  request.gpu_codec_jobs = 1;
  request.codec = Codec::gpu;
  CHECK(engine::choose_gpu_codec(request, "a.jpg", "b.JPEG", usable));
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.png", "b.jpg", usable));
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.png", usable));
  asked = 0;
  request.codec = Codec::opencv;
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  CHECK(asked == 0);  // --codec opencv never looks for a GPU
  request.codec = Codec::gpu;
  CHECK(engine::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.png", "b.png", unusable));  // mixed batches: others keep OpenCV
  try {
    (void)engine::choose_gpu_codec(request, "a.jpg", "b.jpg", unusable);
    FAIL("--codec gpu without a GPU must throw");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::gpu);
    CHECK(std::string(e.what()).find("no usable CUDA device (test)") != std::string::npos);
  }
  request.variant = Variant::opencv;
  CHECK_THROWS_AS((void)engine::choose_gpu_codec(request, "a.jpg", "b.jpg", usable), Error);
  request.codec = Codec::automatic;
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  request.variant = Variant::automatic;
  request.auto_orient = true;
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  request.auto_orient = false;
  request.host_features = true;
  CHECK_FALSE(engine::choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  CHECK(common::parse_codec("gpu") == Codec::gpu);
  CHECK_FALSE(common::parse_codec("nvjpeg").has_value());
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
  const auto batch_auto = run_cuconv(
      {"--out-dir", dir.file("b2"), in, sample("camera.png"), "-f", "gauss5", "--json", dir.file("summary.json")});
  CHECK(batch_auto.exit_code == 0);
  const nlohmann::json summary = nlohmann::json::parse(cuconv::test::read_file(dir.file("summary.json")));
  for (const auto& file : summary["files"]) {  // the host route's own libraries: libjpeg for JPEG
    const bool jpeg = file["input"].get<std::string>().ends_with(".jpg");
    CHECK(file["decoder"] == (jpeg ? "libjpeg" : "opencv"));
    CHECK(file["encoder"] == (jpeg ? "libjpeg" : "opencv"));
  }
}

TEST_CASE("batch engine: GPU JPEG items whose codec cannot start fail with a GPU error, the others are written") {
  std::string reason;
  if (cuda_device_available(&reason)) {
    MESSAGE("skipped: this machine has a CUDA device; the GPU suite covers the GPU codec in batches");
    return;
  }
  TempDir dir;
  std::vector<engine::BatchItem> items;
  for (const char* name : {"a", "b", "c"}) {
    const std::string in = dir.file(std::string(name) + ".jpg");
    cuconv::test::write_bytes(in, photo_jpeg(std::string(name) == "b"));
    items.push_back({in, dir.file(std::string("out-") + name + ".jpg")});
  }
  items.push_back({sample("camera.png"), dir.file("out-camera.png")});
  engine::BatchOptions options;
  options.run.filter = load_filter("gauss5");
  options.jobs = 2;
  options.gpu_pipeline.batch = 2;
  for (const engine::BatchItem& item : items)
    options.routes.push_back(engine::Route{codec::gpu_codec_for(item.input, item.output)});
  const engine::BatchSummary summary = engine::run_batch(items, options);
  REQUIRE(summary.items.size() == 4);
  for (const engine::ItemReport& item : summary.items) {
    CAPTURE(item.input);
    if (item.input.ends_with(".png")) {
      CHECK(item.status == engine::ItemStatus::ok);
      CHECK(std::filesystem::exists(item.output));
      CHECK(item.decoder == "opencv");
    } else {
      CHECK(item.status == engine::ItemStatus::failed);
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
  CHECK_MESSAGE(cuconv::gpu::cufft_api(&reason) != nullptr, reason);
  reason.clear();
  CHECK_MESSAGE(codec::nvjpeg_available(&reason), reason);
  // The search order: the loader's own paths first, then the given folders, then the toolkit.
  const std::vector<std::string> c = cuconv::gpu::library_candidates("libx.so.1", {"/opt/x"});
  REQUIRE(c.size() >= 3);
  CHECK(c.front() == "libx.so.1");
  CHECK(c[1] == "/opt/x/libx.so.1");
  CHECK(c.back() == "/usr/local/cuda/lib64/libx.so.1");
  CHECK(cuconv::gpu::open_first({"libcuconv-no-such-library.so"}) == nullptr);
}

/// The four file kinds of the bounds: libjpeg's sampling factors (luma h x v times chroma).
struct BoundKind {
  const char* what;
  int h, v;
  test::JpegBound bound;
};
constexpr BoundKind kBoundKinds[] = {{"4:2:0", 2, 2, test::kDecode420},
                                     {"4:2:2", 2, 1, test::kDecode422},
                                     {"4:4:4", 1, 1, test::kDecode444},
                                     {"gray", 1, 1, test::kDecodeGray}};

TEST_CASE(
    "jpeg bounds: a decoder built like nvJPEG passes each file kind's bound on five photos, a block off by 20 or an "
    "MCU off by 5 fails it") {
  // nvJPEG upsamples chroma by replication and has libjpeg-turbo's integer IDCT: libjpeg with
  // do_fancy_upsampling off gives the GPU suite's measured nvJPEG numbers on chelsea at quality
  // 90 (4:2:0 max 14, mean 0.306). The bounds (tests/support/jpeg_test_support.hpp) are derived from the
  // largest numbers this decoder and a float IDCT reach over bound_photos (printed here, per
  // kind), and must fail one 8x8 block whose every value is off by 20 and one MCU off by 5,
  // wherever it lies.
  for (const BoundKind& k : kBoundKinds) {
    const std::string kind = k.what;
    const bool gray = kind == "gray";
    const std::vector<test::Photo> photos = test::bound_photos(gray);
    REQUIRE(photos.size() >= 5);
    test::JpegDifference worst[2];
    int planted = 0;
    int caught_block = 0;
    int caught_mcu = 0;
    for (const test::Photo& photo : photos) {
      INFO(kind << ", " << photo.name);
      REQUIRE(photo.image.channels() == (gray ? 1 : 3));
      const Bytes jpeg = libjpeg_encoded(photo.image, 90, k.h, k.v);
      REQUIRE_FALSE(jpeg.empty());
      const cv::Mat opencv = cv::imdecode(jpeg, cv::IMREAD_UNCHANGED);
      REQUIRE(test::bit_equal(libjpeg_decoded(jpeg, true, JDCT_ISLOW), opencv));  // the same decoder
      const cv::Mat nvjpeg_like = libjpeg_decoded(jpeg, false, JDCT_ISLOW);
      int i = 0;
      for (const cv::Mat& other : {nvjpeg_like, libjpeg_decoded(jpeg, true, JDCT_FLOAT)}) {
        const test::JpegDifference d = test::jpeg_difference(other, opencv, k.bound.block_w, k.bound.block_h);
        INFO((i == 0 ? "replicated chroma" : "float IDCT") << ", " << test::describe(d, k.bound));
        CHECK(test::within(d, k.bound));
        test::take_worst(worst[i++], d);
      }
      // Plants on the nvJPEG-like pixels, on a grid of positions that reaches every edge.
      const int mcu_w = k.bound.block_w;
      const int mcu_h = k.bound.block_h;
      for (int y = 0; y < opencv.rows; y += std::max(mcu_h, opencv.rows / 6 / mcu_h * mcu_h))
        for (int x = 0; x < opencv.cols; x += std::max(mcu_w, opencv.cols / 6 / mcu_w * mcu_w)) {
          ++planted;
          const auto fails = [&](const cv::Rect& area, int by) {
            const test::JpegDifference d =
                test::jpeg_difference(test::planted(nvjpeg_like, area, by), opencv, mcu_w, mcu_h);
            INFO("planted " << area << " off by " << by << ": " << test::describe(d, k.bound));
            CHECK_FALSE(test::within(d, k.bound));
            return test::within(d, k.bound) ? 0 : 1;
          };
          caught_block += fails(cv::Rect(x, y, 8, 8), 20);
          caught_mcu += fails(cv::Rect(x, y, mcu_w, mcu_h), 5);
        }
    }
    MESSAGE("jpeg bounds, " << kind << " over " << photos.size() << " photos at quality 90: replicated chroma "
                            << test::describe(worst[0], k.bound) << "; float IDCT " << test::describe(worst[1], k.bound)
                            << "; planted: " << caught_block << " of " << planted << " blocks off by 20 and "
                            << caught_mcu << " of " << planted << " MCUs off by 5 fail");
    CHECK(planted >= 5 * 36);
  }
}

TEST_CASE("jpeg bounds: a wrong MCU row fails each file kind's bound on every photo") {
  // Every MCU row that is the previous one again, mid-gray (a row never decoded) or shifted right
  // by one MCU, wherever it lies; on a photo with flat areas (camera's sky, coffee's table) a
  // repeated or shifted row can change next to nothing there, so only the gray row must fail.
  for (const BoundKind& k : kBoundKinds) {
    const std::string kind = k.what;
    for (const test::Photo& photo : test::bound_photos(kind == "gray")) {
      INFO(kind << ", " << photo.name);
      const Bytes jpeg = libjpeg_encoded(photo.image, 90, k.h, k.v);
      REQUIRE_FALSE(jpeg.empty());
      const cv::Mat opencv = cv::imdecode(jpeg, cv::IMREAD_UNCHANGED);
      const cv::Mat nvjpeg_like = libjpeg_decoded(jpeg, false, JDCT_ISLOW);
      const int mcu_w = k.bound.block_w;
      const int mcu_h = k.bound.block_h;
      int rows = 0;
      int caught_repeated = 0;
      int caught_gray = 0;
      int caught_shifted = 0;
      for (int y = mcu_h; y + mcu_h <= opencv.rows; y += mcu_h) {
        ++rows;
        const cv::Rect row(0, y, opencv.cols, mcu_h);
        cv::Mat repeated = nvjpeg_like.clone();
        nvjpeg_like(row - cv::Point(0, mcu_h)).copyTo(repeated(row));
        cv::Mat gray = nvjpeg_like.clone();
        gray(row).setTo(cv::Scalar::all(128));
        cv::Mat shifted = nvjpeg_like.clone();
        nvjpeg_like(cv::Rect(0, y, opencv.cols - mcu_w, mcu_h))
            .copyTo(shifted(cv::Rect(mcu_w, y, opencv.cols - mcu_w, mcu_h)));
        const auto fails = [&](const cv::Mat& m) {
          return test::within(test::jpeg_difference(m, opencv, mcu_w, mcu_h), k.bound) ? 0 : 1;
        };
        caught_repeated += fails(repeated);
        caught_gray += fails(gray);
        caught_shifted += fails(shifted);
      }
      INFO(rows << " MCU rows: repeated caught " << caught_repeated << ", gray " << caught_gray << ", shifted "
                << caught_shifted);
      CHECK(rows > 10);
      CHECK(caught_gray == rows);
      if (photo.name == "chelsea" || photo.name == "astronaut") {
        CHECK(caught_repeated == rows);
        CHECK(caught_shifted == rows);
      }
    }
  }
}
