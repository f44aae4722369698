// SPDX-License-Identifier: Apache-2.0
// The batch engine called directly: its bounded queues, the observer and progress line, the
// images held at once, exit code rules, atomic writes and the byte budget.
#include "batch_support.hpp"
#include "test_support.hpp"

#include "cli/batch_report.hpp"
#include "engine/batch_pipeline.hpp"
#include "engine/bounded_queue.hpp"
#include "engine/byte_budget.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

using namespace cuconv;
using namespace cuconv::engine;
using cuconv::test::bit_equal;
using cuconv::test::file_names;
using cuconv::test::gauss5;
using cuconv::test::random_image;
using cuconv::test::TempDir;
using cuconv::test::usage_error_of;
using cuconv::test::write_random_images;
namespace fs = std::filesystem;

TEST_CASE("batch engine: bounded queue blocks producers when full and drains after close") {
  BoundedQueue<int> queue(2);
  CHECK(queue.push(1));
  CHECK(queue.push(2));
  std::atomic<bool> third_pushed{false};
  std::thread producer([&] {
    queue.push(3);
    third_pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(third_pushed.load());  // full: the producer waits
  CHECK(queue.size() == 2);
  CHECK(queue.pop() == 1);
  producer.join();
  CHECK(third_pushed.load());
  queue.close();
  CHECK_FALSE(queue.push(4));  // closed: refused
  CHECK(queue.pop() == 2);     // still drained in order
  CHECK(queue.pop() == 3);
  CHECK_FALSE(queue.pop().has_value());
}

TEST_CASE("batch engine: pop_some takes what is queued up to its limit, waits a little for more, then none") {
  BoundedQueue<int> queue(8);
  for (int i = 1; i <= 5; ++i) CHECK(queue.push(i));
  CHECK(queue.pop_some(3, std::chrono::microseconds(0)) == std::vector<int>{1, 2, 3});
  // Two queued, room for four: after the two it waits for more, and takes one pushed meanwhile.
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    queue.push(6);
  });
  CHECK(queue.pop_some(4, std::chrono::milliseconds(300)) == std::vector<int>{4, 5, 6});
  late.join();
  // Nothing arrives within the wait: it returns what it has rather than waiting for the limit.
  CHECK(queue.push(7));
  const auto start = std::chrono::steady_clock::now();
  CHECK(queue.pop_some(4, std::chrono::milliseconds(30)) == std::vector<int>{7});
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(25));
  queue.close();
  CHECK(queue.pop_some(4, std::chrono::seconds(5)).empty());  // closed and drained: at once
}

namespace {

/// One batch item per file of `dir`/`folder` (sorted), each written to `dir` under its own name.
std::vector<BatchItem> items_of_folder(const TempDir& dir, const std::string& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir.path() / folder)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<BatchItem> items;
  for (const fs::path& file : files) items.push_back({file.string(), dir.file(file.filename().string())});
  return items;
}

/// gauss5 with cv::filter2D on `jobs` codec threads.
BatchOptions gauss5_on_cpu(std::size_t jobs) {
  BatchOptions options;
  options.run.filter = load_filter("gauss5");
  options.run.convolve.variant = Variant::opencv;
  options.jobs = jobs;
  return options;
}

}  // namespace

TEST_CASE("batch engine: after a stop the observer counts finished images only, not those never started") {
  // Issue 62: after Ctrl-C the progress line read "50/50 ... ETA 0:00:00" before "10 written,
  // 40 not started".
  TempDir dir;
  write_random_images(dir.path() / "in", 8);
  const std::vector<BatchItem> items = items_of_folder(dir, "in");
  BatchOptions options = gauss5_on_cpu(1);
  std::atomic<std::size_t> written{0};
  options.stop_requested = [&written] { return written.load() >= 2; };
  std::size_t reports = 0;
  std::size_t last_done = 0;
  const BatchSummary summary = run_batch(items, options, [&](const ItemReport& item, std::size_t done, std::size_t) {
    ++reports;
    if (item.status == ItemStatus::ok) ++written;
    CHECK(done <= written.load());
    last_done = done;
  });
  REQUIRE(summary.not_started > 0);
  CHECK(reports == items.size());  // every item is still reported, the ones not started too
  CHECK(last_done == summary.ok);
  CHECK(last_done < items.size());
}

TEST_CASE("batch progress line: finish shows the last count even when the redraw limit held it back") {
  int ends[2];
  REQUIRE(::pipe(ends) == 0);
  {
    cli::ProgressLine line(true, 5, ends[1]);
    line.update(1);  // drawn
    line.update(2);  // within 100 ms of the last drawing: held back
    line.finish();
  }
  ::close(ends[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = ::read(ends[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  ::close(ends[0]);
  const std::size_t last = text.rfind("\r\033[K");
  REQUIRE(last != std::string::npos);
  CHECK(text.substr(last + 4).starts_with("2/5 images"));
  CHECK(text.ends_with("\n"));
}

TEST_CASE("batch engine: every image filtered, one failure reported, observer sees each once") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 7);
  std::ofstream(dir.file("in/img03.png"), std::ios::binary) << "not a png";  // the failing one
  const std::vector<BatchItem> items = items_of_folder(dir, "in");
  const BatchOptions options = gauss5_on_cpu(3);
  std::vector<std::size_t> done_counts;
  const BatchSummary summary = run_batch(items, options, [&](const ItemReport&, std::size_t done, std::size_t total) {
    CHECK(total == items.size());
    done_counts.push_back(done);
  });
  CHECK(done_counts.size() == items.size());
  CHECK(std::is_sorted(done_counts.begin(), done_counts.end()));
  CHECK(summary.ok == 6);
  CHECK(summary.failed == 1);
  CHECK(summary.exit_code == ExitCode::some_inputs_failed);
  for (const ItemReport& item : summary.items) {
    INFO(item.input, ": ", item.reason);
    if (item.input.ends_with("img03.png")) {
      CHECK(item.status == ItemStatus::failed);
      CHECK(item.exit_code == ExitCode::bad_input);
      CHECK(item.reason.find("cannot decode") != std::string::npos);
      CHECK_FALSE(fs::exists(item.output));
    } else {
      REQUIRE(item.status == ItemStatus::ok);
      CHECK(item.times.read_ms > 0);
      CHECK(item.times.write_ms > 0);
      CHECK(item.times.total_ms >= item.times.read_ms + item.times.write_ms);
      CHECK(bit_equal(cv::imread(item.output, cv::IMREAD_UNCHANGED),
                      gauss5(images.at(fs::path(item.input).filename().string()))));
    }
  }
}

TEST_CASE("batch engine: images held stay within 2 x jobs + 3 x filter threads, for 8 inputs or 60") {
  // Slow writers (the observer runs on the writing thread) let the decoders run ahead until every
  // queue is full: without the bounds the count would grow with the number of inputs.
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 60, 16);
  for (const std::size_t count : {std::size_t{8}, std::size_t{60}}) {
    std::vector<BatchItem> items;
    for (const auto& [name, image] : images) {
      if (items.size() == count) break;
      items.push_back({dir.file("in/" + name), dir.file("out" + std::to_string(count) + "_" + name)});
    }
    BatchOptions options;
    options.run.filter = load_filter("gauss3");
    options.run.convolve.variant = Variant::opencv;
    options.jobs = 2;
    options.filter_threads_per_device = 2;
    const BatchSummary summary = run_batch(items, options, [](const ItemReport&, std::size_t, std::size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    });
    INFO(count, " inputs: peak ", summary.peak_images_held);
    CHECK(summary.ok == count);
    CHECK(summary.peak_images_held >= 2);
    CHECK(summary.peak_images_held <= 2 * options.jobs + 3 * options.filter_threads_per_device);
    if (count == 60) CHECK(summary.peak_images_held > options.jobs + 2);  // the queues did fill
  }
}

TEST_CASE("batch engine: exit code rules") {
  BatchSummary s;
  s.ok = 3;
  CHECK(batch_exit_code(s, false) == ExitCode::ok);
  s.failed = 1;
  s.first_failure = ExitCode::output;
  CHECK(batch_exit_code(s, false) == ExitCode::some_inputs_failed);
  CHECK(batch_exit_code(s, true) == ExitCode::output);  // --fail-fast: the failure's own code
  s.ok = 0;  // only one input attempted: its own code, as cuconv IN OUT would exit
  CHECK(batch_exit_code(s, false) == ExitCode::output);
}

TEST_CASE("write_image_atomic: no-replace keeps an existing file - permissions follow the umask") {
  TempDir dir;
  const cv::Mat image = random_image(9, 7, CV_8U, 1, 5);
  const std::string target = dir.file("t.png");
  std::ofstream(target) << "keep me";
  try {
    write_image_atomic(target, image, /*overwrite=*/false);
    FAIL("an existing file was replaced");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::output);
  }
  CHECK(cuconv::test::read_file(target) == "keep me");
  CHECK(file_names(dir.path()) == std::set<std::string>{"t.png"});  // no temporary file left
  write_image_atomic(target, image);                                // overwrite: the default
  CHECK(bit_equal(cv::imread(target, cv::IMREAD_UNCHANGED), image));
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((fs::status(target).permissions() & fs::perms::all) == static_cast<fs::perms>(0666 & ~mask));
}

TEST_CASE("ConvolveOptions::device below -1 is refused") {
  ConvolveOptions options;
  options.variant = Variant::opencv;
  options.device = -2;
  CHECK(usage_error_of([&] { (void)convolve(random_image(8, 8, CV_8U, 1, 1), load_filter("box3"), options); }) ==
        ExitCode::usage);
}

TEST_CASE("byte budget: takers wait for room, the peak stays within the limit, an oversized item passes alone") {
  cuconv::engine::ByteBudget budget(100);
  budget.take(250);  // more than the limit, but nothing else is taken
  CHECK(budget.peak() == 250);
  budget.give(250);
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        budget.take(40);  // at most two fit in 100
        const int now = ++inside;
        int seen = most_inside.load();
        while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {
        }
        --inside;
        budget.give(40);
      }
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(most_inside.load() <= 2);
  CHECK(budget.peak() == 250);  // the oversized one; the takers stayed within 80
}
