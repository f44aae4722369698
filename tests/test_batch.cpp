// SPDX-License-Identifier: Apache-2.0
// Batch mode: the planning functions and the engine directly, and `cuconv --out-dir` end to end
// (names, input lists, directories, shards, output safety, failures, the JSON summary).
#include "test_support.hpp"

#include "cli/batch_report.hpp"
#include "engine/batch_plan.hpp"
#include "engine/batch_pipeline.hpp"
#include "engine/bounded_queue.hpp"
#include "engine/byte_budget.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace cuconv;
using namespace cuconv::engine;
using cuconv::test::bit_equal;
using cuconv::test::file_names;
using cuconv::test::is_temp_name;
using cuconv::test::CommandResult;
using cuconv::test::kernel_matrix;
using cuconv::test::random_image;
using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::shell_quote;
using cuconv::test::TempDir;
using cuconv::test::write_random_images;
namespace fs = std::filesystem;

namespace {

/// What `cuconv ... --filter gauss5 --variant opencv` writes for `image`.
cv::Mat gauss5(const cv::Mat& image) {
  const Filter f = load_filter("gauss5");
  cv::Mat out;
  cv::filter2D(image, out, -1, kernel_matrix(f), cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
  return out;
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(cuconv::test::read_file(path)); }

template <class F>
ExitCode usage_error_of(F&& call) {
  try {
    call();
  } catch (const Error& e) {
    return exit_code_for(e.kind());
  }
  return ExitCode::ok;
}

}  // namespace

// ---- planning -----------------------------------------------------------------------------------

TEST_CASE("batch plan: output names from templates") {
  CHECK(output_name("%s", "in/camera.png") == "camera.png");               // default: name kept
  CHECK(output_name("%s_out.png", "dir/photo.JPG") == "photo_out.png");    // template picks PNG
  CHECK(output_name("%s_blur", "x/a.b.tif") == "a.b_blur.tif");            // no extension: input's kept
  CHECK(output_name("v1.2_%s", "a.png") == "v1.2_a.png");                  // a dot before %s is no extension
  CHECK(output_name("%s-%s.tif", "a.png") == "a-a.tif");
  CHECK(output_name("100%%_%s", "a.png") == "100%_a.png");
  CHECK(output_name("result.tif", "a.png") == "result.tif");
  CHECK(output_name("%s", "noextension") == "noextension");
  CHECK(template_has_extension("%s.tif"));
  CHECK_FALSE(template_has_extension("x.y_%s"));

  CHECK(usage_error_of([] { check_name_template("%s_out.png", 5); }) == ExitCode::ok);
  CHECK(usage_error_of([] { check_name_template("single.png", 1); }) == ExitCode::ok);
  CHECK(usage_error_of([] { check_name_template("single.png", 2); }) == ExitCode::usage);
  CHECK(usage_error_of([] { check_name_template("", 1); }) == ExitCode::usage);
  CHECK(usage_error_of([] { check_name_template("sub/%s.png", 1); }) == ExitCode::usage);
  CHECK(usage_error_of([] { check_name_template("%d.png", 1); }) == ExitCode::usage);
  CHECK(usage_error_of([] { check_name_template("%s%", 1); }) == ExitCode::usage);
}

TEST_CASE("batch plan: two inputs with one output name are refused before any work") {
  const auto items = plan_outputs({"a/x.png", "b/y.png"}, "out", "%s");
  REQUIRE(items.size() == 2);
  CHECK(items[0].output == "out/x.png");
  CHECK(items[1].output == "out/y.png");
  try {
    (void)plan_outputs({"a/x.png", "b/x.png"}, "out", "%s");
    FAIL("no error for two inputs named x.png");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("a/x.png") != std::string::npos);
    CHECK(std::string(e.what()).find("b/x.png") != std::string::npos);
  }
  CHECK(usage_error_of([] { (void)plan_outputs({"a/x.png", "a/x.tif"}, "out", "%s.png"); }) == ExitCode::usage);
}

TEST_CASE("batch plan: path lists ignore blank lines and CR, keep spaces inside names") {
  std::istringstream list("a.png\r\n\r\n   \n  spaced name.png\nlast.tif");
  CHECK(read_path_list(list) == std::vector<std::string>{"a.png", "  spaced name.png", "last.tif"});
  std::istringstream empty("\n\r\n");
  CHECK(read_path_list(empty).empty());
}

TEST_CASE("batch plan: directories give their images, sorted, once - --recursive descends") {
  TempDir dir;
  const fs::path root = dir.path() / "imgs";
  fs::create_directories(root / "sub" / "deeper");
  for (const char* name : {"b.png", "A.JPG", "c.TiFf", "notes.txt", "noext", "sub/d.png", "sub/deeper/e.bmp",
                           "sub/readme.md"})
    std::ofstream(root / name) << "x";
  std::ofstream(root / (std::string(kTempFilePrefix) + "b.png.abc123")) << "partial";
  fs::create_directories(root / "folder.png");  // a directory with an image name is no image

  const std::string r = root.string();
  CHECK(collect_inputs({r}, false) == std::vector<std::string>{r + "/A.JPG", r + "/b.png", r + "/c.TiFf"});
  CHECK(collect_inputs({r}, true) == std::vector<std::string>{r + "/A.JPG", r + "/b.png", r + "/c.TiFf",
                                                              r + "/sub/d.png", r + "/sub/deeper/e.bmp"});
  // Files named directly are taken as they are (even without an image extension), once.
  CHECK(collect_inputs({r + "/./b.png", r + "/b.png", r + "/notes.txt", r + "/sub"}, false) ==
        std::vector<std::string>{r + "/b.png", r + "/notes.txt", r + "/sub/d.png"});
}

TEST_CASE("batch plan: shards are disjoint and complete for N = 1..8") {
  std::vector<std::string> sorted;
  for (int i = 0; i < 29; ++i) sorted.push_back("f" + std::to_string(100 + i));
  for (std::size_t n = 1; n <= 8; ++n) {
    std::multiset<std::string> seen;
    for (std::size_t i = 0; i < n; ++i) {
      const auto mine = select_shard(sorted, Shard{i, n});
      // Sizes differ by at most one: index % N spreads evenly.
      CHECK(mine.size() >= sorted.size() / n);
      CHECK(mine.size() <= sorted.size() / n + 1);
      seen.insert(mine.begin(), mine.end());
    }
    INFO("N = ", n);
    CHECK(seen == std::multiset<std::string>(sorted.begin(), sorted.end()));  // each exactly once
  }
}

TEST_CASE("batch plan: --shard and Slurm array variables") {
  CHECK(parse_shard("0/1").count == 1);
  CHECK(parse_shard("3/4").index == 3);
  for (const char* bad : {"4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", "1 /2", ""})
    CHECK_MESSAGE(usage_error_of([&] { (void)parse_shard(bad); }) == ExitCode::usage, bad);

  const auto env_of = [](std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  CHECK_FALSE(slurm_array_shard(env_of({})).has_value());
  auto s = slurm_array_shard(env_of({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  REQUIRE(s);
  CHECK((s->index == 2 && s->count == 4));
  // --array=1-16: ids start at 1, shards at 0.
  s = slurm_array_shard(env_of({{"SLURM_ARRAY_TASK_ID", "16"}, {"SLURM_ARRAY_TASK_COUNT", "16"}, {"SLURM_ARRAY_TASK_MIN", "1"}}));
  REQUIRE(s);
  CHECK((s->index == 15 && s->count == 16));
  // --array=0-30:10: ids 0, 10, 20, 30.
  s = slurm_array_shard(env_of({{"SLURM_ARRAY_TASK_ID", "20"}, {"SLURM_ARRAY_TASK_COUNT", "4"},
                                {"SLURM_ARRAY_TASK_MIN", "0"}, {"SLURM_ARRAY_TASK_STEP", "10"}}));
  REQUIRE(s);
  CHECK(s->index == 2);
  // --array=1,5,9 (a list: COUNT 3, MIN 1): id 9 is no shard of 3.
  CHECK(usage_error_of([&] {
          (void)slurm_array_shard(env_of({{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "1"}}));
        }) == ExitCode::usage);
}

// ---- engine -------------------------------------------------------------------------------------

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
  write_image_atomic(target, image);                                 // overwrite: the default
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

// ---- the binary ---------------------------------------------------------------------------------

TEST_CASE("cli batch: default names keep the file, --name sets name and format") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 3);
  const std::string in = dir.file("in");
  auto r = run_cuconv({"--out-dir", dir.file("same"), "--filter", "gauss5", "--variant", "opencv", in});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& [name, image] : images) CHECK(bit_equal(cv::imread(dir.file("same/" + name), cv::IMREAD_UNCHANGED), gauss5(image)));

  r = run_cuconv({"--out-dir", dir.file("tif"), "--name", "%s_out.tif", "--filter", "gauss5", "--variant", "opencv", in});
  REQUIRE(r.exit_code == 0);
  CHECK(file_names(dir.path() / "tif") == std::set<std::string>{"img00_out.tif", "img01_out.tif", "img02_out.tif"});
  CHECK(cuconv::test::read_file(dir.file("tif/img00_out.tif")).substr(0, 2) == "II");  // TIFF, not PNG bytes
  CHECK(bit_equal(cv::imread(dir.file("tif/img01_out.tif"), cv::IMREAD_UNCHANGED), gauss5(images.at("img01.png"))));

  r = run_cuconv({"--out-dir", dir.file("kept"), "--name", "blur_%s", "--filter", "gauss5", "--variant", "opencv", in});
  REQUIRE(r.exit_code == 0);
  CHECK(file_names(dir.path() / "kept") == std::set<std::string>{"blur_img00.png", "blur_img01.png", "blur_img02.png"});

  // One input may have a fixed name; several may not.
  r = run_cuconv({"--out-dir", dir.file("one"), "--name", "result.tif", "--filter", "gauss5", "--variant", "opencv",
                  dir.file("in/img02.png")});
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(dir.file("one/result.tif")));
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--name", "result.tif"},
                                              std::vector<std::string>{"--name", "%s_%d.png"},
                                              std::vector<std::string>{"--name", "sub/%s.png"}}) {
    std::vector<std::string> args{"--out-dir", dir.file("bad"), "--filter", "gauss5", in};
    args.insert(args.end(), bad.begin(), bad.end());
    r = run_cuconv(args);
    INFO(bad[1], ": ", r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::usage));
    CHECK(r.err.find("--name") != std::string::npos);
    CHECK((!fs::exists(dir.file("bad")) || fs::is_empty(dir.file("bad"))));
  }
  // A format no encoder writes: refused before any work, output exit code.
  r = run_cuconv({"--out-dir", dir.file("xyz"), "--name", "%s.xyz", "--filter", "gauss5", in});
  CHECK(r.exit_code == static_cast<int>(ExitCode::output));
  CHECK((!fs::exists(dir.file("xyz")) || fs::is_empty(dir.file("xyz"))));
}

TEST_CASE("cli batch: --from a file and from stdin through a pipe, CRLF and blank lines") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 4);
  {
    std::ofstream list(dir.file("list.txt"), std::ios::binary);
    list << dir.file("in/img00.png") << "\r\n\r\n" << dir.file("in/img02.png") << "\r\n   \n";
  }
  auto r = run_cuconv({"--out-dir", dir.file("a"), "--from", dir.file("list.txt"), "--filter", "gauss5", "--variant", "opencv"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(file_names(dir.path() / "a") == std::set<std::string>{"img00.png", "img02.png"});
  CHECK(bit_equal(cv::imread(dir.file("a/img02.png"), cv::IMREAD_UNCHANGED), gauss5(images.at("img02.png"))));

  // Standard input through a pipe (a FIFO a background printf writes into).
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
  r = run_cuconv({"--out-dir", dir.file("b"), "--from", "-", dir.file("in/img00.png"), "--filter", "gauss5",
                  "--variant", "opencv"},
                 dir.file("fifo"),
                 "printf '%s\\r\\n\\n%s\\n' " + shell_quote(dir.file("in/img01.png")) + " " +
                     shell_quote(dir.file("in/img03.png")) + " >" + shell_quote(dir.file("fifo")) + " &");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(file_names(dir.path() / "b") == std::set<std::string>{"img00.png", "img01.png", "img03.png"});

  r = run_cuconv({"--out-dir", dir.file("c"), "--from", dir.file("missing.txt"), "--filter", "gauss5"});
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.err.find("missing.txt") != std::string::npos);
}

TEST_CASE("cli batch: a directory gives its images - --recursive descends") {
  TempDir dir;
  write_random_images(dir.path() / "in", 2);
  write_random_images(dir.path() / "in" / "nested", 1);
  fs::rename(dir.file("in/nested/img00.png"), dir.file("in/nested/deep.PNG"));
  std::ofstream(dir.file("in/notes.txt")) << "not an image\n";
  auto r = run_cuconv({"--out-dir", dir.file("flat"), "--filter", "gauss5", "--variant", "opencv", dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(file_names(dir.path() / "flat") == std::set<std::string>{"img00.png", "img01.png"});
  r = run_cuconv({"--out-dir", dir.file("deep"), "--recursive", "--filter", "gauss5", "--variant", "opencv", dir.file("in")});
  REQUIRE(r.exit_code == 0);
  CHECK(file_names(dir.path() / "deep") == std::set<std::string>{"img00.png", "img01.png", "deep.PNG"});
  // An empty directory: nothing to do is an error, not a silent success.
  fs::create_directories(dir.file("empty"));
  r = run_cuconv({"--out-dir", dir.file("none"), "--filter", "gauss5", dir.file("empty")});
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
}

TEST_CASE("cli batch: shards of one list cover it exactly once (--shard and Slurm variables)") {
  TempDir dir;
  write_random_images(dir.path() / "in", 7, 16);
  std::multiset<std::string> written;
  for (int i = 0; i < 3; ++i) {
    const std::string json = dir.file("shard" + std::to_string(i) + ".json");
    const auto r = run_cuconv({"--out-dir", dir.file("out"), "--shard", std::to_string(i) + "/3", "--json", json,
                               "--filter", "box3", "--variant", "opencv", dir.file("in")});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto summary = read_json(json);
    for (const auto& file : summary["files"]) {
      CHECK(file["status"] == "ok");
      written.insert(fs::path(file["output"].get<std::string>()).filename().string());
    }
  }
  CHECK(written.size() == 7);
  CHECK(std::set<std::string>(written.begin(), written.end()) == file_names(dir.path() / "out"));

  // The same partition from a Slurm array --array=1-3 (task 2 is shard 1/3).
  const auto r = run_cuconv({"--out-dir", dir.file("slurm"), "--filter", "box3", "--variant", "opencv", dir.file("in"),
                             "--json", dir.file("slurm.json")},
                            "", "export SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=1");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto slurm = read_json(dir.file("slurm.json"));
  const auto shard1 = read_json(dir.file("shard1.json"));
  CHECK(slurm["shard"] == "1/3");
  REQUIRE(slurm["files"].size() == shard1["files"].size());
  for (std::size_t i = 0; i < shard1["files"].size(); ++i) CHECK(slurm["files"][i]["input"] == shard1["files"][i]["input"]);
}

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

  r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", dir.file("in"), "--overwrite"});
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
  with_overwrite.push_back("--overwrite");
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

TEST_CASE("cli batch: a corrupt input is reported, the others are written, exit 7 - --fail-fast stops") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 5);
  std::ofstream(dir.file("in/img02.png"), std::ios::binary) << "\x89PNG\r\n\x1a\ntruncated";
  auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", dir.file("in"),
                       "--json", dir.file("s.json")});
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::some_inputs_failed));
  CHECK(r.err.find("img02.png") != std::string::npos);
  CHECK(r.err.find("cannot decode") != std::string::npos);
  CHECK(file_names(dir.path() / "out") == std::set<std::string>{"img00.png", "img01.png", "img03.png", "img04.png"});
  CHECK(bit_equal(cv::imread(dir.file("out/img04.png"), cv::IMREAD_UNCHANGED), gauss5(images.at("img04.png"))));
  const auto summary = read_json(dir.file("s.json"));
  CHECK(summary["files"][2]["status"] == "failed");
  CHECK(summary["files"][2]["exit_code"] == static_cast<int>(ExitCode::bad_input));
  CHECK(summary["exit_code"] == static_cast<int>(ExitCode::some_inputs_failed));

  // One decoder: img00, img01, then img02 fails; img03 and img04 are never started.
  r = run_cuconv({"--out-dir", dir.file("ff"), "--fail-fast", "--jobs", "1", "--filter", "gauss5", "--variant",
                  "opencv", dir.file("in"), "--json", dir.file("ff.json")});
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.err.find("--fail-fast") != std::string::npos);
  const auto names = file_names(dir.path() / "ff");
  CHECK_FALSE(names.contains("img03.png"));
  CHECK_FALSE(names.contains("img04.png"));
  for (const auto& name : names) {
    CHECK_FALSE(is_temp_name(name));
    CHECK(bit_equal(cv::imread(dir.file("ff/" + name), cv::IMREAD_UNCHANGED), gauss5(images.at(name))));
  }
  const auto ff = read_json(dir.file("ff.json"));
  CHECK(ff["files"][4]["status"] == "skipped");
  CHECK(ff["files"][4]["reason"].get<std::string>().find("--fail-fast") != std::string::npos);
}

TEST_CASE("cli batch: --max-pixels applies to every input, as in single-image mode") {
  TempDir dir;
  write_random_images(dir.path() / "in", 3, 48);  // 48x48, 48x49, 48x50 pixels
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv",
                             "--max-pixels", "2352", dir.file("in")});  // 48 * 49: the third is too large
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::some_inputs_failed));
  CHECK(r.err.find("img02.png") != std::string::npos);
  CHECK(r.err.find("--max-pixels") != std::string::npos);
  CHECK(file_names(dir.path() / "out") == std::set<std::string>{"img00.png", "img01.png"});
}

TEST_CASE("cli batch: the JSON summary on stdout is valid and complete") {
  TempDir dir;
  write_random_images(dir.path() / "in", 3);
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", "--json", "-",
                             dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(r.out);
  REQUIRE(summary["files"].size() == 3);
  for (const auto& file : summary["files"]) {
    CHECK(file["status"] == "ok");
    CHECK(file["reason"] == "");
    CHECK(file["exit_code"] == 0);
    CHECK(fs::exists(file["output"].get<std::string>()));
    for (const char* timing : {"read_ms", "filter_ms", "write_ms", "total_ms"}) CHECK(file["timings"][timing].is_number());
    CHECK(file["timings"]["total_ms"].get<double>() > 0);
  }
  CHECK(summary["totals"]["inputs"] == 3);
  CHECK(summary["totals"]["ok"] == 3);
  CHECK(summary["totals"]["failed"] == 0);
  CHECK(summary["totals"]["wall_ms"].get<double>() > 0);
  CHECK(summary["totals"]["images_per_s"].get<double>() > 0);
  CHECK(summary["totals"]["startup_ms"].get<double>() > 0);
  CHECK(summary["totals"]["gpu_init_ms"] == 0);  // the opencv variant never touches CUDA
  CHECK(summary["gpu_threads"] == 2);
}

TEST_CASE("cli batch: the JSON summary records the variant each image ran with and the full filter spec") {
  TempDir dir;
  write_random_images(dir.path() / "in", 2);
  auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", "--border",
                       "constant", "--border-value", "7", "--delta", "1.5", "--anchor", "1,3", "--depth", "16u",
                       "--alpha", "keep", "--json", "-", dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto summary = nlohmann::json::parse(r.out);
  for (const auto& file : summary["files"]) {
    CHECK(file["variant"] == "opencv");
    CHECK(file["variant_reason"] == "");
  }
  const auto& filter = summary["filter"];
  const Filter gauss5 = load_filter("gauss5");
  CHECK(filter["origin"] == gauss5.origin);
  CHECK(filter["width"] == 5);
  CHECK(filter["height"] == 5);
  CHECK(filter["anchor"] == nlohmann::json::array({1, 3}));
  CHECK(filter["border"] == "constant");
  CHECK(filter["border_value"] == 7.0);
  CHECK(filter["delta"] == 1.5);
  CHECK(filter["offset"] == 0.0);
  CHECK(filter["depth"] == "16u");
  CHECK(filter["alpha"] == "keep");
  REQUIRE(filter["weights"].size() == 5);
  for (int row = 0; row < 5; ++row)
    for (int col = 0; col < 5; ++col) CHECK(filter["weights"][row][col] == gauss5.at(row, col));
  CHECK(summary["variant"] == "opencv");  // as requested

  // `auto`: what really ran, and why it was OpenCV when it was.
  r = run_cuconv({"--out-dir", dir.file("auto"), "--filter", "gauss5", "--json", "-", dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  summary = nlohmann::json::parse(r.out);
  CHECK(summary["variant"] == "auto");
  std::string no_gpu_reason;
  const bool gpu = cuda_device_available(&no_gpu_reason);
  for (const auto& file : summary["files"]) {
    if (gpu) {
      CHECK(file["variant"] == "fast");
      CHECK(file["variant_reason"] == "");
    } else {
      CHECK(file["variant"] == "opencv");
      CHECK(file["variant_reason"] == "no usable CUDA device: " + no_gpu_reason);
    }
  }
  // --no-filter runs no variant.
  r = run_cuconv({"--out-dir", dir.file("copy"), "--no-filter", "--json", "-", dir.file("in")});
  REQUIRE(r.exit_code == 0);
  summary = nlohmann::json::parse(r.out);
  for (const auto& file : summary["files"]) CHECK(file["variant"].is_null());
}

TEST_CASE("cli batch: --gpu-threads sets the filter threads per device") {
  TempDir dir;
  write_random_images(dir.path() / "in", 4);
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--filter", "gauss5", "--variant", "opencv", "--gpu-threads",
                             "3", "--json", "-", dir.file("in")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["gpu_threads"] == 3);
  CHECK(summary["totals"]["ok"] == 4);
}

TEST_CASE("cli batch: option errors exit 2 (or 5 for a GPU variant without a GPU) before any work") {
  TempDir dir;
  write_random_images(dir.path() / "in", 1);
  const std::string in = dir.file("in/img00.png");
  const std::string out = dir.file("out");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--out-dir", out, "--filter", "gauss5", in, "--shard", "3/3"},
           {"--out-dir", out, "--filter", "gauss5", in, "--devices", "0,x"},
           {"--out-dir", out, "--filter", "gauss5", in, "--devices", "1,1"},
           {"--out-dir", out, "--filter", "gauss5", in, "--jobs", "0"},
           {"--out-dir", out, "--filter", "gauss5", in, "--gpu-threads", "0"},
           {"--out-dir", out, "--filter", "gauss5", in, "--compare"},
           {"--out-dir", out, "--filter", "gauss5"},
           {"--out-dir", out, in},
           {in, dir.file("single.png"), "--filter", "gauss5", "--recursive"},
           {in, dir.file("single.png"), "--filter", "gauss5", "--shard", "0/2"}}) {
    const auto r = run_cuconv(args);
    INFO(args[args.size() - 2], " ", args.back(), ": ", r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::usage));
  }
  CHECK((!fs::exists(out) || fs::is_empty(out)));
  CHECK_FALSE(fs::exists(dir.file("single.png")));
  if (!cuda_device_available()) {
    // The device check runs beside the first decodes; its error still stops the batch before any
    // output, and leaves no JSON summary.
    write_random_images(dir.path() / "many", 6);
    const std::string json = dir.file("summary.json");
    const auto r = run_cuconv({"--out-dir", out, "--filter", "gauss5", "--variant", "constmem", "--json", json,
                               dir.file("many")});
    INFO(r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::gpu));
    CHECK(r.err.find("needs a CUDA device") != std::string::npos);
    CHECK((!fs::exists(out) || fs::is_empty(out)));
    CHECK_FALSE(fs::exists(json));
  }
}

TEST_CASE("cli batch: outputs get 0666 less the umask, --no-filter copies pixels") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 2);
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--no-filter", dir.file("in")}, "", "umask 002");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& [name, image] : images) {
    CHECK((fs::status(dir.file("out/" + name)).permissions() & fs::perms::all) == static_cast<fs::perms>(0664));  // not mkstemp's 0600
    CHECK(bit_equal(cv::imread(dir.file("out/" + name), cv::IMREAD_UNCHANGED), image));
  }
}

TEST_CASE("cli batch: a run killed with SIGKILL leaves only complete images (and marked temporaries)") {
  TempDir dir;
  constexpr int kImages = 40;
  const auto images = write_random_images(dir.path() / "in", kImages, 256);
  const std::string out = dir.file("out");
  const std::vector<std::string> args{"--out-dir", out, "--filter", "box:9", "--variant", "opencv", "--jobs", "2",
                                      dir.file("in")};

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

// ---- the bad-input matrix of batch mode: refused before any work --------------------------------

namespace {

/// Every file under `root`, with its bytes: what a refused run must leave exactly as it was.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file()) files.emplace(entry.path().string(), cuconv::test::read_file(entry.path()));
  return files;
}

struct RefusedCase {
  std::string what;
  std::vector<std::string> args;
  ExitCode code;
  std::vector<std::string> message;  ///< all of these in stderr: the file and the problem
};

}  // namespace

TEST_CASE("bad input matrix (batch): missing inputs and outputs without a format are refused before any work") {
  TempDir dir;
  write_random_images(dir.path() / "in", 2);
  fs::copy_file(dir.file("in/img00.png"), dir.file("in/raw"));    // an image without an extension
  fs::copy_file(dir.file("in/img00.png"), dir.file("in/old.gif"));  // an extension cuconv does not write
  std::ofstream(dir.file("list.txt")) << dir.file("in/img01.png") << "\n" << dir.file("in/gone.png") << "\n";
  const std::string out = dir.file("out");
  const std::vector<std::string> opts{"--filter", "gauss5", "--variant", "opencv"};
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), opts.begin(), opts.end());
    return args;
  };
  const std::vector<RefusedCase> cases{
      {"missing folder", with({"--out-dir", out, dir.file("nowhere")}), ExitCode::bad_input,
       {"input '" + dir.file("nowhere") + "' does not exist"}},
      {"missing file beside a good one", with({"--out-dir", out, dir.file("in/img00.png"), dir.file("in/nope.png")}),
       ExitCode::bad_input, {"input '" + dir.file("in/nope.png") + "' does not exist"}},
      {"missing file in a --from list", with({"--out-dir", out, "--from", dir.file("list.txt")}), ExitCode::bad_input,
       {"input '" + dir.file("in/gone.png") + "'", "list.txt", "does not exist"}},
      {"input without an extension", with({"--out-dir", out, dir.file("in/raw")}), ExitCode::output,
       {dir.file("out/raw"), "no extension", "--name"}},
      {"input whose format cuconv does not write", with({"--out-dir", out, dir.file("in/img00.png"), dir.file("in/old.gif")}),
       ExitCode::output, {dir.file("out/old.gif"), "cannot write '.gif'"}},
      {"single image: output without an extension", with({dir.file("in/img00.png"), dir.file("result")}),
       ExitCode::output, {dir.file("result"), "no extension"}},
  };
  const auto before = snapshot(dir.path());
  for (const RefusedCase& c : cases) {
    const auto r = run_cuconv(c.args);
    INFO(c.what, ": ", r.err);
    CHECK(r.exit_code == static_cast<int>(c.code));
    for (const std::string& needle : c.message) CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.err.find("cannot write ''") == std::string::npos);
    CHECK_FALSE(fs::exists(out));  // nothing created, not even the output folder
    CHECK(snapshot(dir.path()) == before);  // inputs unchanged, no output, no temporary file
    fs::remove_all(out);  // keep one case's failure out of the next
  }
  // The format named with --name makes the extensionless input work.
  const auto r = run_cuconv(with({"--out-dir", out, "--name", "%s.png", dir.file("in/raw")}));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(file_names(out) == std::set<std::string>{"raw.png"});
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
  for (const auto& [out, message] : folders) {
    const std::string json = dir.file("summary.json");
    const auto r = run_cuconv({"--out-dir", out, dir.file("in"), "--filter", "gauss5", "--variant", "opencv", "--json",
                               json, "-v"});
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
  const auto ok = run_cuconv({"--out-dir", dir.file("out"), dir.file("in"), "--filter", "gauss5", "--variant", "opencv"});
  CHECK(ok.exit_code == 0);
  CHECK(file_names(dir.file("out")).size() == 6);
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
