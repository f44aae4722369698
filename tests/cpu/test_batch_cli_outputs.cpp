// SPDX-License-Identifier: Apache-2.0
// `cuconv --out-dir` end to end, the outputs side: existing outputs and --overwrite, an output that
// is the input, permissions, a killed run's leftovers, and output folders that take no files.
#include "batch_support.hpp"
#include "test_support.hpp"

#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <fstream>
#include <set>
#include <thread>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::file_names;
using cuconv::test::gauss5;
using cuconv::test::is_temp_name;
using cuconv::test::kernel_matrix;
using cuconv::test::read_json;
using cuconv::test::run_cuconv;
using cuconv::test::TempDir;
using cuconv::test::write_random_images;
namespace fs = std::filesystem;

TEST_CASE("cli batch: existing outputs are kept unless --overwrite") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 2);
  fs::create_directories(dir.file("out"));
  std::ofstream(dir.file("out/img00.png")) << "precious";
  auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", dir.file("in"),
                       "--json", dir.file("s.json")});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(cuconv::test::read_file(dir.file("out/img00.png")) == "precious");
  CHECK(r.err.find("--overwrite") != std::string::npos);
  const auto summary = read_json(dir.file("s.json"));
  CHECK(summary["files"][0]["status"] == "skipped");
  CHECK(summary["files"][0]["reason"].get<std::string>().find("exists") != std::string::npos);
  CHECK(summary["files"][1]["status"] == "ok");

  r = run_cuconv(
      {"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", dir.file("in"), "--overwrite"});
  CHECK(r.exit_code == 0);
  CHECK(bit_equal(cv::imread(dir.file("out/img00.png"), cv::IMREAD_UNCHANGED), gauss5(images.at("img00.png"))));
  CHECK(file_names(dir.path() / "out") == std::set<std::string>{"img00.png", "img01.png"});
}

TEST_CASE("overwrite rule: one image refuses an existing output unless --overwrite, as batch mode skips it") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 1);
  const std::string in = dir.file("in/img00.png");
  const std::string out = dir.file("out.png");
  const std::vector<std::string> args{in, out, "--filter", "gauss5", "--variant", "opencv"};
  std::ofstream(out) << "precious";
  fs::create_symlink(out, dir.file("link.png"));
  for (const std::string& target : {out, dir.file("link.png")}) {
    const auto r = run_cuconv({in, target, "--filter", "gauss5", "--variant", "opencv"});
    INFO(r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::output));
    CHECK(r.err.find(target + ": exists") != std::string::npos);
    CHECK(r.err.find("--overwrite") != std::string::npos);
    CHECK(cuconv::test::read_file(out) == "precious");
    CHECK(file_names(dir.path()) == std::set<std::string>{"in", "out.png", "link.png"});  // no temporary file
  }
  // --overwrite replaces it, in single-image mode as in batch mode.
  auto with_overwrite = args;
  with_overwrite.emplace_back("--overwrite");
  auto r = run_cuconv(with_overwrite);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(bit_equal(cv::imread(out, cv::IMREAD_UNCHANGED), gauss5(images.at("img00.png"))));
  // A new output needs no option.
  fs::remove(out);
  r = run_cuconv(args);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(out));
}

TEST_CASE("cli batch: an output that is the input is refused (same folder, ./ path, symlink)") {
  TempDir dir;
  write_random_images(dir.path() / "in", 2);
  const std::string original = cuconv::test::read_file(dir.file("in/img00.png"));
  const auto expect_refused = [&](const std::vector<std::string>& args) {
    std::vector<std::string> all{"--filter", "gauss5", "--variant", "opencv", "--overwrite"};
    all.insert(all.end(), args.begin(), args.end());
    const auto r = run_cuconv(all);
    INFO(r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::usage));
    CHECK(r.err.find("is the input") != std::string::npos);
    CHECK(cuconv::test::read_file(dir.file("in/img00.png")) == original);
  };
  expect_refused({"--out-dir", dir.file("in"), dir.file("in")});
  expect_refused({"--out-dir", dir.file("in/."), dir.file("in/./img00.png")});
  fs::create_directories(dir.file("links"));
  fs::create_symlink(dir.file("in/img00.png"), dir.file("links/img00.png"));
  expect_refused({"--out-dir", dir.file("links"), dir.file("in/img00.png"), dir.file("in/img01.png")});
  CHECK_FALSE(fs::exists(dir.file("links/img01.png")));  // refused before any work
}

TEST_CASE("cli batch: outputs get 0666 less the umask, --no-filter copies pixels") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 2);
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--no-filter", dir.file("in")}, "", "umask 002");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& [name, image] : images) {
    CHECK((fs::status(dir.file("out/" + name)).permissions() & fs::perms::all) ==
          static_cast<fs::perms>(0664));  // not mkstemp's 0600
    CHECK(bit_equal(cv::imread(dir.file("out/" + name), cv::IMREAD_UNCHANGED), image));
  }
}

TEST_CASE("cli batch: a run killed with SIGKILL leaves only complete images (and marked temporaries)") {
  TempDir dir;
  constexpr int kImages = 40;
  const auto images = write_random_images(dir.path() / "in", kImages, 256);
  const std::string out = dir.file("out");
  const std::vector<std::string> args{"--out-dir", out,      "--filter", "box:9",       "--variant",
                                      "opencv",    "--jobs", "2",        dir.file("in")};

  const std::string binary = cuconv::test::cuconv_binary();
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, STDERR_FILENO);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  // Kill it once a few images are finished, in the middle of the batch.
  const auto finished = [&] {
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(out, ec)) n += !is_temp_name(entry.path().filename().string());
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (finished() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  const Filter box9 = load_filter("box:9");
  const auto expected = [&](const std::string& name) {
    cv::Mat result;
    cv::filter2D(images.at(name), result, -1, kernel_matrix(box9), cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
    return result;
  };
  std::size_t complete = 0;
  for (const auto& name : file_names(out)) {
    if (is_temp_name(name)) continue;  // a write in progress when the kill came: never a final name
    INFO(name);
    CHECK(bit_equal(cv::imread(dir.file("out/" + name), cv::IMREAD_UNCHANGED), expected(name)));
    ++complete;
  }
  CHECK(complete >= 3);
  CHECK(complete < static_cast<std::size_t>(kImages));  // it really was stopped midway

  // A rerun keeps the finished images, writes the rest, and ignores leftover temporaries.
  const auto r = run_cuconv(args);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::size_t final_images = 0;
  for (const auto& name : file_names(out)) {
    if (is_temp_name(name)) continue;
    CHECK(bit_equal(cv::imread(dir.file("out/" + name), cv::IMREAD_UNCHANGED), expected(name)));
    ++final_images;
  }
  CHECK(final_images == static_cast<std::size_t>(kImages));
}

TEST_CASE("cli batch: an output folder that cannot be written or made is said once, exit 4, before any image") {
  // Before issue 49 a folder that exists but takes no files (no write permission, /proc) let the
  // batch filter every image and then fail each one: N errors, exit 7.
  TempDir dir;
  write_random_images(dir.path() / "in", 6);
  std::ofstream(dir.file("a-file")) << "not a folder";
  std::vector<std::pair<std::string, std::string>> folders{
      {"/proc", "/proc: cannot write into the output folder"},  // exists, takes no files, for root too
      {dir.file("a-file/out"), dir.file("a-file/out") + ": cannot create the output folder"}};
  if (::geteuid() != 0) {  // root writes into a read-only folder anyway
    fs::create_directories(dir.file("read-only"));
    fs::permissions(dir.file("read-only"), fs::perms::owner_read | fs::perms::owner_exec);
    folders.emplace_back(dir.file("read-only"), dir.file("read-only") + ": cannot write into the output folder");
  }
  for (const auto& [folder, message] : folders) {
    const std::string out = folder;  // a plain local: clang-tidy 14 cannot see bindings in INFO's lambda
    const std::string json = dir.file("summary.json");
    const auto r = run_cuconv(
        {"--out-dir", out, dir.file("in"), "--filter", "gauss5", "--variant", "opencv", "--json", json, "-v"});
    INFO(out, ": ", r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::output));
    CHECK(r.err.find(message) != std::string::npos);
    std::size_t errors = 0;
    for (std::size_t at = r.err.find("error:"); at != std::string::npos; at = r.err.find("error:", at + 1)) ++errors;
    CHECK(errors == 1);
    CHECK(r.err.find("img00.png") == std::string::npos);  // no image was read, none reported
    CHECK_FALSE(fs::exists(json));
  }
  if (::geteuid() != 0) fs::permissions(dir.file("read-only"), fs::perms::owner_all);
  // The check leaves nothing behind in a folder that takes files.
  const auto ok =
      run_cuconv({"--out-dir", dir.file("out"), dir.file("in"), "--filter", "gauss5", "--variant", "opencv"});
  CHECK(ok.exit_code == 0);
  CHECK(file_names(dir.file("out")).size() == 6);
}
