// SPDX-License-Identifier: Apache-2.0
#pragma once
// The bad-input matrix's machinery, shared by its suites: crafted files, the fixture folder every
// row names, and one row's run through the real binary with its checks (exit code, message,
// nothing written).
#include "adversarial_files.hpp"
#include "test_support.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>

namespace cuconv::test::bad_input {

using crafted::big_endian;
using crafted::little_endian;

// ---- crafting files -----------------------------------------------------------------------------

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A PNG chunk with a correct CRC.
inline std::string png_chunk(const std::string& type, const std::string& data) {
  const std::string body = type + data;
  const auto crc =
      static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
  return big_endian(data.size(), 4) + body + big_endian(crc, 4);
}

/// A whole PNG: IHDR (8-bit, the colour type given), IDAT holding `rows` compressed, IEND.
/// Colour types: 0 gray, 2 RGB, 4 gray + alpha.
inline std::string png_file(std::uint32_t width, std::uint32_t height, int colour_type, const std::string& rows = "") {
  const std::string ihdr =
      big_endian(width, 4) + big_endian(height, 4) + std::string{8, static_cast<char>(colour_type), 0, 0, 0};
  std::string idat;
  if (!rows.empty()) {
    uLongf size = compressBound(static_cast<uLong>(rows.size()));
    idat.resize(size);
    REQUIRE(compress(reinterpret_cast<Bytef*>(idat.data()), &size, reinterpret_cast<const Bytef*>(rows.data()),
                     static_cast<uLong>(rows.size())) == Z_OK);
    idat = png_chunk("IDAT", idat.substr(0, size));
  }
  return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) + idat + png_chunk("IEND", "");
}

/// Scanlines of an 8-bit image as IDAT compresses them: filter type 0, then the row's bytes.
inline std::string png_rows(int rows, int bytes_per_row) {
  std::string data;
  for (int r = 0; r < rows; ++r) data += '\0' + std::string(static_cast<std::size_t>(bytes_per_row), '\x40');
  return data;
}

enum class TiffKind { little_endian, big_endian, big_tiff };

/// A TIFF holding only a first directory with ImageWidth and ImageLength (no pixel data).
inline std::string tiff_claiming(std::uint64_t width, std::uint64_t height, TiffKind kind) {
  const bool little = kind != TiffKind::big_endian;
  const auto number = [little](std::uint64_t value, int count) {
    return little ? little_endian(value, count) : big_endian(value, count);
  };
  constexpr int kLong = 4, kLong8 = 16;
  if (kind == TiffKind::big_tiff) {
    std::string file = "II" + number(43, 2) + number(8, 2) + number(0, 2) + number(16, 8) + number(2, 8);
    file += number(256, 2) + number(kLong8, 2) + number(1, 8) + number(width, 8);
    file += number(257, 2) + number(kLong8, 2) + number(1, 8) + number(height, 8);
    return file + number(0, 8);
  }
  std::string file = (little ? "II" : "MM") + number(42, 2) + number(8, 4) + number(2, 2);
  file += number(256, 2) + number(kLong, 2) + number(1, 4) + number(width, 4);
  file += number(257, 2) + number(kLong, 2) + number(1, 4) + number(height, 4);
  return file + number(0, 4);
}

/// A BMP file header and BITMAPINFOHEADER (24-bit, uncompressed) with no pixel data.
inline std::string bmp_claiming(std::int32_t width, std::int32_t height) {
  std::string file = "BM" + little_endian(54, 4) + little_endian(0, 4) + little_endian(54, 4);
  file += little_endian(40, 4) + little_endian(static_cast<std::uint32_t>(width), 4) +
          little_endian(static_cast<std::uint32_t>(height), 4) + little_endian(1, 2) + little_endian(24, 2);
  return file + std::string(24, '\0');
}

/// `jpeg` with the first SOF0 segment's height and width replaced.
inline std::string jpeg_claiming(std::string jpeg, std::uint16_t width, std::uint16_t height) {
  const auto sof = jpeg.find("\xFF\xC0");
  REQUIRE(sof != std::string::npos);
  jpeg.replace(sof + 5, 4, big_endian(height, 2) + big_endian(width, 2));
  return jpeg;
}

inline std::string encode(const std::string& ext, const cv::Mat& image, const std::vector<int>& params = {}) {
  std::vector<unsigned char> bytes;
  REQUIRE(cv::imencode(ext, image, bytes, params));
  return {bytes.begin(), bytes.end()};
}

/// `bytes` with the byte at `offset` changed, the way a bad sector or a bit flip would.
inline std::string flip_byte(std::string bytes, std::size_t offset) {
  REQUIRE(offset < bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5A);
  return bytes;
}

inline std::size_t find_or_fail(const std::string& bytes, const std::string& what, std::size_t from = 0) {
  const auto at = bytes.find(what, from);
  REQUIRE(at != std::string::npos);
  return at;
}

// ---- the fixture folder ---------------------------------------------------------------------------

/// Every file the rows name, in one folder: "@name" in a row is the file `name` there.
class Fixtures {
 public:
  Fixtures() {
    const cv::Mat coffee = cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED);
    const std::string png = read_file(sample("camera.png"));
    const std::string jpeg = encode(".jpg", coffee, {cv::IMWRITE_JPEG_QUALITY, 90});
    const std::string progressive = encode(".jpg", coffee, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
    const std::string tiff = encode(".tif", coffee);
    const std::string bmp = encode(".bmp", coffee);
    fs::copy_file(sample("camera.png"), file("camera.png"));
    put("coffee.webp", encode(".webp", coffee));

    // Not image files at all.
    put("empty.png", "");
    put("notes.txt", "just some text\n");
    put("text.png", "#!/bin/sh\necho not an image\n");
    fs::copy_file("/bin/true", file("elf-binary.png"));
    std::string random(4096, '\0');
    cv::RNG rng(6);
    for (char& c : random) c = static_cast<char>(rng.uniform(0, 256));
    put("random.png", random);
    fs::create_directory(file("images.d"));
    fs::create_symlink(file("gone.png"), file("dangling.png"));
    REQUIRE(::mkfifo(file("fifo.png").c_str(), 0644) == 0);

    // PNG: cut at several points, damaged, or with a header that lies.
    put("png-signature-only.png", png.substr(0, 8));
    put("png-cut-in-ihdr.png", png.substr(0, 20));
    put("png-ihdr-only.png", png.substr(0, 33));
    put("png-cut-25.png", png.substr(0, png.size() / 4));
    put("png-cut-50.png", png.substr(0, png.size() / 2));
    put("png-cut-99.png", png.substr(0, png.size() * 99 / 100));
    put("png-no-iend.png", png.substr(0, png.size() - 12));
    const std::size_t idat = find_or_fail(png, "IDAT");
    std::size_t idat_length = 0;
    for (std::size_t i = idat - 4; i < idat; ++i) idat_length = idat_length << 8 | static_cast<unsigned char>(png[i]);
    put("png-bad-idat-data.png", flip_byte(png, idat + 40));
    put("png-bad-idat-crc.png", flip_byte(png, idat + 4 + idat_length));
    put("png-bad-ihdr-crc.png", flip_byte(png, 8 + 8 + 13));
    put("png-bad-chunk-length.png", png.substr(0, idat - 4) + big_endian(0xFFFFFFF0u, 4) + png.substr(idat));
    put("png-short-data.png", png_file(8, 8, 0, png_rows(4, 8)));  // 4 of 8 rows, all chunks intact
    put("png-zero-width.png", png_file(0, 16, 0));
    put("png-zero-height.png", png_file(16, 0, 0));
    put("png-100000x100000.png", png_file(100000, 100000, 2));
    put("png-40000x40000.png", png_file(40000, 40000, 0, png_rows(1, 40000)));
    put("png-30000x30000.png", png_file(30000, 30000, 2, png_rows(1, 3 * 30000)));

    // JPEG: baseline and progressive cut short, markers damaged, a frame header that lies.
    put("jpeg-cut-in-header.jpg", jpeg.substr(0, 100));
    put("jpeg-cut-50.jpg", jpeg.substr(0, jpeg.size() / 2));
    put("jpeg-no-eoi.jpg", jpeg.substr(0, jpeg.size() - 2));
    put("progressive-cut-30.jpg", progressive.substr(0, progressive.size() * 3 / 10));
    put("progressive-cut-70.jpg", progressive.substr(0, progressive.size() * 7 / 10));
    put("progressive-no-eoi.jpg", progressive.substr(0, progressive.size() - 2));
    // Cut where a scan starts and closed with EOI: a well-formed file, only its later scans
    // missing; libjpeg decodes it to a blurred image without a warning.
    const std::size_t second_scan = find_or_fail(progressive, "\xFF\xDA", find_or_fail(progressive, "\xFF\xDA") + 2);
    const std::size_t last_scan = progressive.rfind("\xFF\xDA");
    put("progressive-one-scan-eoi.jpg", progressive.substr(0, second_scan) + "\xFF\xD9");
    put("progressive-last-scan-missing.jpg", progressive.substr(0, last_scan) + "\xFF\xD9");
    // Cut inside compressed data and closed with EOI: every scan is there, the data runs out.
    put("progressive-cut-in-last-scan-eoi.jpg",
        progressive.substr(0, last_scan + (progressive.size() - last_scan) / 2) + "\xFF\xD9");
    put("jpeg-cut-50-eoi.jpg", jpeg.substr(0, jpeg.size() / 2) + "\xFF\xD9");
    const std::size_t sos = find_or_fail(jpeg, "\xFF\xDA");
    const std::size_t dqt = find_or_fail(jpeg, "\xFF\xDB");
    put("jpeg-sos-damaged.jpg", flip_byte(jpeg, sos + 1));
    put("jpeg-marker-zeroed.jpg", jpeg.substr(0, dqt + 1) + std::string(1, '\0') + jpeg.substr(dqt + 2));
    put("jpeg-segment-too-long.jpg", jpeg.substr(0, dqt + 2) + "\xFF\xFF" + jpeg.substr(dqt + 4));
    put("jpeg-65535x65535.jpg", jpeg_claiming(jpeg, 65535, 65535));
    put("jpeg-zero-width.jpg", jpeg_claiming(jpeg, 0, 400));

    // TIFF, BMP, PAM.
    put("tiff-cut-50.tif", tiff.substr(0, tiff.size() / 2));
    put("tiff-header-only.tif", tiff.substr(0, 8));
    REQUIRE(cv::imwrite(file("f64.tif"), cv::Mat(8, 8, CV_64F, cv::Scalar(0.5))));
    REQUIRE(cv::imwrite(file("s16.tif"), cv::Mat(8, 8, CV_16S, cv::Scalar(-5))));
    put("tiff-100000x100000.tif", tiff_claiming(100000, 100000, TiffKind::little_endian));
    put("tiff-mm-100000x100000.tif", tiff_claiming(100000, 100000, TiffKind::big_endian));
    put("bigtiff-100000x100000.tif", tiff_claiming(100000, 100000, TiffKind::big_tiff));
    put("bmp-cut-50.bmp", bmp.substr(0, bmp.size() / 2));
    put("bmp-header-only.bmp", bmp.substr(0, 54));
    put("bmp-100000x100000.bmp", bmp_claiming(100000, -100000));
    put("bmp-2000000x1.bmp", bmp_claiming(2000000, 1));
    put("bmp-zero-width.bmp", bmp_claiming(0, 10));
    put("bmp-negative-width.bmp", bmp_claiming(-10, 10));
    put("gray-alpha.pam",
        "P7\nWIDTH 4\nHEIGHT 2\nDEPTH 2\nMAXVAL 255\nTUPLTYPE GRAYSCALE_ALPHA\nENDHDR\n" + std::string(16, '\x7f'));
    // The adversarial pass (issue 48): crafted files, a symbolic link loop, a --from list with a NUL.
    for (const auto& [name, bytes] : cuconv::test::crafted::adversarial_seeds()) put(name, bytes);
    fs::create_symlink(file("loop-b.png"), file("loop-a.png"));
    fs::create_symlink(file("loop-a.png"), file("loop-b.png"));
    fs::create_directory(file("batch.d"));
    fs::copy_file(sample("camera.png"), file("batch.d/a.png"));
    fs::copy_file(sample("camera.png"), file("batch.d/a_b.png"));
    put("nul-list.txt", file("batch.d/a.png") + std::string(1, '\0') + file("batch.d/a_b.png") + "\n");

    // Filters.
    put("empty.txt", "");
    put("comments.txt", "# nothing but a comment\n\n");
    put("word.txt", "1 2 1\n2 four 2\n1 2 1\n");
    put("ragged.txt", "1 2 3\n4 5\n");
    put("missing-value.txt", "1,,2\n");
    put("nan.txt", "1 nan 1\n");
    put("huge-value.txt", "1 1e999 1\n");
    std::string wide;
    for (int i = 0; i < 128; ++i) wide += "1 ";
    put("wide.txt", wide + "\n");
    put("scale0.mat", "3 3 0\n1 1 1\n1 1 1\n1 1 1\n");
    put("one-field.mat", "3\n1 1 1\n");
    put("few-rows.mat", "3 3\n1 1 1\n1 1 1\n");
    put("extra-row.mat", "1 1\n1\n1\n");
    fs::create_directory(file("filters.d"));

    // Outputs that cannot be written.
    fs::create_directory(file("out-is-dir.png"));
    fs::create_directory(file("out-dir"));
    REQUIRE(::mkfifo(file("out-fifo.png").c_str(), 0644) == 0);
    fs::create_directory(file("read-only"));
    fs::permissions(file("read-only"), fs::perms::owner_read | fs::perms::owner_exec);
    fs::create_symlink(file("camera.png"), file("camera-link.png"));
    fs::create_hard_link(file("camera.png"), file("camera-hard-link.png"));
  }
  ~Fixtures() { fs::permissions(file("read-only"), fs::perms::owner_all); }  // so TempDir can remove it
  Fixtures(const Fixtures&) = delete;
  Fixtures& operator=(const Fixtures&) = delete;

  [[nodiscard]] std::string file(const std::string& name) const { return dir_.file(name); }
  [[nodiscard]] const fs::path& root() const { return dir_.path(); }
  /// "@name" -> the fixture file's path; anything else as it is.
  [[nodiscard]] std::string expand(const std::string& text) const {
    return text.starts_with('@') ? file(text.substr(1)) : text;
  }

 private:
  void put(const std::string& name, const std::string& bytes) const { write_bytes(file(name), bytes); }
  TempDir dir_;
};

/// Size and modification time of everything below `root`: equal snapshots mean nothing was
/// added, removed or rewritten.
inline std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> snapshot(const fs::path& root) {
  std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> entries;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    std::error_code ec;
    const std::uintmax_t size = entry.is_regular_file(ec) ? entry.file_size(ec) : 0;
    // A link's own time is not asked for: last_write_time follows it (and fails on a dangling one).
    entries[entry.path().string()] = {size, entry.is_symlink(ec) ? fs::file_time_type{} : entry.last_write_time(ec)};
  }
  return entries;
}

// GCC says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define CUCONV_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUCONV_TEST_UNDER_ASAN 1
#endif
#endif

/// Shell commands that cap cuconv's address space, so that a refusal "before allocating"
/// is proved by the run surviving. AddressSanitizer reserves terabytes of address space up
/// front, so under it the cap is left out (the row still runs). A server cannot apply the
/// caller's cap (`--server always` exits 5 for it), so a capped row runs in-process, also in the
/// served suite.
inline std::string memory_cap(int megabytes) {
#if defined(CUCONV_TEST_UNDER_ASAN)
  (void)megabytes;
  MESSAGE("AddressSanitizer build: the memory cap (ulimit -v) is left out");
  return "";
#else
  return "ulimit -v " + std::to_string(megabytes * 1024) + "; export CUCONV_SERVER=never";
#endif
}

/// One way to be refused. Designated initializers keep each row readable; what a row leaves
/// out is the usual case: the sample image, a preset filter on the CPU, a PNG output.
struct Refusal {
  const char* what;                   ///< the case, shown when the row fails
  std::string input = "@camera.png";  ///< "@name": a fixture file; "" leaves INPUT out
  std::vector<std::string> options = {"--filter", "gauss5", "--variant", "opencv"};
  ExitCode code = ExitCode::bad_input;
  std::string reason;               ///< distinctive words of the message
  std::string names;                ///< the file or option the message names; "" = the input
  std::string output = "@out.png";  ///< "" leaves OUTPUT out
  std::string shell_setup;          ///< run before cuconv in the same shell (resource limits)
};

inline void expect_refused(const Refusal& row, const Fixtures& fixtures) {
  std::vector<std::string> args;
  if (!row.input.empty()) args.push_back(fixtures.expand(row.input));
  if (!row.output.empty()) args.push_back(fixtures.expand(row.output));
  for (const std::string& option : row.options) args.push_back(fixtures.expand(option));
  const std::string names = fixtures.expand(row.names.empty() ? row.input : row.names);
  const std::string output = fixtures.expand(row.output);
  REQUIRE_MESSAGE(!names.empty(), row.what, ": a row must say what the message names");
  REQUIRE_MESSAGE(!row.reason.empty(), row.what, ": a row must say what the message says");
  std::string command;
  for (const std::string& arg : args) command += " " + arg;

  const auto before = snapshot(fixtures.root());
  std::error_code ec;
  const fs::file_type output_type_before = fs::symlink_status(output, ec).type();  // outputs outside the folder
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_cuconv(args, "", row.shell_setup);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  INFO(std::string(row.what), "\n  cuconv", command, "\n  exit code ", result.exit_code, "\n  stderr: ", result.err);
  CHECK(result.exit_code == static_cast<int>(row.code));
  CHECK_MESSAGE(result.err.find(names) != std::string::npos, "the message does not name '", names, "'");
  CHECK_MESSAGE(result.err.find(row.reason) != std::string::npos, "the message does not say '", row.reason, "'");
  // Refused inputs and outputs are cuconv's to explain: no raw library text (libpng, libjpeg,
  // OpenCV's imread notes) on stderr, only cuconv's own lines.
  if (row.code == ExitCode::bad_input || row.code == ExitCode::output) {
    std::istringstream lines(result.err);
    for (std::string line; std::getline(lines, line);)
      CHECK_MESSAGE(line.starts_with("cuconv: "), "a line on stderr is not cuconv's: ", line);
  }
  CHECK_MESSAGE(snapshot(fixtures.root()) == before,
                "the test folder changed: an output or temporary file was left, or an input was rewritten");
  CHECK_MESSAGE(fs::symlink_status(output, ec).type() == output_type_before, "the output path changed");
  CHECK_MESSAGE(seconds < 10, "the refusal took ", seconds, " s");
}

inline void expect_all_refused(const std::vector<Refusal>& rows) {
  const Fixtures fixtures;
  for (const Refusal& row : rows) expect_refused(row, fixtures);
}

}  // namespace cuconv::test::bad_input
