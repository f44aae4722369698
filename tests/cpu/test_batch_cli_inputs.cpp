// SPDX-License-Identifier: Apache-2.0
// `cuconv --out-dir` end to end, the inputs side: output names, --from lists, folders, shards, and
// the option and input errors refused before any work.
#include "batch_support.hpp"
#include "test_support.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/error.hpp>

#include <doctest/doctest.h>
#include <opencv2/imgcodecs.hpp>

#include <sys/stat.h>
#include <fstream>
#include <map>
#include <set>

using namespace cuconv;
using cuconv::test::bit_equal;
using cuconv::test::file_names;
using cuconv::test::gauss5;
using cuconv::test::read_json;
using cuconv::test::run_cuconv;
using cuconv::test::shell_quote;
using cuconv::test::TempDir;
using cuconv::test::write_random_images;
namespace fs = std::filesystem;

TEST_CASE("cli batch: default names keep the file, --name sets name and format") {
  TempDir dir;
  const auto images = write_random_images(dir.path() / "in", 3);
  const std::string in = dir.file("in");
  auto r = run_cuconv({"--out-dir", dir.file("same"), "--filter", "gauss5", "--variant", "opencv", in});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const auto& [name, image] : images)
    CHECK(bit_equal(cv::imread(dir.file("same/" + name), cv::IMREAD_UNCHANGED), gauss5(image)));

  r = run_cuconv(
      {"--out-dir", dir.file("tif"), "--name", "%s_out.tif", "--filter", "gauss5", "--variant", "opencv", in});
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
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--name", "result.tif"}, std::vector<std::string>{"--name", "%s_%d.png"},
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
  auto r = run_cuconv(
      {"--out-dir", dir.file("a"), "--from", dir.file("list.txt"), "--filter", "gauss5", "--variant", "opencv"});
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
  r = run_cuconv(
      {"--out-dir", dir.file("deep"), "--recursive", "--filter", "gauss5", "--variant", "opencv", dir.file("in")});
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
  for (std::size_t i = 0; i < shard1["files"].size(); ++i)
    CHECK(slurm["files"][i]["input"] == shard1["files"][i]["input"]);
}

TEST_CASE("cli batch: option errors exit 2 (or 5 for a GPU variant without a GPU) before any work") {
  TempDir dir;
  write_random_images(dir.path() / "in", 1);
  const std::string in = dir.file("in/img00.png");
  const std::string out = dir.file("out");
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--out-dir", out, "--filter", "gauss5", in, "--shard", "3/3"},
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
    const auto r =
        run_cuconv({"--out-dir", out, "--filter", "gauss5", "--variant", "constmem", "--json", json, dir.file("many")});
    INFO(r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::gpu));
    CHECK(r.err.find("needs a CUDA device") != std::string::npos);
    CHECK((!fs::exists(out) || fs::is_empty(out)));
    CHECK_FALSE(fs::exists(json));
  }
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
  fs::copy_file(dir.file("in/img00.png"), dir.file("in/raw"));      // an image without an extension
  fs::copy_file(dir.file("in/img00.png"), dir.file("in/old.gif"));  // an extension cuconv does not write
  std::ofstream(dir.file("list.txt")) << dir.file("in/img01.png") << "\n" << dir.file("in/gone.png") << "\n";
  const std::string out = dir.file("out");
  const std::vector<std::string> opts{"--filter", "gauss5", "--variant", "opencv"};
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), opts.begin(), opts.end());
    return args;
  };
  const std::vector<RefusedCase> cases{
      {"missing folder",
       with({"--out-dir", out, dir.file("nowhere")}),
       ExitCode::bad_input,
       {"input '" + dir.file("nowhere") + "' does not exist"}},
      {"missing file beside a good one",
       with({"--out-dir", out, dir.file("in/img00.png"), dir.file("in/nope.png")}),
       ExitCode::bad_input,
       {"input '" + dir.file("in/nope.png") + "' does not exist"}},
      {"missing file in a --from list",
       with({"--out-dir", out, "--from", dir.file("list.txt")}),
       ExitCode::bad_input,
       {"input '" + dir.file("in/gone.png") + "'", "list.txt", "does not exist"}},
      {"input without an extension",
       with({"--out-dir", out, dir.file("in/raw")}),
       ExitCode::output,
       {dir.file("out/raw"), "no extension", "--name"}},
      {"input whose format cuconv does not write",
       with({"--out-dir", out, dir.file("in/img00.png"), dir.file("in/old.gif")}),
       ExitCode::output,
       {dir.file("out/old.gif"), "cannot write '.gif'"}},
      {"single image: output without an extension",
       with({dir.file("in/img00.png"), dir.file("result")}),
       ExitCode::output,
       {dir.file("result"), "no extension"}},
  };
  const auto before = snapshot(dir.path());
  for (const RefusedCase& c : cases) {
    const auto r = run_cuconv(c.args);
    INFO(c.what, ": ", r.err);
    CHECK(r.exit_code == static_cast<int>(c.code));
    for (const std::string& needle : c.message) CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.err.find("cannot write ''") == std::string::npos);
    CHECK_FALSE(fs::exists(out));           // nothing created, not even the output folder
    CHECK(snapshot(dir.path()) == before);  // inputs unchanged, no output, no temporary file
    fs::remove_all(out);                    // keep one case's failure out of the next
  }
  // The format named with --name makes the extensionless input work.
  const auto r = run_cuconv(with({"--out-dir", out, "--name", "%s.png", dir.file("in/raw")}));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(file_names(out) == std::set<std::string>{"raw.png"});
}
