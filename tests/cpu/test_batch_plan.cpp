// SPDX-License-Identifier: Apache-2.0
// Batch planning without running a batch: output names from templates, input lists and folders,
// shards and Slurm array variables.
#include "batch_support.hpp"
#include "test_support.hpp"

#include "engine/batch_plan.hpp"

#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace cuconv;
using namespace cuconv::engine;
using cuconv::test::TempDir;
using cuconv::test::usage_error_of;
namespace fs = std::filesystem;

TEST_CASE("batch plan: output names from templates") {
  CHECK(output_name("%s", "in/camera.png") == "camera.png");             // default: name kept
  CHECK(output_name("%s_out.png", "dir/photo.JPG") == "photo_out.png");  // template picks PNG
  CHECK(output_name("%s_blur", "x/a.b.tif") == "a.b_blur.tif");          // no extension: input's kept
  CHECK(output_name("v1.2_%s", "a.png") == "v1.2_a.png");                // a dot before %s is no extension
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
  for (const char* name :
       {"b.png", "A.JPG", "c.TiFf", "notes.txt", "noext", "sub/d.png", "sub/deeper/e.bmp", "sub/readme.md"})
    std::ofstream(root / name) << "x";
  std::ofstream(root / (std::string(kTempFilePrefix) + "b.png.abc123")) << "partial";
  fs::create_directories(root / "folder.png");  // a directory with an image name is no image

  const std::string r = root.string();
  CHECK(collect_inputs({r}, false) == std::vector<std::string>{r + "/A.JPG", r + "/b.png", r + "/c.TiFf"});
  CHECK(collect_inputs({r}, true) ==
        std::vector<std::string>{r + "/A.JPG", r + "/b.png", r + "/c.TiFf", r + "/sub/d.png", r + "/sub/deeper/e.bmp"});
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
  s = slurm_array_shard(
      env_of({{"SLURM_ARRAY_TASK_ID", "16"}, {"SLURM_ARRAY_TASK_COUNT", "16"}, {"SLURM_ARRAY_TASK_MIN", "1"}}));
  REQUIRE(s);
  CHECK((s->index == 15 && s->count == 16));
  // --array=0-30:10: ids 0, 10, 20, 30.
  s = slurm_array_shard(env_of({{"SLURM_ARRAY_TASK_ID", "20"},
                                {"SLURM_ARRAY_TASK_COUNT", "4"},
                                {"SLURM_ARRAY_TASK_MIN", "0"},
                                {"SLURM_ARRAY_TASK_STEP", "10"}}));
  REQUIRE(s);
  CHECK(s->index == 2);
  // --array=1,5,9 (a list: COUNT 3, MIN 1): id 9 is no shard of 3.
  CHECK(usage_error_of([&] {
          (void)slurm_array_shard(
              env_of({{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "1"}}));
        }) == ExitCode::usage);
}
