// SPDX-License-Identifier: Apache-2.0
// The bad-input matrix: every way a run is refused, one table row each, through the real binary.
// Every row checks the documented exit code, that the message names the file (or option) at
// fault and says why, and that nothing was written: the test folder holds exactly what it held
// before (no output, no temporary file, inputs untouched).
#include "adversarial_files.hpp"
#include "test_support.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <zlib.h>

using cuconv::ExitCode;
using cuconv::test::read_file;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

namespace fs = std::filesystem;

// ---- crafting files -----------------------------------------------------------------------------

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// `count` bytes of `value`, most significant first or last.
std::string big_endian(std::uint64_t value, int count) {
  std::string bytes;
  for (int i = count - 1; i >= 0; --i) bytes += static_cast<char>(value >> (8 * i));
  return bytes;
}
std::string little_endian(std::uint64_t value, int count) {
  std::string bytes;
  for (int i = 0; i < count; ++i) bytes += static_cast<char>(value >> (8 * i));
  return bytes;
}

/// A PNG chunk with a correct CRC.
std::string png_chunk(const std::string& type, const std::string& data) {
  const std::string body = type + data;
  const auto crc = static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
  return big_endian(data.size(), 4) + body + big_endian(crc, 4);
}

/// A whole PNG: IHDR (8-bit, the colour type given), IDAT holding `rows` compressed, IEND.
/// Colour types: 0 gray, 2 RGB, 4 gray + alpha.
std::string png_file(std::uint32_t width, std::uint32_t height, int colour_type, const std::string& rows = "") {
  const std::string ihdr = big_endian(width, 4) + big_endian(height, 4) + std::string{8, static_cast<char>(colour_type), 0, 0, 0};
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
std::string png_rows(int rows, int bytes_per_row) {
  std::string data;
  for (int r = 0; r < rows; ++r) data += '\0' + std::string(static_cast<std::size_t>(bytes_per_row), '\x40');
  return data;
}

enum class TiffKind { little_endian, big_endian, big_tiff };

/// A TIFF holding only a first directory with ImageWidth and ImageLength (no pixel data).
std::string tiff_claiming(std::uint64_t width, std::uint64_t height, TiffKind kind) {
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
std::string bmp_claiming(std::int32_t width, std::int32_t height) {
  std::string file = "BM" + little_endian(54, 4) + little_endian(0, 4) + little_endian(54, 4);
  file += little_endian(40, 4) + little_endian(static_cast<std::uint32_t>(width), 4) +
          little_endian(static_cast<std::uint32_t>(height), 4) + little_endian(1, 2) + little_endian(24, 2);
  return file + std::string(24, '\0');
}

/// `jpeg` with the first SOF0 segment's height and width replaced.
std::string jpeg_claiming(std::string jpeg, std::uint16_t width, std::uint16_t height) {
  const auto sof = jpeg.find("\xFF\xC0");
  REQUIRE(sof != std::string::npos);
  jpeg.replace(sof + 5, 4, big_endian(height, 2) + big_endian(width, 2));
  return jpeg;
}

std::string encode(const std::string& ext, const cv::Mat& image, const std::vector<int>& params = {}) {
  std::vector<unsigned char> bytes;
  REQUIRE(cv::imencode(ext, image, bytes, params));
  return {bytes.begin(), bytes.end()};
}

/// `bytes` with the byte at `offset` changed, the way a bad sector or a bit flip would.
std::string flip_byte(std::string bytes, std::size_t offset) {
  REQUIRE(offset < bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5A);
  return bytes;
}

std::size_t find_or_fail(const std::string& bytes, const std::string& what, std::size_t from = 0) {
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
    put("gray-alpha.pam", "P7\nWIDTH 4\nHEIGHT 2\nDEPTH 2\nMAXVAL 255\nTUPLTYPE GRAYSCALE_ALPHA\nENDHDR\n" + std::string(16, '\x7f'));
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
std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> snapshot(const fs::path& root) {
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
std::string memory_cap(int megabytes) {
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
  const char* what;                    ///< the case, shown when the row fails
  std::string input = "@camera.png";   ///< "@name": a fixture file; "" leaves INPUT out
  std::vector<std::string> options = {"--filter", "gauss5", "--variant", "opencv"};
  ExitCode code = ExitCode::bad_input;
  std::string reason;                  ///< distinctive words of the message
  std::string names;                   ///< the file or option the message names; "" = the input
  std::string output = "@out.png";     ///< "" leaves OUTPUT out
  std::string shell_setup;             ///< run before cuconv in the same shell (resource limits)
};

void expect_refused(const Refusal& row, const Fixtures& fixtures) {
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

void expect_all_refused(const std::vector<Refusal>& rows) {
  const Fixtures fixtures;
  for (const Refusal& row : rows) expect_refused(row, fixtures);
}

}  // namespace

TEST_CASE("bad input matrix: files that are not (whole) images exit 3") {
  expect_all_refused({
      {.what = "missing input", .input = "@missing.png", .reason = "no such file"},
      {.what = "dangling symlink as input", .input = "@dangling.png", .reason = "no such file"},
      {.what = "directory as input", .input = "@images.d", .reason = "is a directory"},
      {.what = "FIFO as input", .input = "@fifo.png", .reason = "not a regular file"},
      {.what = "character device as input", .input = "/dev/null", .reason = "not a regular file"},
      {.what = "empty file", .input = "@empty.png", .reason = "empty file"},
      {.what = "text file", .input = "@notes.txt", .reason = "cannot decode"},
      {.what = "shell script named .png", .input = "@text.png", .reason = "cannot decode"},
      {.what = "ELF binary named .png", .input = "@elf-binary.png", .reason = "cannot decode"},
      {.what = "random bytes", .input = "@random.png", .reason = "cannot decode"},
      {.what = "PNG: signature only", .input = "@png-signature-only.png", .reason = "truncated or corrupt PNG"},
      {.what = "PNG: cut inside IHDR", .input = "@png-cut-in-ihdr.png", .reason = "truncated or corrupt PNG"},
      {.what = "PNG: IHDR and nothing else", .input = "@png-ihdr-only.png", .reason = "before the IEND chunk"},
      {.what = "PNG: cut at 25%", .input = "@png-cut-25.png", .reason = "truncated or corrupt PNG"},
      {.what = "PNG: cut at 50%", .input = "@png-cut-50.png", .reason = "chunk IDAT"},
      {.what = "PNG: cut at 99%", .input = "@png-cut-99.png", .reason = "truncated or corrupt PNG"},
      {.what = "PNG: IEND missing", .input = "@png-no-iend.png", .reason = "before the IEND chunk"},
      {.what = "PNG: damaged compressed data (CRC fails)", .input = "@png-bad-idat-data.png", .reason = "cannot decode"},
      {.what = "PNG: damaged IDAT CRC", .input = "@png-bad-idat-crc.png", .reason = "cannot decode"},
      {.what = "PNG: damaged IHDR CRC", .input = "@png-bad-ihdr-crc.png", .reason = "cannot decode"},
      {.what = "PNG: impossible chunk length", .input = "@png-bad-chunk-length.png", .reason = "no valid chunk"},
      {.what = "PNG: compressed data ends after 4 of 8 rows", .input = "@png-short-data.png", .reason = "cannot decode"},
      {.what = "PNG: zero width", .input = "@png-zero-width.png", .reason = "0x16 image: it has no pixels"},
      {.what = "PNG: zero height", .input = "@png-zero-height.png", .reason = "16x0 image: it has no pixels"},
      {.what = "JPEG: cut inside the tables", .input = "@jpeg-cut-in-header.jpg", .reason = "inside segment"},
      {.what = "JPEG: baseline cut at 50%", .input = "@jpeg-cut-50.jpg", .reason = "inside the compressed data of scan 1"},
      {.what = "JPEG: baseline without EOI", .input = "@jpeg-no-eoi.jpg", .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: progressive cut at 30%", .input = "@progressive-cut-30.jpg", .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: progressive cut at 70%", .input = "@progressive-cut-70.jpg", .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: progressive without EOI", .input = "@progressive-no-eoi.jpg", .reason = "before the end-of-image marker"},
      {.what = "JPEG: progressive, first scan then EOI", .input = "@progressive-one-scan-eoi.jpg",
       .reason = "its scans end before the whole image was sent"},
      {.what = "JPEG: progressive, last scan missing, EOI", .input = "@progressive-last-scan-missing.jpg",
       .reason = "its scans end before the whole image was sent"},
      {.what = "JPEG: progressive, cut inside its last scan, EOI", .input = "@progressive-cut-in-last-scan-eoi.jpg",
       .reason = "its compressed data ends before the image does"},
      {.what = "JPEG: baseline cut at 50%, EOI", .input = "@jpeg-cut-50-eoi.jpg",
       .reason = "its compressed data ends before the image does"},
      {.what = "JPEG: SOS marker damaged", .input = "@jpeg-sos-damaged.jpg", .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: marker code zeroed", .input = "@jpeg-marker-zeroed.jpg", .reason = "invalid marker FF00"},
      {.what = "JPEG: segment length too long", .input = "@jpeg-segment-too-long.jpg", .reason = "truncated or corrupt JPEG"},
      {.what = "JPEG: zero width in SOF", .input = "@jpeg-zero-width.jpg", .reason = "0x400 image: it has no pixels"},
      {.what = "TIFF: cut at 50%", .input = "@tiff-cut-50.tif", .reason = "truncated or corrupt TIFF"},
      {.what = "TIFF: header only", .input = "@tiff-header-only.tif", .reason = "beyond the end of the file"},
      {.what = "TIFF: 64-bit float pixels", .input = "@f64.tif", .reason = "unsupported pixel depth 64F"},
      {.what = "TIFF: 16-bit signed pixels", .input = "@s16.tif", .reason = "unsupported pixel depth 16S"},
      {.what = "BMP: cut at 50%", .input = "@bmp-cut-50.bmp", .reason = "cannot decode"},
      {.what = "BMP: headers only", .input = "@bmp-header-only.bmp", .reason = "cannot decode"},
      {.what = "BMP: zero width", .input = "@bmp-zero-width.bmp", .reason = "0x10 image: it has no pixels"},
      {.what = "BMP: negative width", .input = "@bmp-negative-width.bmp", .reason = "negative width -10"},
      {.what = "PAM: 2 channels (gray + alpha)", .input = "@gray-alpha.pam", .reason = "unsupported channel count 2"},
      {.what = "TIFF: 2 channels (gray + extra sample), which OpenCV reads as gray", .input = "@tiff-gray-extra-2-channels.tif",
       .reason = "unsupported channel count 2"},
      {.what = "TIFF: 5 channels (RGBA + extra sample)", .input = "@tiff-rgba-extra-5-channels.tif",
       .reason = "unsupported channel count 5"},
      {.what = "symbolic link loop as input", .input = "@loop-a.png", .reason = "symbolic link loop"},
      {.what = "batch: a --from line holding a NUL byte", .input = "",
       .options = {"--filter", "gauss5", "--variant", "opencv", "--out-dir", "@out-dir", "--from", "@nul-list.txt"},
       .reason = "line 1 holds a NUL byte", .names = "--from", .output = ""},
  });
}

TEST_CASE("bad input matrix: images over the pixel limit exit 3 before decoding") {
  const std::string cap = memory_cap(1024);
  expect_all_refused({
      {.what = "PNG header claims 100000x100000", .input = "@png-100000x100000.png",
       .reason = "PNG header claims 100000x100000 pixels, more than the limit of 1073741824 (raise it with --max-pixels)",
       .shell_setup = cap},
      {.what = "TIFF (II) header claims 100000x100000", .input = "@tiff-100000x100000.tif",
       .reason = "TIFF header claims 100000x100000 pixels", .shell_setup = cap},
      {.what = "TIFF (MM) header claims 100000x100000", .input = "@tiff-mm-100000x100000.tif",
       .reason = "TIFF header claims 100000x100000 pixels", .shell_setup = cap},
      {.what = "BigTIFF header claims 100000x100000", .input = "@bigtiff-100000x100000.tif",
       .reason = "TIFF header claims 100000x100000 pixels", .shell_setup = cap},
      {.what = "JPEG SOF claims 65535x65535", .input = "@jpeg-65535x65535.jpg",
       .reason = "JPEG header claims 65535x65535 pixels", .shell_setup = cap},
      {.what = "BMP header claims 100000x100000 (top-down)", .input = "@bmp-100000x100000.bmp",
       .reason = "BMP header claims 100000x100000 pixels", .shell_setup = cap},
      // 2.7 GB decoded, which OpenCV's own limit would let through: only the header check
      // refuses it inside 1 GiB of address space.
      {.what = "PNG 30000x30000 with --max-pixels 100000000", .input = "@png-30000x30000.png",
       .options = {"--filter", "gauss5", "--variant", "opencv", "--max-pixels", "100000000"},
       .reason = "30000x30000 pixels, more than the limit of 100000000", .shell_setup = cap},
      {.what = "--max-pixels below a normal PNG's size", .options = {"--filter", "gauss5", "--max-pixels", "262143"},
       .reason = "512x512 pixels, more than the limit of 262143"},
      {.what = "--max-pixels on a format read without header check (WebP)", .input = "@coffee.webp",
       .options = {"--filter", "gauss5", "--max-pixels", "1000"}, .reason = "image has 600x400 pixels"},
      {.what = "within --max-pixels but wider than OpenCV's own limit", .input = "@bmp-2000000x1.bmp",
       .reason = "OPENCV_IO_MAX_IMAGE_WIDTH"},
      {.what = "within a raised --max-pixels but over OpenCV's own 2^30", .input = "@png-40000x40000.png",
       .options = {"--filter", "gauss5", "--variant", "opencv", "--max-pixels", "2000000000"},
       .reason = "raise them with the environment variables OPENCV_IO_MAX_IMAGE_PIXELS", .shell_setup = cap},
  });
}

TEST_CASE("bad input matrix: every class of filter error exits 3") {
  struct BadFilter {
    const char* what;
    std::string spec;    ///< what --filter gets; the message must name it
    std::string reason;
  };
  const std::vector<BadFilter> filters = {
      {"empty filter file", "@empty.txt", "no filter values"},
      {"filter file of comments", "@comments.txt", "no filter values"},
      {"non-numeric value", "@word.txt", ":2: 'four' is not a number"},
      {"ragged rows", "@ragged.txt", ":2: row has 2 values, expected 3"},
      {"value left out between commas", "@missing-value.txt", "missing value before ','"},
      {"NaN weight", "@nan.txt", "non-finite value 'nan'"},
      {"weight overflowing a double", "@huge-value.txt", "non-finite value '1e999'"},
      {"inline inf weight", "3x1:1,inf,1", "non-finite value 'inf'"},
      {"128 columns in a file", "@wide.txt", "the maximum side is 127"},
      {"inline 128x1", "128x1:1", "the maximum side is 127"},
      {"inline wrong count for WxH", "3x3:1,2", "expected 9 values (3x3), got 2"},
      {"inline zero size", "0x3:1", "at least 1"},
      {"inline anchor outside", "3x3+5+0:1,1,1,1,1,1,1,1,1", "anchor +5+0 is outside the 3x3 filter"},
      {"unknown preset", "gaus5", "is not a preset"},
      {"box:0", "box:0", "N must be an integer from 1 to 127"},
      {"box:128", "box:128", "N must be an integer from 1 to 127"},
      {"box:x", "box:x", "N must be an integer"},
      {"gaussian without sigma", "gaussian:3", "expected gaussian:R,SIGMA"},
      {"gaussian sigma 0", "gaussian:3,0", "SIGMA must be greater than 0"},
      {"gaussian radius 64", "gaussian:64,2", "R must be an integer from 0 to 63"},
      {".mat scale 0", "@scale0.mat", ":1: scale must not be 0"},
      {".mat scale 1e-320: infinite weights after the division", "@scale-1e-320.mat", ":2: weight inf"},
      {".mat scale 1e-40: weights beyond float after the division", "@scale-1e-40.mat", "not a finite float"},
      {".mat offset beyond float", "@offset-1e39.mat", ":1: offset 1e+39 is not a finite float"},
      {"weight beyond float", "@weight-1e39.txt", ":1: weight 1e+39 is not a finite float"},
      {"inline weight beyond float", "3x1:1,1e39,1", "not a finite float"},
      {".mat header of one field", "@one-field.mat", ":1: bad header"},
      {".mat with fewer rows than its header", "@few-rows.mat", "the header says 3 rows, found 2"},
      {".mat with an extra row", "@extra-row.mat", ":3: extra row"},
      {"directory as filter", "@filters.d", "is a directory"},
      {"image file as filter", "@camera.png", "is not a number"},
  };
  std::vector<Refusal> rows;
  for (const BadFilter& filter : filters)
    rows.push_back({.what = filter.what, .options = {"--filter", filter.spec}, .reason = filter.reason, .names = filter.spec});
  expect_all_refused(rows);
}

TEST_CASE("bad input matrix: bad and conflicting options exit 2") {
  const std::vector<std::string> base = {"--filter", "gauss5", "--variant", "opencv"};
  const auto with = [&base](std::initializer_list<std::string> extra) {
    std::vector<std::string> options = base;
    options.insert(options.end(), extra);
    return options;
  };
  const ExitCode usage = ExitCode::usage;
  expect_all_refused({
      {.what = "unknown variant", .options = {"--filter", "gauss5", "--variant", "fastest"}, .code = usage,
       .reason = "fastest", .names = "--variant"},
      {.what = "unknown border", .options = with({"--border", "mirror"}), .code = usage, .reason = "mirror",
       .names = "--border"},
      {.what = "unknown depth", .options = with({"--depth", "64f"}), .code = usage, .reason = "64f", .names = "--depth"},
      {.what = "unknown alpha mode", .options = with({"--alpha", "drop"}), .code = usage, .reason = "drop",
       .names = "--alpha"},
      {.what = "unknown option", .options = with({"--bogus"}), .code = usage, .reason = "unknown option '--bogus'",
       .names = "--bogus"},
      {.what = "non-numeric delta", .options = with({"--delta", "abc"}), .code = usage, .reason = "abc",
       .names = "--delta"},
      {.what = "--border-value without --border constant", .options = with({"--border-value", "3"}), .code = usage,
       .reason = "only applies to --border constant", .names = "--border-value"},
      {.what = "--json without --compare", .options = with({"--json"}), .code = usage, .reason = "use it with --compare",
       .names = "--json"},
      {.what = "-q with -v", .options = with({"-q", "-v"}), .code = usage, .reason = "excludes", .names = "--quiet"},
      {.what = "--compare with the opencv variant", .options = with({"--compare"}), .code = usage,
       .reason = "choose a GPU --variant", .names = "--compare"},
      {.what = "no OUTPUT", .code = usage, .reason = "INPUT and OUTPUT are required", .names = "OUTPUT", .output = ""},
      {.what = "no INPUT and no OUTPUT", .input = "", .code = usage, .reason = "are required", .names = "INPUT",
       .output = ""},
      {.what = "no --filter", .options = {"--variant", "opencv"}, .code = usage, .reason = "is required",
       .names = "--filter"},
      {.what = "--anchor not X,Y", .options = with({"--anchor", "1;2"}), .code = usage, .reason = "expected X,Y",
       .names = "--anchor"},
      {.what = "--anchor outside the filter", .options = with({"--anchor", "7,0"}), .code = usage, .reason = "outside",
       .names = "anchor"},
      {.what = "depth pair filter2D refuses (32F to 8U)", .input = sample("camera_f32.tif"), .options = with({"--depth", "8u"}),
       .code = usage, .reason = "8U", .names = "32F", .output = "@out.tif"},
      {.what = "--max-pixels 0", .options = with({"--max-pixels", "0"}), .code = usage, .reason = "expected a whole number",
       .names = "--max-pixels"},
      {.what = "--max-pixels -5", .options = with({"--max-pixels", "-5"}), .code = usage, .reason = "got '-5'",
       .names = "--max-pixels"},
      {.what = "--max-pixels 2^64", .options = with({"--max-pixels", "18446744073709551616"}), .code = usage,
       .reason = "expected a whole number", .names = "--max-pixels"},
      {.what = "--gpu-memory not a size", .options = with({"--gpu-memory", "lots"}), .code = usage,
       .reason = "expected bytes as a whole number", .names = "--gpu-memory"},
      {.what = "--gpu-memory 0", .options = with({"--gpu-memory", "0"}), .code = usage, .reason = "got '0'",
       .names = "--gpu-memory"},
      {.what = "--gpu-memory with an unknown unit", .options = with({"--gpu-memory", "12Q"}), .code = usage,
       .reason = "got '12Q'", .names = "--gpu-memory"},
      {.what = "--gpu-memory beyond 2^64", .options = with({"--gpu-memory", "16777216T"}), .code = usage,
       .reason = "expected bytes as a whole number", .names = "--gpu-memory"},
      {.what = "--gpu-memory negative", .options = with({"--gpu-memory", "-1G"}), .code = usage, .reason = "got '-1G'",
       .names = "--gpu-memory"},
      {.what = "--quality on a PNG output", .options = with({"--quality", "80"}), .code = usage,
       .reason = "--quality applies to JPEG and WebP outputs", .names = "@out.png"},
      {.what = "--quality 0", .options = with({"--quality", "0"}), .code = usage, .reason = "not in range",
       .names = "--quality", .output = "@out.jpg"},
      {.what = "--quality 101", .options = with({"--quality", "101"}), .code = usage, .reason = "not in range",
       .names = "--quality", .output = "@out.jpg"},
      {.what = "--compression lzw on a PNG output", .options = with({"--compression", "lzw"}), .code = usage,
       .reason = "expected a level from 0 to 9", .names = "@out.png"},
      {.what = "--compression 5 on a TIFF output", .options = with({"--compression", "5"}), .code = usage,
       .reason = "expected none, lzw or deflate", .names = "@out.tif", .output = "@out.tif"},
      {.what = "--compression on a JPEG output", .options = with({"--compression", "9"}), .code = usage,
       .reason = "--compression applies to PNG (0-9) and TIFF", .names = "@out.jpg", .output = "@out.jpg"},
      {.what = "--compression zip", .options = with({"--compression", "zip"}), .code = usage, .reason = "zip",
       .names = "--compression"},
      {.what = "output is the input", .code = usage, .reason = "output is the input file", .names = "@camera.png",
       .output = "@camera.png"},
      {.what = "output is the input through ./", .code = usage, .reason = "output is the input file",
       .names = "@./camera.png", .output = "@./camera.png"},
      {.what = "output is the input through a symlink", .code = usage, .reason = "output is the input file",
       .names = "@camera-link.png", .output = "@camera-link.png"},
      {.what = "output is the input through a hard link", .code = usage, .reason = "output is the input file",
       .names = "@camera-hard-link.png", .output = "@camera-hard-link.png"},
      // Batch mode (no OUTPUT): plans that would destroy an input or write what looks unfinished.
      {.what = "batch: an output is another input (--overwrite)", .input = "@batch.d",
       .options = with({"--out-dir", "@batch.d", "--name", "%s_b", "--overwrite"}), .code = usage,
       .reason = "is the input file", .names = "@batch.d/a_b.png", .output = ""},
      {.what = "batch: an output is another input (no --overwrite)", .input = "@batch.d",
       .options = with({"--out-dir", "@batch.d", "--name", "%s_b"}), .code = usage, .reason = "is the input file",
       .names = "@batch.d/a_b.png", .output = ""},
      {.what = "batch: --name '..'", .input = "@camera.png", .options = with({"--out-dir", "@out-dir", "--name", ".."}),
       .code = usage, .reason = "names a folder, not a file", .names = "--name '..'", .output = ""},
      {.what = "output named like a temporary file", .code = usage, .reason = "mark unfinished files",
       .names = "@.cuconv-tmp-out.png", .output = "@.cuconv-tmp-out.png"},
      {.what = "batch: --name '.cuconv-tmp-%s'", .input = "@camera.png",
       .options = with({"--out-dir", "@out-dir", "--name", ".cuconv-tmp-%s"}), .code = usage,
       .reason = "mark unfinished files", .names = "--name '.cuconv-tmp-%s'", .output = ""},
  });
}

TEST_CASE("bad input matrix: outputs that cannot be written exit 4") {
  const ExitCode output = ExitCode::output;
  std::vector<Refusal> rows = {
      {.what = "output is a directory named .png", .code = output, .reason = "is a directory", .names = "@out-is-dir.png",
       .output = "@out-is-dir.png"},
      {.what = "output is a directory", .code = output, .reason = "is a directory", .names = "@out-dir",
       .output = "@out-dir"},
      {.what = "output is a FIFO", .code = output, .reason = "not a regular file", .names = "@out-fifo.png",
       .output = "@out-fifo.png"},
      // Checked before anything else: as root, the final rename would replace the device node.
      {.what = "output is a device (/dev/full)", .code = output, .reason = "not a regular file", .names = "/dev/full",
       .output = "/dev/full"},
      {.what = "output folder missing", .code = output, .reason = "does not exist", .names = "@no-such-folder",
       .output = "@no-such-folder/out.png"},
      {.what = "output folder not writable (/proc)", .code = output, .reason = "cannot create a file in /proc",
       .names = "/proc/cuconv-test.png", .output = "/proc/cuconv-test.png"},
      // write() fails with EFBIG at 8 KiB, as it fails with ENOSPC on a full disk; SIGXFSZ is
      // ignored so that the failure reaches cuconv instead of killing it.
      {.what = "disk full while writing", .code = output, .reason = "write failed", .names = "@out.png",
       .shell_setup = "trap '' XFSZ; ulimit -f 16"},
      {.what = "disk full while writing a TIFF (libtiff path)", .code = output, .reason = "write failed",
       .names = "@out.tif", .output = "@out.tif", .shell_setup = "trap '' XFSZ; ulimit -f 16"},
      // The file size limit with SIGXFSZ at its default disposition, which would kill the process
      // mid-write and leave its temporary file: cuconv ignores the signal, so the write fails.
      {.what = "file size limit (ulimit -f), SIGXFSZ not ignored by the caller", .code = output,
       .reason = "write failed: File too large", .names = "@out.png",
       .shell_setup = "ulimit -f 16"},
      {.what = "batch: file size limit (ulimit -f), SIGXFSZ not ignored by the caller", .input = "@camera.png",
       .options = {"--filter", "gauss5", "--variant", "opencv", "--out-dir", "@.", "--name", "%s_big"}, .code = output,
       .reason = "write failed: File too large",
       .names = "@camera_big.png", .output = "", .shell_setup = "ulimit -f 16"},
      {.what = "float result to PNG", .options = {"--filter", "gauss5", "--variant", "opencv", "--depth", "32f"},
       .code = output, .reason = ".png cannot hold 32F", .names = "@out.png"},
      {.what = "16S result to PNG", .options = {"--filter", "gauss5", "--variant", "opencv", "--depth", "16s"},
       .code = output, .reason = ".png cannot hold 16S", .names = "@out.png"},
      {.what = "float image to JPEG", .input = sample("camera_f32.tif"), .code = output, .reason = ".jpg cannot hold 32F",
       .names = "@out.jpg", .output = "@out.jpg"},
      {.what = "16-bit image to JPEG", .input = sample("chessboard_GRAY_U16.tif"), .code = output,
       .reason = ".jpg cannot hold 16U", .names = "@out.jpg", .output = "@out.jpg"},
      {.what = "16-bit image to BMP", .input = sample("chessboard_GRAY_U16.tif"), .code = output,
       .reason = ".bmp cannot hold 16U", .names = "@out.bmp", .output = "@out.bmp"},
      {.what = "alpha to JPEG", .input = sample("logo.png"), .code = output, .reason = "cannot store an alpha channel",
       .names = "@out.jpg", .output = "@out.jpg"},
      {.what = "unknown extension", .code = output, .reason = "cannot write '.xyz' files", .names = "@out.xyz",
       .output = "@out.xyz"},
      {.what = "no extension", .code = output, .reason = "has no extension to pick the output format", .names = "@out", .output = "@out"},
  };
  if (::geteuid() != 0) {
    rows.push_back({.what = "output folder without write permission", .code = output, .reason = "cannot create a file",
                    .names = "@read-only", .output = "@read-only/out.png"});
  } else {
    MESSAGE("running as root, which writes into a 0555 folder: the read-only folder row is covered by /proc instead");
  }
  expect_all_refused(rows);
}

TEST_CASE("bad input matrix: look-alikes that must still be read") {
  TempDir dir;
  const cv::Mat coffee = cv::imread(sample("coffee.png"), cv::IMREAD_UNCHANGED);
  const std::string jpeg = encode(".jpg", coffee);
  const std::size_t after_soi = 2;
  const std::map<std::string, std::string> files = {
      {"jpeg-named.png", jpeg},  // content decides the format, as in OpenCV
      {"trailing-bytes.jpg", jpeg + std::string(100, '\0') + "camera trailer"},
      {"app-segment-with-ffd9.jpg", jpeg.substr(0, after_soi) + "\xFF\xE1" + big_endian(8, 2) + "\xFF\xD9\xFF\xD9\xFF\xD9" +
                                        jpeg.substr(after_soi)},
      {"progressive.jpg", encode(".jpg", coffee, {cv::IMWRITE_JPEG_PROGRESSIVE, 1})},
      {"gray-alpha.png", png_file(8, 8, 4, png_rows(8, 16))},
  };
  for (const auto& [name, bytes] : files) {
    write_bytes(dir.file(name), bytes);
    const std::string out = dir.file("out-" + name + ".png");  // one per case: no earlier output can answer
    const auto result = run_cuconv({dir.file(name), out, "--filter", "gauss5", "--variant", "opencv"});
    INFO(name, "\n  stderr: ", result.err);
    CHECK(result.exit_code == 0);
    CHECK(cv::imread(out, cv::IMREAD_UNCHANGED).cols == (name == "gray-alpha.png" ? 8 : coffee.cols));
  }
  // The limit is inclusive: exactly 512x512 pixels pass --max-pixels 262144.
  const auto result = run_cuconv({sample("camera.png"), dir.file("limit.png"), "--filter", "gauss5", "--variant",
                                  "opencv", "--max-pixels", "262144"});
  CHECK(result.exit_code == 0);
}
