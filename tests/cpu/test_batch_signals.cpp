// SPDX-License-Identifier: Apache-2.0
// Batch mode against the outside world: SIGINT/SIGTERM at random moments, and two processes
// writing into one output folder at once. Both run `cuconv --out-dir` on small generated images
// with the opencv variant, so they need no GPU.
#include "test_support.hpp"

#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <random>
#include <thread>

using cuconv::test::bit_equal;
using cuconv::test::CommandResult;
using cuconv::test::CuconvProcess;
using cuconv::test::file_names;
using cuconv::test::is_temp_name;
using cuconv::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr const char* kFilter = "box:9";

/// What `cuconv --filter box:9 --variant opencv` writes for each image.
std::map<std::string, cv::Mat> expected_outputs(const std::map<std::string, cv::Mat>& images) {
  const cv::Mat kernel = cuconv::test::kernel_matrix(cuconv::load_filter(kFilter));
  std::map<std::string, cv::Mat> expected;
  for (const auto& [name, image] : images) {
    cv::Mat out;
    cv::filter2D(image, out, -1, kernel, cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
    expected.emplace(name, out);
  }
  return expected;
}

/// Checks that `out` holds only finished outputs, each equal to its expected image; returns how
/// many there are. A missing folder holds none.
std::size_t check_outputs(const fs::path& out, const std::map<std::string, cv::Mat>& expected) {
  if (!fs::exists(out)) return 0;
  std::size_t complete = 0;
  for (const std::string& name : file_names(out)) {
    INFO(out.string(), "/", name);
    CHECK_FALSE(is_temp_name(name));
    REQUIRE(expected.contains(name));
    CHECK(bit_equal(cv::imread((out / name).string(), cv::IMREAD_UNCHANGED), expected.at(name)));
    ++complete;
  }
  return complete;
}

/// Waits (up to 20 s) until `folder` exists: batch mode creates its output folder once the
/// checks are done and the signals are taken over, just before the work.
bool wait_for_folder(const fs::path& folder) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fs::exists(folder)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

nlohmann::json read_json(const fs::path& path) { return nlohmann::json::parse(cuconv::test::read_file(path)); }

std::vector<std::string> batch_args(const TempDir& dir, const std::string& out, const std::string& json) {
  return {"--out-dir", dir.file(out), "--filter", kFilter,        "--variant",   "opencv",
          "--jobs",    "2",           "--json",   dir.file(json), dir.file("in")};
}

}  // namespace

TEST_CASE("batch signals: SIGINT or SIGTERM at 50 random moments leave no temporary file and no partial output") {
  TempDir dir;
  constexpr std::size_t kImages = 16;
  const auto expected = expected_outputs(cuconv::test::write_random_images(dir.path() / "in", kImages, 128));

  // A clean run gives the time spans the signals are spread over: its start (loading the
  // libraries, checking the options) and its work (from the output folder's creation on).
  const auto start = std::chrono::steady_clock::now();
  CuconvProcess clean_process(batch_args(dir, "clean", "clean.json"));
  const bool appeared = wait_for_folder(dir.path() / "clean");
  const auto work_start = std::chrono::steady_clock::now();
  const CommandResult clean = clean_process.wait();
  const auto end = std::chrono::steady_clock::now();
  INFO(clean.err);
  REQUIRE(appeared);
  REQUIRE(clean.exit_code == 0);
  REQUIRE(check_outputs(dir.path() / "clean", expected) == kImages);
  const long start_us = std::chrono::duration_cast<std::chrono::microseconds>(work_start - start).count();
  const long work_us = std::chrono::duration_cast<std::chrono::microseconds>(end - work_start).count();

  std::mt19937 rng(cuconv::test::test_seed("signals and delays"));
  int interrupted_midway = 0, killed_at_start = 0, finished = 0, none_written = 0;
  for (int run = 0; run < 50; ++run) {
    const std::string out = "out" + std::to_string(run);
    const std::string json = out + ".json";
    const int signal = rng() % 2 == 0 ? SIGINT : SIGTERM;
    // One run in five anywhere from the start; the others once the work has begun.
    const bool during_start = run % 5 == 0;
    const long delay = std::uniform_int_distribution<long>(0, during_start ? start_us + work_us : work_us)(rng);
    CuconvProcess process(batch_args(dir, out, json));
    if (!during_start) wait_for_folder(dir.path() / out);
    std::this_thread::sleep_for(std::chrono::microseconds(delay));
    ::kill(process.pid(), signal);
    const CommandResult r = process.wait();
    CAPTURE(run);
    CAPTURE(signal);
    CAPTURE(delay);
    INFO(r.err);
    const std::size_t written = check_outputs(dir.path() / out, expected);
    if (r.signal != 0) {
      // Only before cuconv took the signals over (while it starts: nothing was created yet) or
      // after it gave them back (at its exit: everything was written).
      CHECK(r.signal == signal);
      CHECK((!fs::exists(dir.file(out)) || written == kImages));
      ++killed_at_start;
    } else if (r.exit_code == 0) {
      CHECK(written == kImages);  // it finished before the signal came
      ++finished;
    } else {
      CHECK(r.exit_code == 128 + signal);
      CHECK(r.err.find(std::string("interrupted by ") + (signal == SIGINT ? "SIGINT" : "SIGTERM")) !=
            std::string::npos);
      if (fs::exists(dir.file(json)) && fs::file_size(dir.file(json)) > 0) {
        // The account adds up: what it wrote is what is there, the rest was not started.
        const auto summary = read_json(dir.file(json));
        CHECK(summary["exit_code"] == 128 + signal);
        CHECK(summary["totals"]["ok"] == written);
        CHECK(summary["totals"]["ok"].get<std::size_t>() + summary["totals"]["not_started"].get<std::size_t>() ==
              kImages);
        CHECK(r.err.find(std::to_string(written) + " written") != std::string::npos);
        interrupted_midway += written > 0 && written < kImages;
        none_written += written == 0;
      }
    }
    // The same command again finishes the set.
    const CommandResult again = cuconv::test::run_cuconv(batch_args(dir, out, json));
    INFO(again.err);
    CHECK(again.exit_code == 0);
    CHECK(check_outputs(dir.path() / out, expected) == kImages);
    fs::remove_all(dir.file(out));
  }
  MESSAGE(killed_at_start, " runs ended by the signal while starting or exiting, ", none_written,
          " interrupted before the first write, ", interrupted_midway, " with part of the set written, ", finished,
          " finished; a clean run took ", start_us, " us to start and ", work_us, " us to work");
  CHECK(interrupted_midway > 0);  // the signals really landed inside the batch
}

TEST_CASE(
    "batch signals: SIGINT stops a served batch as it stops one in-process: finished outputs kept, the rest not "
    "started") {
  TempDir dir;
  constexpr std::size_t kImages = 64;
  const auto expected = expected_outputs(cuconv::test::write_random_images(dir.path() / "in", kImages, 512));
  const cuconv::test::Server server(dir);
  for (const bool served : {false, true}) {
    CAPTURE(served);
    const std::string out = served ? "served" : "local";
    // One image at a time, so the signal lands with most of the set still to do.
    CuconvProcess process({"--server", served ? "always" : "never", "--out-dir", dir.file(out), "--filter", kFilter,
                           "--variant", "opencv", "--jobs", "1", "--json", dir.file(out + ".json"), dir.file("in")},
                          "", server.setup());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    const auto some_finished = [&] {
      if (!fs::exists(dir.file(out))) return false;
      const auto names = file_names(dir.path() / out);
      // An output under its own name (not a temporary file, not the folder's write check).
      return std::any_of(names.begin(), names.end(), [&](const std::string& name) { return expected.contains(name); });
    };
    while (!some_finished() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    ::kill(process.pid(), SIGINT);
    const CommandResult r = process.wait();
    INFO(r.err);
    CHECK(r.exit_code == 128 + SIGINT);
    CHECK(r.err.find("interrupted by SIGINT") != std::string::npos);
    // The command stopped itself: not the client giving up on a server that went on.
    CHECK(r.err.find("outputs the server had not finished") == std::string::npos);
    const std::size_t written = check_outputs(dir.path() / out, expected);
    CHECK(written > 0);
    CHECK(written < kImages);
    const auto summary = read_json(dir.file(out + ".json"));
    CHECK(summary["exit_code"] == 128 + SIGINT);
    CHECK(summary["totals"]["ok"] == written);
    CHECK(summary["totals"]["ok"].get<std::size_t>() + summary["totals"]["not_started"].get<std::size_t>() == kImages);
    CHECK(r.err.find(std::to_string(written) + " written") != std::string::npos);
  }
}

TEST_CASE("batch signals: single-image mode interrupted at random moments leaves no temporary file") {
  TempDir dir;
  const cv::Mat image = cuconv::test::random_image(1024, 1024, CV_8U, 3, 7);
  REQUIRE(cv::imwrite(dir.file("in.png"), image));
  const auto expected = expected_outputs({{"out.png", image}});
  const std::vector<std::string> args{
      dir.file("in.png"), dir.file("out/out.png"), "--filter", kFilter, "--variant", "opencv"};
  fs::create_directories(dir.file("out"));
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(cuconv::test::run_cuconv(args).exit_code == 0);
  const auto clean_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  fs::remove(dir.file("out/out.png"));

  std::mt19937 rng(cuconv::test::test_seed("signals and delays"));
  std::uniform_int_distribution<long> delay_us(0, clean_us.count());
  for (int run = 0; run < 10; ++run) {
    const int signal = rng() % 2 == 0 ? SIGINT : SIGTERM;
    CuconvProcess process(args);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    ::kill(process.pid(), signal);
    const CommandResult r = process.wait();
    INFO(r.err);
    CHECK((r.exit_code == 0 || r.exit_code == 128 + signal));
    check_outputs(dir.path() / "out", expected);  // the output is complete or absent, no temporary file
    fs::remove(dir.file("out/out.png"));
  }
}

TEST_CASE("batch concurrency: two processes with the same arguments write each output once and account for all") {
  TempDir dir;
  constexpr std::size_t kImages = 40;
  const auto images = cuconv::test::write_random_images(dir.path() / "in", kImages, 64);
  const auto expected = expected_outputs(images);
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    const std::string out = "out" + std::to_string(round);
    CuconvProcess first(batch_args(dir, out, out + "-a.json"));
    CuconvProcess second(batch_args(dir, out, out + "-b.json"));
    const CommandResult a = first.wait();
    const CommandResult b = second.wait();
    INFO(a.err, "\n---\n", b.err);
    CHECK(a.exit_code == 0);
    CHECK(b.exit_code == 0);
    CHECK(check_outputs(dir.path() / out, expected) == kImages);
    const auto sa = read_json(dir.file(out + "-a.json"));
    const auto sb = read_json(dir.file(out + "-b.json"));
    REQUIRE(sa["files"].size() == kImages);
    REQUIRE(sb["files"].size() == kImages);
    std::size_t ok_a = 0, ok_b = 0;
    for (std::size_t i = 0; i < kImages; ++i) {
      const auto& fa = sa["files"][i];
      const auto& fb = sb["files"][i];
      CAPTURE(fa["input"].get<std::string>());
      // Exactly one wrote it; the other reports it as skipped because the output exists.
      CHECK(((fa["status"] == "ok") != (fb["status"] == "ok")));
      const auto& loser = fa["status"] == "ok" ? fb : fa;
      CHECK(loser["status"] == "skipped");
      CHECK(loser["reason"].get<std::string>().find("output") != std::string::npos);
      ok_a += fa["status"] == "ok";
      ok_b += fb["status"] == "ok";
    }
    CHECK(ok_a + ok_b == kImages);
    CHECK(sa["totals"]["ok"] == ok_a);
    CHECK(sb["totals"]["ok"] == ok_b);
    CHECK(sa["totals"]["ok"].get<std::size_t>() + sa["totals"]["existing_outputs"].get<std::size_t>() == kImages);
    CHECK(sb["totals"]["ok"].get<std::size_t>() + sb["totals"]["existing_outputs"].get<std::size_t>() == kImages);
    CHECK(sa["totals"]["failed"] == 0);
    CHECK(sb["totals"]["failed"] == 0);
  }
}
