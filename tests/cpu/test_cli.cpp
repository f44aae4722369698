// SPDX-License-Identifier: Apache-2.0
// The cuconv binary end to end: success paths equal cv::filter2D bit for bit (opencv variant),
// and every error path exits with its documented code, names the file and the problem, and
// leaves no output file.
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <fstream>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::kernel_matrix;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

cv::Mat filter2d_reference(const cv::Mat& img, const Filter& f, int cv_border, double delta = 0) {
  cv::Mat out;
  cv::filter2D(img, out, -1, kernel_matrix(f), cv::Point(f.resolved_anchor_x(), f.resolved_anchor_y()),
               delta + f.offset, cv_border);
  return out;
}

/// Runs cuconv expecting failure: exit code, words in the message, no output file.
void expect_failure(const std::vector<std::string>& args, ExitCode code, const std::string& output,
                    const std::vector<std::string>& words) {
  const auto r = run_cuconv(args);
  std::string cmd;
  for (const auto& a : args) cmd += a + " ";
  INFO("cuconv ", cmd, "\nstderr: ", r.err);
  CHECK(r.exit_code == static_cast<int>(code));
  for (const auto& w : words) CHECK_MESSAGE(r.err.find(w) != std::string::npos, "missing '", w, "'");
  if (!output.empty()) CHECK_FALSE(std::filesystem::exists(output));
}

}  // namespace

TEST_CASE("cli: opencv variant equals cv::filter2D bit for bit (preset, plain, .mat, inline)") {
  TempDir dir;
  {
    std::ofstream(dir.file("k.txt")) << "# plain\n1 2 1\n2, 4, 2\n1\t2\t1\n";
    std::ofstream(dir.file("k.mat")) << "3 3 16 0\n1 2 1\n2 4 2\n1 2 1\n";
  }
  const std::string inputs[] = {sample("camera.png"), sample("coffee.png")};
  const std::pair<const char*, int> borders[] = {{"reflect101", cv::BORDER_REFLECT_101},
                                                 {"reflect", cv::BORDER_REFLECT},
                                                 {"replicate", cv::BORDER_REPLICATE},
                                                 {"constant", cv::BORDER_CONSTANT}};
  for (const std::string& spec : {std::string("gauss5"), dir.file("k.txt"), dir.file("k.mat"),
                                  std::string("5x3+1+1:1,2,3,2,1,0,0,1,0,0,-1,-2,-3,-2,-1")}) {
    const Filter f = load_filter(spec);
    for (const auto& in : inputs) {
      const cv::Mat img = cv::imread(in, cv::IMREAD_UNCHANGED);
      for (const auto& [border_name, cv_border] : borders) {
        const char* const border = border_name;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
        const std::string out = dir.file("out.png");
        const auto r =
            run_cuconv({in, out, "--filter", spec, "--variant", "opencv", "--border", border, "--overwrite"});
        INFO(spec, " ", in, " ", border, " stderr: ", r.err);
        REQUIRE(r.exit_code == 0);
        CHECK(bit_equal(cv::imread(out, cv::IMREAD_UNCHANGED), filter2d_reference(img, f, cv_border)));
      }
    }
  }
}

TEST_CASE("cli: depth, delta and alpha options reach the result") {
  TempDir dir;
  const std::string out = dir.file("out.tif");
  auto r = run_cuconv(
      {sample("camera.png"), out, "--filter", "sobel-x", "--variant", "opencv", "--depth", "32f", "--delta", "0.5"});
  REQUIRE(r.exit_code == 0);
  const cv::Mat img = cv::imread(sample("camera.png"), cv::IMREAD_UNCHANGED);
  cv::Mat expected;
  const Filter f = load_filter("sobel-x");
  cv::filter2D(img, expected, CV_32F, kernel_matrix(f), cv::Point(-1, -1), 0.5);
  CHECK(bit_equal(cv::imread(out, cv::IMREAD_UNCHANGED), expected));

  const std::string out_alpha = dir.file("alpha.png");
  r = run_cuconv({sample("logo.png"), out_alpha, "--filter", "box5", "--variant", "opencv", "--alpha", "keep"});
  REQUIRE(r.exit_code == 0);
  cv::Mat a_in, a_out;
  cv::extractChannel(cv::imread(sample("logo.png"), cv::IMREAD_UNCHANGED), a_in, 3);
  cv::extractChannel(cv::imread(out_alpha, cv::IMREAD_UNCHANGED), a_out, 3);
  CHECK(bit_equal(a_in, a_out));
}

TEST_CASE("cli: auto variant works with or without a GPU, -v prints stage times") {
  TempDir dir;
  const std::string out = dir.file("auto.png");
  const auto r = run_cuconv({sample("coffee.png"), out, "--filter", "gauss5", "-v"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::exists(out));
  for (const char* stage : {"read", "upload", "kernel", "download", "wrote"})
    CHECK(r.err.find(stage) != std::string::npos);
  if (!cuda_device_available()) {
    // The fallback is cv::filter2D itself: the same image as --variant opencv.
    CHECK(r.err.find("no GPU (") != std::string::npos);
    CHECK(r.err.find("variant opencv") != std::string::npos);
    const std::string cpu = dir.file("opencv.png");
    REQUIRE(run_cuconv({sample("coffee.png"), cpu, "--filter", "gauss5", "--variant", "opencv"}).exit_code == 0);
    CHECK(bit_equal(cv::imread(out, cv::IMREAD_UNCHANGED), cv::imread(cpu, cv::IMREAD_UNCHANGED)));
  }
}

TEST_CASE("cli: informational commands") {
  auto r = run_cuconv({"--version"});
  CHECK(r.exit_code == 0);
  INFO("--version: ", r.out);
  CHECK(r.out.rfind("cuconv ", 0) == 0);
  CHECK(r.out.find("\ncommit ") != std::string::npos);
  CHECK(r.out.find(" build\n") != std::string::npos);
  CHECK(r.out.find("\nOpenCV " + cv::getVersionString() + "\n") != std::string::npos);
  CHECK(r.out.find("\nCUDA runtime ") != std::string::npos);
  std::string no_gpu;
  if (cuda_device_available(&no_gpu))
    CHECK(r.out.find("\nGPU 0: ") != std::string::npos);
  else
    CHECK(r.out.find("\nGPU: none: " + no_gpu) != std::string::npos);
  r = run_cuconv({"--list-filters"});
  CHECK(r.exit_code == 0);
  for (const auto& name : preset_names()) {
    CHECK_MESSAGE(r.out.find(name) != std::string::npos, name);
    CHECK_MESSAGE(r.out.find(preset_summary(name)) != std::string::npos, name);  // says what it does
  }
  for (const ParametricFilter& kind : parametric_filters()) {
    CHECK(r.out.find(std::string(kind.syntax)) != std::string::npos);
    CHECK(r.out.find(std::string(kind.summary)) != std::string::npos);
  }
  r = run_cuconv({"--show-filter", "gauss3"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("3x3") != std::string::npos);
  CHECK(r.out.find("0.25") != std::string::npos);
  r = run_cuconv({"--help"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("--variant") != std::string::npos);
}

TEST_CASE("cli: usage errors exit 2 and write nothing") {
  TempDir dir;
  const std::string out = dir.file("out.png");
  const std::string in = sample("camera.png");
  expect_failure({in, out, "--filter", "gauss5", "--bogus"}, ExitCode::usage, out, {"bogus"});
  expect_failure({in, out, "--filter", "gauss5", "--border", "mirror"}, ExitCode::usage, out, {"mirror"});
  expect_failure({in, out, "--filter", "gauss5", "--variant", "fastest"}, ExitCode::usage, out, {"fastest"});
  expect_failure({in, out, "--filter", "gauss5", "--depth", "64f"}, ExitCode::usage, out, {"64f"});
  expect_failure({in, "--filter", "gauss5"}, ExitCode::usage, "", {"OUTPUT"});
  expect_failure({in, out}, ExitCode::usage, out, {"--filter"});
  expect_failure({in, out, "--filter", "gauss5", "--border-value", "3"}, ExitCode::usage, out, {"--border-value"});
  expect_failure({in, out, "--filter", "gauss5", "--anchor", "1;2"}, ExitCode::usage, out, {"--anchor"});
  expect_failure({in, out, "--filter", "gauss5", "--anchor", "7,0", "--variant", "opencv"}, ExitCode::usage, out,
                 {"outside"});
  expect_failure({sample("camera_f32.tif"), dir.file("o.tif"), "--filter", "gauss5", "--depth", "8u"}, ExitCode::usage,
                 dir.file("o.tif"), {"8U", "32F"});
  expect_failure({in, out, "--filter", "gauss5", "-v", "-q"}, ExitCode::usage, out, {"quiet"});
  expect_failure({in, out, "--filter", "gauss5", "--json"}, ExitCode::usage, out, {"--compare"});
  expect_failure({in, out, "--filter", "gauss5", "--variant", "opencv", "--compare"}, ExitCode::usage, out, {"GPU"});
  // The output is the input (through a symlink): refused before anything is written.
  std::filesystem::copy_file(in, dir.file("self.png"));
  std::filesystem::create_symlink(dir.file("self.png"), dir.file("alias.png"));
  const auto before = std::filesystem::last_write_time(dir.file("self.png"));
  expect_failure({dir.file("self.png"), dir.file("alias.png"), "--filter", "gauss5"}, ExitCode::usage, "",
                 {"is the input"});
  CHECK(std::filesystem::last_write_time(dir.file("self.png")) == before);
}

TEST_CASE("cli: bad input exits 3, names the file and the problem, writes nothing") {
  TempDir dir;
  const std::string out = dir.file("out.png");
  const std::string in = sample("camera.png");
  expect_failure({dir.file("missing.png"), out, "--filter", "gauss5"}, ExitCode::bad_input, out,
                 {"missing.png", "no such file"});
  expect_failure({dir.path().string(), out, "--filter", "gauss5"}, ExitCode::bad_input, out, {"directory"});
  {
    std::ofstream(dir.file("corrupt.png"), std::ios::binary) << "\x89PNG\r\n\x1a\nnot really";
    std::ofstream(dir.file("notes.txt")) << "hello\n";
    std::ofstream(dir.file("ragged.txt")) << "1 2 3\n4 5\n";
    std::ofstream(dir.file("bad.mat")) << "3 3 0\n1 1 1\n1 1 1\n1 1 1\n";
  }
  const std::string truncated = dir.file("truncated.png");
  {
    const std::string full = cuconv::test::read_file(in);
    std::ofstream(truncated, std::ios::binary) << full.substr(0, full.size() / 2);
  }
  expect_failure({dir.file("corrupt.png"), out, "--filter", "gauss5"}, ExitCode::bad_input, out,
                 {"corrupt.png", "cannot decode"});
  expect_failure({truncated, out, "--filter", "gauss5"}, ExitCode::bad_input, out, {"truncated.png", "cannot decode"});
  expect_failure({dir.file("notes.txt"), out, "--filter", "gauss5"}, ExitCode::bad_input, out,
                 {"notes.txt", "cannot decode"});
  expect_failure({in, out, "--filter", dir.file("ragged.txt")}, ExitCode::bad_input, out, {"ragged.txt:2", "2 values"});
  expect_failure({in, out, "--filter", dir.file("bad.mat")}, ExitCode::bad_input, out, {"bad.mat:1", "scale"});
  expect_failure({in, out, "--filter", "gaus5"}, ExitCode::bad_input, out,
                 {"gaus5", "not a preset", "did you mean 'gauss5'"});
  expect_failure({in, out, "--filter", "sharp.mat"}, ExitCode::bad_input, out,
                 {"filter file 'sharp.mat': no such file"});
  expect_failure({in, out, "--filter", "3x3:1,2"}, ExitCode::bad_input, out, {"inline", "9"});
}

TEST_CASE("cli: output errors exit 4 and leave no file") {
  TempDir dir;
  expect_failure({sample("camera.png"), dir.file("f.png"), "--filter", "gauss5", "--depth", "32f"}, ExitCode::output,
                 dir.file("f.png"), {"f.png", "32F"});
  expect_failure({sample("camera_f32.tif"), dir.file("f.jpg"), "--filter", "gauss5"}, ExitCode::output,
                 dir.file("f.jpg"), {"f.jpg", "32F"});
  expect_failure({sample("logo.png"), dir.file("a.jpg"), "--filter", "gauss5"}, ExitCode::output, dir.file("a.jpg"),
                 {"a.jpg", "alpha"});
  expect_failure({sample("camera.png"), dir.file("x.xyz"), "--filter", "gauss5"}, ExitCode::output, dir.file("x.xyz"),
                 {"x.xyz"});
  expect_failure({sample("camera.png"), dir.file("nodir/out.png"), "--filter", "gauss5", "--variant", "opencv"},
                 ExitCode::output, dir.file("nodir/out.png"), {"nodir"});
}

TEST_CASE("cli: command-line mistakes read 'cuconv: error:' with a suggestion, exit 2") {
  TempDir dir;
  const std::string out = dir.file("out.png");
  const std::string in = sample("camera.png");
  expect_failure({in, out, "--fliter", "gauss5"}, ExitCode::usage, out,
                 {"cuconv: error: unknown option '--fliter'; did you mean '--filter'?"});
  expect_failure({in, out, "-filter", "gauss5"}, ExitCode::usage, out,
                 {"cuconv: error: unknown option '-filter': long options take two dashes, '--filter'"});
  expect_failure({in, out, "-f", "gauss5", "--border", "replicat"}, ExitCode::usage, out,
                 {"cuconv: error: --border: 'replicat' is not a border mode; did you mean 'replicate'?"});
  // Enum values in any case, sizes with MB or MiB.
  const auto r =
      run_cuconv({in, out, "-f", "gauss5", "--variant", "OPENCV", "--border", "REPLICATE", "--gpu-memory", "512MiB"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("cli: - reads standard input, FORMAT:- writes standard output") {
  TempDir dir;
  const std::string in = sample("camera.png");
  const cv::Mat image = cv::imread(in, cv::IMREAD_UNCHANGED);
  const cv::Mat expected = filter2d_reference(image, load_filter("gauss5"), cv::BORDER_REFLECT_101);

  // stdin to a file
  auto r = run_cuconv({"-", dir.file("a.png"), "--filter", "gauss5", "--variant", "opencv"}, in);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(bit_equal(cv::imread(dir.file("a.png"), cv::IMREAD_UNCHANGED), expected));

  // a file to stdout, and stdin to stdout, as PNG and TIFF
  for (const auto& [input, stdin_file] : {std::pair{in, std::string()}, std::pair{std::string("-"), in}}) {
    for (const char* format : {"png", "tif"}) {
      r = run_cuconv({input, std::string(format) + ":-", "--filter", "gauss5", "--variant", "opencv"}, stdin_file);
      CAPTURE(format);
      REQUIRE(r.exit_code == 0);
      const std::vector<unsigned char> bytes(r.out.begin(), r.out.end());
      CHECK(bit_equal(cv::imdecode(bytes, cv::IMREAD_UNCHANGED), expected));
    }
  }

  // Standard output gets what a file would: the input's ICC profile (read from standard input
  // too), and the encoder options of its format.
  r = run_cuconv({"-", "png:-", "--filter", "gauss5", "--variant", "opencv"}, sample("astronaut.png"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("iCCP") != std::string::npos);
  r = run_cuconv({"-", "png:-", "--filter", "gauss5", "--variant", "opencv", "--strip"}, sample("astronaut.png"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("iCCP") == std::string::npos);
  const auto jpeg_bytes = [&](const char* quality) {
    return run_cuconv({in, "jpg:-", "--filter", "gauss5", "--variant", "opencv", "--quality", quality}).out.size();
  };
  CHECK(jpeg_bytes("30") < jpeg_bytes("95"));
  expect_failure({in, "png:-", "-f", "box3", "--quality", "50"}, ExitCode::usage, "", {"png:-", "--quality"});
  expect_failure({sample("astronaut.png"), "jpg:-", "-f", "box3", "--codec", "gpu"}, ExitCode::usage, "",
                 {"--codec gpu", "standard"});

  // Errors name standard input / the FORMAT:- output, not a temporary file.
  { std::ofstream(dir.file("junk.bin")) << "not an image"; }
  r = run_cuconv({"-", dir.file("b.png"), "-f", "box3", "--variant", "opencv"}, dir.file("junk.bin"));
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.err.find("standard input: cannot decode") != std::string::npos);
  CHECK(r.err.find("cuconv-stdin-") == std::string::npos);
  r = run_cuconv({sample("logo.png"), "jpg:-", "-f", "box3", "--variant", "opencv"});
  CHECK(r.exit_code == static_cast<int>(ExitCode::output));
  CHECK(r.err.find("jpg:-: .jpg cannot store an alpha channel") != std::string::npos);
  CHECK(r.out.empty());
  expect_failure({in, "-", "-f", "box3"}, ExitCode::usage, "", {"png:-"});
  expect_failure({in, "png:-", "-f", "box3", "--compare"}, ExitCode::usage, "", {"--compare"});
  // The temporary copies of standard input are gone.
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    CHECK_MESSAGE(!entry.path().filename().string().starts_with("cuconv-stdin-"), entry.path().string());
}

TEST_CASE("cli: without an NVIDIA driver, the warning says so") {
  std::string reason;
  if (cuda_device_available(&reason) || std::filesystem::exists("/proc/driver/nvidia/version")) {
    MESSAGE("SKIPPED: an NVIDIA driver is loaded here");
    return;
  }
  CHECK(reason.find("no NVIDIA driver") != std::string::npos);
  TempDir dir;
  const auto r = run_cuconv({sample("camera.png"), dir.file("o.png"), "-f", "box3"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("no NVIDIA driver is loaded") != std::string::npos);
  CHECK(r.err.find("insufficient") == std::string::npos);
}

TEST_CASE("cli: explicit GPU variant without a device exits 5") {
  if (cuda_device_available()) {
    MESSAGE("a CUDA device is present: the GPU suite covers explicit variants instead");
    return;
  }
  TempDir dir;
  for (Variant v : gpu_variants()) {
    const std::string out = dir.file("gpu.png");
    expect_failure({sample("camera.png"), out, "--filter", "gauss5", "--variant", std::string(to_string(v))},
                   ExitCode::gpu, out, {"needs a CUDA device"});
  }
}
