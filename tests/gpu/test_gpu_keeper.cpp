// SPDX-License-Identifier: Apache-2.0
// The exit keeper on a real GPU (src/cli/exit_handoff.cpp): a command that filtered on the GPU
// and wrote to a pipe exits at once, the pipe's reader sees its end within 50 ms of that exit
// (the keeper holds only the device files, not standard output), and 2 s later no process of
// the cuconv binary still holds a /dev/nvidia* file (the keeper let go after its maker exited).
#include "test_support.hpp"

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <unistd.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using cuconv::test::TempDir;

namespace {

/// Processes (other than this one) running `binary` that hold a descriptor of a /dev/nvidia* file.
std::vector<std::string> holders_of_device_files(const std::string& binary) {
  std::vector<std::string> found;
  std::error_code ec;
  const fs::path wanted = fs::weakly_canonical(binary, ec);
  for (const auto& process : fs::directory_iterator("/proc", ec)) {
    const std::string pid = process.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(::getpid())) continue;
    std::error_code exe_error;
    const fs::path exe = fs::read_symlink(process.path() / "exe", exe_error);
    if (exe_error || exe != wanted) continue;
    std::error_code fd_error;
    for (const auto& fd : fs::directory_iterator(process.path() / "fd", fd_error)) {
      std::error_code link_error;
      const std::string target = fs::read_symlink(fd.path(), link_error).string();
      if (!link_error && target.starts_with("/dev/nvidia")) {
        found.push_back(pid);
        found.back() += " holds " + target;
        break;
      }
    }
  }
  return found;
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TEST_CASE(
    "gpu keeper: a GPU command writing to a pipe ends the pipe within 50 ms of its exit, and the keeper lets go") {
  TempDir dir;
  cv::Mat image(512, 512, CV_8UC3);
  cv::randu(image, 0, 256);
  REQUIRE(cv::imwrite(dir.file("in.png"), image));
  const std::string binary = cuconv::test::cuconv_binary();
  // The shell stamps the time right after cuconv exits and again once `cat` has seen the pipe's
  // end; `date +%s%N` is the same clock as system_clock.
  const std::string script =
      "{ " + cuconv::test::shell_quote(binary) + " " + cuconv::test::shell_quote(dir.file("in.png")) +
      " png:- --filter gauss5 --variant fast; echo $? > " + cuconv::test::shell_quote(dir.file("code")) +
      "; date +%s%N > " + cuconv::test::shell_quote(dir.file("exited")) + "; } | cat > " +
      cuconv::test::shell_quote(dir.file("out.png")) + "; date +%s%N > " + cuconv::test::shell_quote(dir.file("ended"));
  const int status = std::system(("bash -c " + cuconv::test::shell_quote(script)).c_str());
  const long long returned = now_ns();
  REQUIRE(status == 0);
  CHECK(cuconv::test::read_file(dir.file("code")) == "0\n");
  const long long exited = std::stoll(cuconv::test::read_file(dir.file("exited")));
  const long long ended = std::stoll(cuconv::test::read_file(dir.file("ended")));
  INFO("the pipe ended " << (ended - exited) / 1000 << " us after cuconv's exit");
  CHECK(ended - exited < 50'000'000LL);
  CHECK(returned >= ended);
  CHECK(cv::imread(dir.file("out.png")).size() == image.size());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::vector<std::string> holders = holders_of_device_files(binary);
  for (const std::string& h : holders) MESSAGE(h);
  CHECK(holders.empty());
}
