// SPDX-License-Identifier: Apache-2.0
// Issue 49, the binary end to end: what a newcomer meets on a CPU-only machine. Names in any case
// and other tools' words, --normalize, --skip-existing and the no-GPU warning. The library and
// parser functions behind them are tested in test_command_line.cpp, test_filter_formats.cpp,
// test_formats_pixels.cpp and test_formats_options.cpp.
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::read_file;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;

namespace {

std::size_t count_of(const std::string& text, const std::string& word) {
  std::size_t count = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + word.size())) ++count;
  return count;
}

}  // namespace

TEST_CASE("newcomer: GAUSS5 and Sobel-X work, and mirror, float and blur get cuconv's names") {
  TempDir dir;
  const auto upper =
      run_cuconv({sample("camera.png"), dir.file("upper.png"), "--filter", "GAUSS5", "--variant", "opencv"});
  INFO(upper.err);
  REQUIRE(upper.exit_code == 0);
  REQUIRE(run_cuconv({sample("camera.png"), dir.file("lower.png"), "--filter", "gauss5", "--variant", "opencv"})
              .exit_code == 0);
  CHECK(bit_equal(cv::imread(dir.file("upper.png"), cv::IMREAD_UNCHANGED),
                  cv::imread(dir.file("lower.png"), cv::IMREAD_UNCHANGED)));
  CHECK(run_cuconv({sample("camera.png"), dir.file("sobel.tif"), "--filter", "Sobel-X", "--depth", "32f", "--variant",
                    "opencv"})
            .exit_code == 0);
  for (const auto& [args, words] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--filter", "gauss5", "--border", "mirror"}, "did you mean 'reflect' or 'reflect101'?"},
           {{"--filter", "gauss5", "--depth", "float"}, "did you mean '32f'?"},
           {{"--filter", "gauss5", "--variant", "gpu"}, "did you mean 'auto'?"},
           {{"--filter", "blur"}, "did you mean 'gauss5' or 'box:N'?"}}) {
    std::vector<std::string> all = {sample("camera.png"), dir.file("x.png")};
    all.insert(all.end(), args.begin(), args.end());
    const auto result = run_cuconv(all);
    INFO(result.err);
    CHECK(result.exit_code != 0);
    CHECK(result.err.find(words) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("x.png")));
  }
}

TEST_CASE("newcomer: --normalize turns the README's 5x1 ones into a 5-tap mean, without it a warning") {
  // Before issue 49: a 72% white image, exit 0, no word.
  TempDir dir;
  const auto normalised = run_cuconv(
      {sample("camera.png"), dir.file("mean.png"), "--filter", "5x1:1,1,1,1,1", "--normalize", "--variant", "opencv"});
  INFO(normalised.err);
  REQUIRE(normalised.exit_code == 0);
  cv::Mat expected;
  cv::filter2D(cv::imread(sample("camera.png"), cv::IMREAD_UNCHANGED), expected, -1,
               cv::Mat(1, 5, CV_32F, cv::Scalar(0.2F)));
  CHECK(bit_equal(cv::imread(dir.file("mean.png"), cv::IMREAD_UNCHANGED), expected));
  CHECK(normalised.err.find("--normalize") == std::string::npos);  // no warning for a normalised filter

  const auto plain =
      run_cuconv({sample("camera.png"), dir.file("white.png"), "--filter", "5x1:1,1,1,1,1", "--variant", "opencv"});
  INFO(plain.err);
  CHECK(plain.exit_code == 0);
  CHECK(plain.err.find("sum to 5, not 1") != std::string::npos);
  CHECK(plain.err.find("--normalize divides the weights by their sum") != std::string::npos);
}

TEST_CASE("newcomer: --skip-existing leaves an existing output alone, says skipped, exits 0") {
  // Before issue 49 a re-run exited 4 ("exists; left unchanged") with no way to say "that is fine".
  TempDir dir;
  const std::string out = dir.file("out.png");
  std::ofstream(out) << "already here";
  const auto result =
      run_cuconv({sample("camera.png"), out, "--filter", "gauss5", "--variant", "opencv", "--skip-existing", "-v"});
  INFO(result.err);
  CHECK(result.exit_code == 0);
  CHECK(result.err.find(out + " exists; skipped (--skip-existing)") != std::string::npos);
  CHECK(result.err.find("read " + sample("camera.png")) == std::string::npos);  // decided before reading
  CHECK(read_file(out) == "already here");
  // Where there is no output yet, the image is written as usual.
  const auto fresh = run_cuconv(
      {sample("camera.png"), dir.file("fresh.png"), "--filter", "gauss5", "--variant", "opencv", "--skip-existing"});
  CHECK(fresh.exit_code == 0);
  CHECK(std::filesystem::exists(dir.file("fresh.png")));
}

TEST_CASE("newcomer: the no-GPU warning names how to silence it, once, and CUCONV_NO_GPU_WARNING=1 silences it") {
  if (cuda_device_available()) return;  // a GPU: no warning to see (the GPU suite covers that machine)
  TempDir dir;
  const auto warned = run_cuconv({sample("camera.png"), dir.file("a.png"), "--filter", "gauss5"});
  INFO(warned.err);
  REQUIRE(warned.exit_code == 0);
  CHECK(count_of(warned.err, "no GPU (") == 1);
  CHECK(warned.err.find("CUCONV_NO_GPU_WARNING=1") != std::string::npos);
  // -v: no estimate of the GPU's start-up against the CPU after it has been said there is no GPU.
  const auto verbose = run_cuconv({sample("camera.png"), dir.file("v.png"), "--filter", "gauss5", "-v"});
  CHECK(verbose.exit_code == 0);
  CHECK(count_of(verbose.err, "no GPU (") == 1);
  CHECK(verbose.err.find("faster here than") == std::string::npos);
  const auto silent =
      run_cuconv({sample("camera.png"), dir.file("b.png"), "--filter", "gauss5"}, "", "export CUCONV_NO_GPU_WARNING=1");
  INFO(silent.err);
  REQUIRE(silent.exit_code == 0);
  CHECK(silent.err.find("no GPU (") == std::string::npos);
  // A real warning still shows with the variable set.
  const auto real = run_cuconv({sample("camera.png"), dir.file("c.png"), "--filter", "5x1:1,1,1,1,1"}, "",
                               "export CUCONV_NO_GPU_WARNING=1");
  CHECK(real.err.find("sum to 5, not 1") != std::string::npos);
}

TEST_CASE("docs/usage.md names every option of cuconv --help") {
  // Before issue 49 it lacked --quality, --compression, --strip, --auto-orient and --codec.
  const auto help = run_cuconv({"--help"});
  REQUIRE(help.exit_code == 0);
  const std::string usage = read_file(std::string(CUCONV_TEST_DOCS) + "/usage.md");
  REQUIRE(!usage.empty());
  std::istringstream lines(help.out);
  std::size_t options = 0;
  for (std::string line; std::getline(lines, line);) {
    // Option lines: blanks, then "-f,--filter TEXT ..." or "--strip ...".
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos || start == 0 || line[start] != '-') continue;
    std::string names = line.substr(start, line.find(' ', start) - start);
    std::istringstream split(names);
    for (std::string name; std::getline(split, name, ',');) {
      if (name.size() < 2 || name[0] != '-' || !std::isalpha(static_cast<unsigned char>(name.back()))) continue;
      ++options;
      CHECK_MESSAGE(usage.find("`" + name) != std::string::npos, name, " is in --help but not in docs/usage.md");
    }
  }
  CHECK(options >= 30);
}

TEST_CASE("newcomer: samples/batch-example.sh runs twice into the same folder, the second run skipping") {
  // Before issue 49 the second run failed 8 of 8 files (exit 4 each: the outputs existed).
  TempDir dir;
  const std::string script = std::string(CUCONV_TEST_SAMPLES) + "/batch-example.sh";
  const std::string command = "CUCONV=" + cuconv::test::shell_quote(cuconv::test::cuconv_binary()) + " bash " +
                              cuconv::test::shell_quote(script) + " " + cuconv::test::shell_quote(CUCONV_TEST_SAMPLES) +
                              " " + cuconv::test::shell_quote(dir.file("out")) + " >" +
                              cuconv::test::shell_quote(dir.file("log")) + " 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  const std::string first = read_file(dir.file("out/camera.png"));
  REQUIRE(!first.empty());
  const int second = std::system(command.c_str());
  INFO(read_file(dir.file("log")));
  CHECK(second == 0);
  CHECK(read_file(dir.file("out/camera.png")) == first);
}

TEST_CASE("newcomer: a folder given as the input of single-image mode is pointed to --out-dir") {
  TempDir dir;
  const auto result = run_cuconv({CUCONV_TEST_SAMPLES, dir.file("out.png"), "--filter", "gauss5"});
  INFO(result.err);
  CHECK(result.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(result.err.find(std::string(CUCONV_TEST_SAMPLES) +
                        ": is a directory, not an image file (to filter every "
                        "image of a folder, give an --out-dir and the folder as an input)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.png")));
}

TEST_CASE("newcomer: --compare and --bench without a GPU say so first and alone, exit 5, nothing written") {
  // Before issue 49 --compare first warned "filtering with OpenCV on the CPU", filtered the image,
  // and only then failed with exit 5.
  if (cuda_device_available()) return;  // a GPU: --compare works (the GPU suite covers that machine)
  TempDir dir;
  for (const std::vector<std::string>& option : {std::vector<std::string>{"--compare"}, {"--bench", "3"}}) {
    std::vector<std::string> args{sample("coffee.png"), dir.file("out.png"), "--filter", "box:31", "-v"};
    args.insert(args.end(), option.begin(), option.end());
    const auto result = run_cuconv(args);
    INFO(result.err);
    CHECK(result.exit_code == static_cast<int>(ExitCode::gpu));
    CHECK(result.err.starts_with("cuconv: error: " + option.front() + " needs a GPU: "));
    CHECK(count_of(result.err, "\n") == 1);  // that one line: no CPU warning, no "read ..." before it
    CHECK(result.err.find("filtering with OpenCV on the CPU") == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("out.png")));
  }
}

TEST_CASE(
    "newcomer: samples/slurm-array.sh's four tasks run again after a time-out: the missing output is made, the rest "
    "skipped") {
  // The job script as sbatch runs it (cuconv on PATH, the array variables set), without Slurm:
  // each of the 4 tasks, then all of them again with one output lost as a killed task would.
  TempDir dir;
  std::filesystem::create_directories(dir.file("bin"));
  std::filesystem::create_symlink(cuconv::test::cuconv_binary(), dir.file("bin/cuconv"));
  const std::string script = std::string(CUCONV_TEST_SAMPLES) + "/slurm-array.sh";
  const auto run_tasks = [&] {
    int failed = 0;
    for (int task = 0; task < 4; ++task) {
      const std::string command =
          "PATH=" + cuconv::test::shell_quote(dir.file("bin")) +
          ":\"$PATH\" SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " SLURM_ARRAY_TASK_COUNT=4 bash " +
          cuconv::test::shell_quote(script) + " " + cuconv::test::shell_quote(CUCONV_TEST_SAMPLES) + " " +
          cuconv::test::shell_quote(dir.file("out")) + " >>" + cuconv::test::shell_quote(dir.file("log")) + " 2>&1";
      failed += std::system(command.c_str()) != 0;
    }
    return failed;
  };
  // The ok and skipped images of the four tasks' JSON summaries.
  const auto statuses = [&] {
    std::pair<std::size_t, std::size_t> counts{0, 0};
    for (int task = 0; task < 4; ++task) {
      const std::string summary = read_file(dir.file("out/summary-" + std::to_string(task) + ".json"));
      counts.first += count_of(summary, "\"status\": \"ok\"");
      counts.second += count_of(summary, "\"status\": \"skipped\"");
    }
    return counts;
  };
  REQUIRE(run_tasks() == 0);
  const auto [images, none_skipped] = statuses();
  REQUIRE(images >= 4);
  CHECK(none_skipped == 0);
  const std::string camera = read_file(dir.file("out/camera.png"));
  const std::string coffee = read_file(dir.file("out/coffee.png"));
  REQUIRE(!coffee.empty());
  std::filesystem::remove(dir.file("out/coffee.png"));
  const int failed = run_tasks();
  INFO(read_file(dir.file("log")));
  CHECK(failed == 0);
  CHECK(read_file(dir.file("out/coffee.png")) == coffee);  // made again, the same image
  CHECK(read_file(dir.file("out/camera.png")) == camera);
  const auto [written, skipped] = statuses();
  CHECK(written == 1);
  CHECK(skipped == images - 1);
}

TEST_CASE("licence: every source, header, kernel, script and CMake file of the project names Apache-2.0 (SPDX)") {
  // Issue 49: the repository had no licence. LICENSE is Apache-2.0; each file says so in its first
  // line (the second after a #! line). third_party/ and the fuzz corpora are not the project's.
  namespace fs = std::filesystem;
  const fs::path root = fs::path(CUCONV_TEST_DOCS).parent_path();
  const auto owned = [](const fs::path& path) {
    const std::string name = path.filename().string();
    for (const char* end : {".cpp", ".hpp", ".cu", ".cuh", ".h", ".in", ".sh", ".py", ".cmake", ".zsh"})
      if (name.ends_with(end)) return true;
    return name == "CMakeLists.txt";
  };
  std::vector<fs::path> files{root / "CMakeLists.txt"};
  for (const char* folder :
       {"bench", "cmake", "include", "kernels", "packaging", "samples", "scripts", "src", "tests", "tools"})
    for (const auto& entry : fs::recursive_directory_iterator(root / folder))
      if (entry.is_regular_file() && owned(entry.path()) &&
          entry.path().string().find("/fuzz/corpus") == std::string::npos)
        files.push_back(entry.path());
  std::size_t checked = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    if (line.starts_with("#!")) std::getline(in, line);
    const bool has =
        line == "// SPDX-License-Identifier: Apache-2.0" || line == "# SPDX-License-Identifier: Apache-2.0";
    const std::string relative = fs::relative(file, root).string();
    CHECK_MESSAGE(has, relative, " does not start with the SPDX line (// or # SPDX-License-Identifier: Apache-2.0)");
    ++checked;
  }
  CHECK(checked > 200);
}
