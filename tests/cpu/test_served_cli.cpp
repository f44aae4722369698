// SPDX-License-Identifier: Apache-2.0
// The CLI through a `cuconv serve` and in-process: the same commands give the same exit codes,
// messages, standard output and output bytes (issue 47: the server runs the same per-image code).
#include "test_support.hpp"

#include "engine/gpu_codec_route.hpp"
#include "engine/warm_gpu.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::Server;
using cuconv::test::TempDir;
namespace fs = std::filesystem;

namespace {

/// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST_CASE("served cli: the same commands through cuconv serve and in-process give the same results") {
  TempDir dir;
  const Server server(dir);
  fs::create_directories(dir.file("local"));
  fs::create_directories(dir.file("served"));
  fs::copy_file(sample("camera.png"), dir.file("local/exists.png"));
  fs::copy_file(sample("camera.png"), dir.file("served/exists.png"));
  // Each command names its outputs in OUT/, which is local/ in-process and served/ through the server.
  const std::vector<std::vector<std::string>> commands = {
      {sample("camera.png"), "OUT/blur.png", "--filter", "gauss5"},
      {sample("coffee.png"), "OUT/sharp.tif", "--filter", "sharpen", "--depth", "16u"},
      {sample("coffee.png"), "OUT/box.jpg", "--filter", "box:9", "--quality", "90"},
      {sample("camera.png"), "OUT/exists.png", "--filter", "gauss5"},  // exit 4
      {sample("camera.png"), "OUT/exists.png", "--filter", "gauss5", "--skip-existing"},
      {dir.file("missing.png"), "OUT/x.png", "--filter", "gauss5"},  // exit 3
      {sample("camera.png"), "OUT/x.png", "--filter", "nosuchfilter"},
      {sample("camera.png"), "OUT/y.png", "--filter", "gauss5", "--variant", "tensor"},  // exit 5 without a GPU
      // libpng's own warning (iCCP) reaches the command's messages, served as in-process:
      {sample("astronaut.png"), "OUT/astronaut.png", "--filter", "gauss3", "--variant", "opencv"},
      {"--out-dir", "OUT/batch", "--filter", "gauss3", "--json", "-", sample("camera.png"), sample("coffee.png"),
       sample("astronaut.png")},
      {"--list-filters"},
      {"--show-filter", "gaussian:2,1.5"},
  };
  for (const auto& command : commands) {
    std::vector<std::string> local, served;
    for (const std::string& arg : command) {
      local.push_back(replaced(arg, "OUT/", dir.file("local") + "/"));
      served.push_back(replaced(arg, "OUT/", dir.file("served") + "/"));
    }
    local.insert(local.begin(), {"--server", "never"});
    served.insert(served.begin(), {"--server", "always"});
    const auto a = run_cuconv(local, "", server.setup());
    const auto b = run_cuconv(served, "", server.setup());
    const std::string shown = command.size() > 1 ? command[0] + " ... " + command[1] : command[0];
    INFO(shown, "\nin-process: ", a.err, "\nserved: ", b.err);
    CHECK(a.exit_code == b.exit_code);
    const auto same_text = [&](const std::string& x, const std::string& y) {
      return replaced(x, dir.file("local"), "OUT") == replaced(y, dir.file("served"), "OUT");
    };
    CHECK(same_text(a.err, b.err));
    // The batch summary holds times; the rest of standard output must match byte for byte.
    if (command[0] != "--out-dir") CHECK(same_text(a.out, b.out));
  }
  // Every output written in-process was written the same through the server.
  for (const auto& entry : fs::recursive_directory_iterator(dir.file("local"))) {
    if (!entry.is_regular_file()) continue;
    const fs::path twin = fs::path(dir.file("served")) / fs::relative(entry.path(), dir.file("local"));
    INFO(entry.path().string());
    REQUIRE(fs::exists(twin));
    CHECK(cuconv::test::read_file(entry.path()) == cuconv::test::read_file(twin));
  }
}

TEST_CASE("served cli: each image goes to the least loaded device, within the server's memory limit") {
  cuconv::engine::LeastLoaded load(3);
  CHECK(load.take() == 0);
  CHECK(load.take() == 1);
  CHECK(load.take() == 2);
  CHECK(load.take() == 0);  // all at one: the lowest
  load.give(1);
  CHECK(load.take() == 1);  // the one that finished early takes the next
  load.give(2);
  load.give(2);  // never below zero
  CHECK(load.load(2) == 0);
  CHECK(load.take() == 2);
  CHECK_THROWS_AS((void)cuconv::engine::LeastLoaded(0).take(), cuconv::Error);

  using cuconv::engine::served_memory_limit;
  CHECK(served_memory_limit(0, 0) == 0);
  CHECK(served_memory_limit(0, 8) == 8);   // the server's when the command sets none
  CHECK(served_memory_limit(4, 8) == 4);   // the command's within it
  CHECK(served_memory_limit(16, 8) == 8);  // never above it
  CHECK(served_memory_limit(16, 0) == 16);
}

TEST_CASE("served cli: a warm GPU codec takes a single JPEG, a cold one waits for a run worth its set-up") {
  using namespace cuconv::engine;
  using namespace cuconv::codec;
  CodecRequest request;
  const auto usable = [](const GpuCodecFormat&) { return std::string(); };
  CHECK_FALSE(choose_gpu_codec(request, "a.jpg", "b.jpg", usable));  // one job, set-up to pay
  request.gpu_codec_warm = true;
  CHECK(choose_gpu_codec(request, "a.jpg", "b.jpg", usable));
  CHECK_FALSE(choose_gpu_codec(request, "a.png", "b.jpg", usable));  // JPEG -> JPEG only
  CHECK_FALSE(
      choose_gpu_codec(request, "a.jpg", "b.jpg", [](const GpuCodecFormat&) { return std::string("no device"); }));
  request.variant = cuconv::Variant::opencv;
  CHECK_FALSE(choose_gpu_codec(request, "a.jpg", "b.jpg", usable));  // the CPU was asked for
}

TEST_CASE(
    "served cli: a server without a GPU serves on the CPU, and --devices naming a missing device refuses to start") {
  std::string reason;
  if (cuconv::cuda_device_available(&reason)) {
    MESSAGE("a CUDA device is here: the no-GPU server is tested on the CPU machine");
    return;
  }
  cuconv::engine::WarmGpu warm({}, 0);
  CHECK(warm.devices().empty());
  CHECK(warm.gpu_codecs() == nullptr);
  CHECK(warm.setup_note().find("no usable CUDA device") != std::string::npos);
  CHECK(warm.take().device() == -1);

  TempDir dir;
  const auto r = run_cuconv({"serve", "--socket", dir.file("socket"), "--devices", "0", "--idle-exit", "1"});
  CHECK(r.exit_code == 5);
  CHECK(r.err.find("--devices 0: no usable CUDA device") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("socket")));
  const auto bad = run_cuconv({"serve", "--socket", dir.file("socket"), "--gpu-memory", "lots"});
  CHECK(bad.exit_code == 2);
}
