// SPDX-License-Identifier: Apache-2.0
// The adversarial pass of issue 48, crafted inputs and hostile names: outputs that are other
// inputs, a NUL in a --from line, 2 or 5 channels, a damaged ICC profile, filters that are not
// finite, names up to NAME_MAX, hostile --name values, '-' names and link loops; the same crafted
// bytes seed the image fuzzers from tests/fuzz/corpus_images/ (the last case keeps it in step).
#include "adversarial_files.hpp"
#include "adversarial_support.hpp"
#include "test_support.hpp"

#include "cli/command_line.hpp"
#include "cli/interrupt.hpp"
#include "cli/json_text.hpp"
#include "cli/stdin_copy.hpp"
#include "cli/temp_folder.hpp"
#include "engine/batch_plan.hpp"

#include <cuconv/error.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace cuconv;
using namespace cuconv::test;
using namespace cuconv::test::adversarial;
using namespace cuconv::test::crafted;
namespace fs = std::filesystem;

namespace {

/// The test folder's entries and sizes: equal snapshots mean nothing was added, removed or resized.
std::map<std::string, std::uintmax_t> sizes_below(const fs::path& root) {
  std::map<std::string, std::uintmax_t> sizes;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    std::error_code ec;
    sizes[entry.path().string()] = entry.is_regular_file(ec) ? entry.file_size(ec) : 0;
  }
  return sizes;
}

}  // namespace

// ---- 1. an input destroyed: outputs that are other inputs of the batch ----------------------------

TEST_CASE("adversarial: a batch output that is another input is refused before any work, with or without --overwrite") {
  TempDir dir;
  const fs::path in = dir.path() / "in";
  fs::create_directories(in);
  REQUIRE(cv::imwrite((in / "a.png").string(), cuconv::test::random_image(16, 16, CV_8U, 3, 1)));
  REQUIRE(cv::imwrite((in / "a_b.png").string(), cuconv::test::random_image(16, 16, CV_8U, 3, 2)));
  const std::string a_b = read_file(in / "a_b.png");

  // The plan itself: a.png's output is a_b.png, another input.
  const auto [kind, message] = error_of([&] {
    (void)cuconv::engine::plan_outputs({(in / "a.png").string(), (in / "a_b.png").string()}, in.string(), "%s_b");
  });
  CHECK(kind == ErrorKind::usage);
  CHECK(message.find((in / "a_b.png").string()) != std::string::npos);
  CHECK(message.find("is the input") != std::string::npos);
  // Spelled differently (./, ..): the same path.
  CHECK(error_of([&] {
          (void)cuconv::engine::plan_outputs({(in / "a.png").string(), (in / "x" / ".." / "a_b.png").string()},
                                             (in / ".").string(), "%s_b");
        }).first == ErrorKind::usage);
  // Through a symbolic link and a hard link to another input: the same file.
  fs::create_directories(dir.path() / "out");
  fs::create_symlink(in / "a_b.png", dir.path() / "out" / "c.png");
  REQUIRE(cv::imwrite((in / "c.png").string(), cuconv::test::random_image(8, 8, CV_8U, 3, 3)));
  CHECK(error_of([&] {
          (void)cuconv::engine::plan_outputs({(in / "a_b.png").string(), (in / "c.png").string()},
                                             (dir.path() / "out").string(), "%s");
        }).first == ErrorKind::usage);
  fs::remove(dir.path() / "out" / "c.png");
  fs::create_hard_link(in / "a_b.png", dir.path() / "out" / "c.png");
  CHECK(error_of([&] {
          (void)cuconv::engine::plan_outputs({(in / "a_b.png").string(), (in / "c.png").string()},
                                             (dir.path() / "out").string(), "%s");
        }).first == ErrorKind::usage);
  fs::remove(dir.path() / "out" / "c.png");
  fs::remove(in / "c.png");
  // Apart from the inputs: planned as before.
  CHECK(cuconv::engine::plan_outputs({(in / "a.png").string(), (in / "a_b.png").string()},
                                     (dir.path() / "out").string(), "%s_b")
            .size() == 2);

  // End to end: exit 2, nothing written, the other input intact.
  for (const bool overwrite : {true, false}) {
    CAPTURE(overwrite);
    std::vector<std::string> args{"--out-dir", in.string(), "--name", "%s_b", "-f", "box:3", "--variant", "opencv"};
    if (overwrite) args.emplace_back("--overwrite");
    args.push_back(in.string());
    const auto before = sizes_below(in);
    const auto r = run_cuconv(args);
    INFO(r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::usage));
    CHECK(r.err.find("a_b.png") != std::string::npos);
    CHECK(sizes_below(in) == before);
    CHECK(read_file(in / "a_b.png") == a_b);
  }
}

// ---- 2. wrong pixels under a right name: NUL in a --from line -----------------------------------

TEST_CASE("adversarial: a --from line holding a NUL byte is refused naming the line") {
  std::istringstream list(std::string("d/zero.png\nd/one.png\0d/two.png\n", 31));
  const auto [kind, message] = error_of([&] { (void)cuconv::engine::read_path_list(list, "paths.txt"); });
  CHECK(kind == ErrorKind::bad_input);
  CHECK(message.find("paths.txt") != std::string::npos);
  CHECK(message.find("line 2") != std::string::npos);
  CHECK(message.find("NUL") != std::string::npos);

  // End to end: the batch stops before any image is read or written.
  TempDir dir;
  fs::create_directories(dir.path() / "d");
  REQUIRE(cv::imwrite(dir.file("d/one.png"), cuconv::test::random_image(8, 8, CV_8U, 3, 4)));
  REQUIRE(cv::imwrite(dir.file("d/two.png"), cuconv::test::random_image(8, 8, CV_8U, 3, 5)));
  write_bytes(dir.file("list.txt"), dir.file("d/one.png") + std::string(1, '\0') + dir.file("d/two.png") + "\n");
  const auto r =
      run_cuconv({"--out-dir", dir.file("out"), "-f", "box:3", "--variant", "opencv", "--from", dir.file("list.txt")});
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.err.find("line 1") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("out/two.png")));
}

// ---- 3. a channel silently dropped: sample counts other than 1, 3, 4 ----------------------------

TEST_CASE("adversarial: images of 2 or 5 channels are refused on reading, whatever the decoder would keep") {
  TempDir dir;
  const auto seeds = adversarial_seeds();
  struct Row {
    const char* file;
    int channels;  ///< 0: refused
  };
  for (const Row& row : {Row{"tiff-gray-extra-2-channels.tif", 0}, Row{"tiff-rgba-extra-5-channels.tif", 0},
                         Row{"tiff-gray-1-channel.tif", 1}}) {
    CAPTURE(row.file);
    write_bytes(dir.file(row.file), seeds.at(row.file));
    if (row.channels == 0) {
      const auto [kind, message] = error_of([&] { (void)cuconv::read_image(dir.file(row.file)); });
      CHECK(kind == ErrorKind::bad_input);
      CHECK(message.find(dir.file(row.file)) != std::string::npos);
      CHECK(message.find("unsupported channel count") != std::string::npos);
    } else {
      CHECK(cuconv::read_image(dir.file(row.file)).channels() == row.channels);  // the crafting is sound
    }
  }
  const auto r = run_cuconv({dir.file("tiff-gray-extra-2-channels.tif"), dir.file("out.tif"), "-f", "box:3"});
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK_FALSE(fs::exists(dir.file("out.tif")));
}

// ---- 4. metadata silently dropped: blocks judged one by one --------------------------------------

TEST_CASE("adversarial: a damaged ICC profile is dropped with a warning, the EXIF beside it kept") {
  TempDir dir;
  write_bytes(dir.file("in.jpg"), adversarial_seeds().at("jpeg-good-exif-bad-icc.jpg"));
  const cuconv::ImageMetadata metadata = cuconv::read_metadata(dir.file("in.jpg"));
  CHECK(cuconv::exif_orientation(metadata) == 6);
  CHECK(metadata.icc.empty());
  REQUIRE(metadata.warnings.size() == 1);
  CHECK(metadata.warnings.front().find("ICC profile dropped") != std::string::npos);

  // A sound file gives no warnings.
  REQUIRE(cv::imwrite(dir.file("plain.jpg"), cuconv::test::random_image(8, 8, CV_8U, 3, 6)));
  CHECK(cuconv::read_metadata(dir.file("plain.jpg")).warnings.empty());

  // End to end: the output keeps the Orientation.
  const auto r =
      run_cuconv({dir.file("in.jpg"), dir.file("out.jpg"), "-f", "box:3", "--variant", "opencv", "--codec", "opencv"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(cuconv::exif_orientation(cuconv::read_metadata(dir.file("out.jpg"))) == 6);
  const std::string warned = "cuconv: warning: " + dir.file("in.jpg") + ": ICC profile dropped: not a valid profile";
  CHECK(r.err.find(warned) != std::string::npos);
  // Batch mode: the same line, the input named once.
  const auto b = run_cuconv({"--out-dir", dir.file("batch"), dir.file("in.jpg"), "-f", "box:3", "--variant", "opencv"});
  INFO(b.err);
  REQUIRE(b.exit_code == 0);
  CHECK(b.err.find(warned) != std::string::npos);
  CHECK(cuconv::exif_orientation(cuconv::read_metadata(dir.file("batch/in.jpg"))) == 6);
}

// ---- 5. infinite weights: finite after the division, in float ------------------------------------

TEST_CASE("adversarial: filters whose weights or offset are not finite floats are refused") {
  TempDir dir;
  const auto seeds = adversarial_seeds();
  struct Row {
    const char* file;
    const char* says;
  };
  for (const Row& row :
       {Row{"scale-1e-320.mat", "divided by the scale"}, Row{"scale-1e-40.mat", "divided by the scale 1e-40"},
        Row{"offset-1e39.mat", "offset 1e+39"}, Row{"weight-1e39.txt", "weight 1e+39"}}) {
    CAPTURE(row.file);
    write_bytes(dir.file(row.file), seeds.at(row.file));
    const auto [kind, message] = error_of([&] { (void)cuconv::load_filter(dir.file(row.file)); });
    CHECK(kind == ErrorKind::bad_input);
    CHECK(message.find(dir.file(row.file)) != std::string::npos);
    CHECK(message.find(row.says) != std::string::npos);
    CHECK(message.find("not a finite float") != std::string::npos);
  }
  CHECK(error_of([] { (void)cuconv::load_filter("3x1:1,1e39,1"); }).first == ErrorKind::bad_input);
  CHECK(cuconv::load_filter("3x1:1,3e38,1").weights[1] == 3e38);  // within float: kept
  const auto r = run_cuconv({"--show-filter", dir.file("scale-1e-320.mat")});
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.out.find("inf") == std::string::npos);
}

// ---- 8. names --------------------------------------------------------------------------------------

TEST_CASE("adversarial: output names up to NAME_MAX get a temporary name that fits, never an output's") {
  TempDir dir;
  const cv::Mat image = cuconv::test::random_image(8, 8, CV_8U, 3, 8);
  for (const std::size_t length : {std::size_t{236}, std::size_t{237}, std::size_t{250}, std::size_t{255}}) {
    CAPTURE(length);
    const std::string name = std::string(length - 4, 'n') + ".png";
    const std::string temp = cuconv::temp_file_name(name);
    CHECK(temp.size() <= 255);
    CHECK(temp.starts_with(cuconv::kTempFilePrefix));
    CHECK(temp.ends_with("XXXXXX"));
    cuconv::write_image_atomic(dir.file(name), image);
    CHECK(cuconv::test::bit_equal(cv::imread(dir.file(name), cv::IMREAD_UNCHANGED), image));
    CHECK(cuconv::test::file_names(dir.path()) == std::set<std::string>{name});
    fs::remove(dir.file(name));
  }
  // A long name of multi-byte characters is cut between characters, not inside one.
  std::string accented = "x";  // then 2-byte characters, so the cut falls inside one
  while (accented.size() < 250) accented += "\xC3\xA9";
  const std::string temp = cuconv::temp_file_name(accented + ".png");
  CHECK(temp.size() <= 255);
  CHECK(cuconv::cli::json_safe(temp) == temp);  // still valid UTF-8
  // End to end, single-image mode: a 255-byte output name is written.
  const std::string longest = dir.file(std::string(251, 'o') + ".png");
  REQUIRE(cv::imwrite(dir.file("in.png"), image));
  const auto r = run_cuconv({dir.file("in.png"), longest, "-f", "box:3", "--variant", "opencv"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(longest));
  // No output may look like a temporary file: later runs would skip it and clean-ups delete it.
  CHECK(error_of([] { cuconv::engine::check_name_template(".cuconv-tmp-%s", 2); }).first == ErrorKind::usage);
  CHECK(error_of([] { (void)cuconv::engine::plan_outputs({"in/.cuconv-tmp-x.png"}, "out", "%s"); }).first ==
        ErrorKind::usage);
  CHECK(cuconv::is_temp_file_name("out/.cuconv-tmp-x.png"));
  CHECK(cuconv::is_temp_file_name(".cuconv-tmp-x.png"));
  CHECK_FALSE(cuconv::is_temp_file_name(".cuconv-tmp-dir/x.png"));  // the file's own name counts
  CHECK_FALSE(cuconv::is_temp_file_name("x.cuconv-tmp-.png"));
  // Single-image mode too: exit 2 naming the output, before anything is read or written.
  fs::create_directories(dir.path() / "named");
  const std::string temp_like = dir.file("named/.cuconv-tmp-out.png");
  const auto refused = run_cuconv({dir.file("in.png"), temp_like, "-f", "box:3", "--variant", "opencv"});
  INFO(refused.err);
  CHECK(refused.exit_code == static_cast<int>(ExitCode::usage));
  CHECK(refused.err.find(temp_like + ": names starting with '.cuconv-tmp-' mark unfinished files") !=
        std::string::npos);
  CHECK(cuconv::test::file_names(dir.path() / "named").empty());
}

TEST_CASE("adversarial: hostile --name values get messages about the name") {
  struct Row {
    const char* name;
    const char* says;
  };
  for (const Row& row :
       {Row{"..", "names a folder"}, Row{".", "names a folder"}, Row{".cuconv-tmp-%s", "mark unfinished files"}}) {
    CAPTURE(row.name);
    const auto [kind, message] = error_of([&] { cuconv::engine::check_name_template(row.name, 1); });
    CHECK(kind == ErrorKind::usage);
    CHECK(message.find(row.says) != std::string::npos);
  }
  TempDir dir;
  REQUIRE(cv::imwrite(dir.file("small.png"), cuconv::test::random_image(8, 8, CV_8U, 3, 9)));
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "--name", "..", "-f", "box:3", dir.file("small.png")});
  CHECK(r.exit_code == static_cast<int>(ExitCode::usage));
  CHECK(r.err.find("names a folder") != std::string::npos);
  CHECK(r.err.find("has no extension") == std::string::npos);
}

TEST_CASE("adversarial: -- ends the options, so a file name may start with '-'") {
  std::vector<std::string> args{"cuconv", "-f", "box:3", "--", "-in.png", "out.png"};
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const cuconv::cli::ParsedCommand command =
      cuconv::cli::parse_command_line(static_cast<int>(argv.size()), argv.data());
  CHECK(command.action == cuconv::cli::Action::filter_image);
  CHECK(command.request.input == "-in.png");
  CHECK(command.request.output == "out.png");

  TempDir dir;
  REQUIRE(cv::imwrite(dir.file("-in.png"), cuconv::test::random_image(8, 8, CV_8U, 3, 10)));
  const auto r = run_cuconv({"-f", "box:3", "--variant", "opencv", "--", dir.file("-in.png"), dir.file("out.png")});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir.file("out.png")));
  // Batch mode too.
  const auto b =
      run_cuconv({"--out-dir", dir.file("outs"), "-f", "box:3", "--variant", "opencv", "--", dir.file("-in.png")});
  INFO(b.err);
  CHECK(b.exit_code == 0);
  CHECK(fs::exists(dir.file("outs/-in.png")));
}

TEST_CASE("adversarial: a symbolic link loop is reported as a loop, not as a missing file") {
  TempDir dir;
  fs::create_symlink(dir.file("loop-b.png"), dir.file("loop-a.png"));
  fs::create_symlink(dir.file("loop-a.png"), dir.file("loop-b.png"));
  const auto [kind, message] = error_of([&] { (void)cuconv::read_image(dir.file("loop-a.png")); });
  CHECK(kind == ErrorKind::bad_input);
  CHECK(message.find("symbolic link loop") != std::string::npos);
  CHECK(message.find("no such file") == std::string::npos);
  CHECK(cuconv::engine::why_unreachable(dir.file("loop-a.png")).find("symbolic link loop") != std::string::npos);
  CHECK(cuconv::engine::why_unreachable(dir.file("nothing.png")) == "does not exist");
  CHECK(cuconv::engine::why_unreachable(dir.path().string()).empty());
  const auto r = run_cuconv({dir.file("loop-a.png"), dir.file("out.png"), "-f", "box:3"});
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.err.find("symbolic link loop") != std::string::npos);
}

// ---- the fuzzers' seeds --------------------------------------------------------------------------

TEST_CASE("adversarial: tests/fuzz/corpus_images holds this pass's crafted files") {
  const fs::path corpus = CUCONV_TEST_FUZZ_CORPUS;
  // CUCONV_WRITE_CORPUS=1 rewrites the folder after a change to the crafting above.
  if (const char* write = std::getenv("CUCONV_WRITE_CORPUS"); write != nullptr && std::string(write) == "1") {
    fs::create_directories(corpus);
    for (const auto& [name, bytes] : adversarial_seeds()) write_bytes((corpus / name).string(), bytes);
  }
  for (const auto& [seed_name, bytes] : adversarial_seeds()) {
    const std::string name = seed_name;  // a plain local: clang-tidy 14 cannot see bindings in CAPTURE's lambda
    CAPTURE(name);
    CHECK(read_file(corpus / name) == bytes);
  }
}
