// SPDX-License-Identifier: Apache-2.0
// The adversarial pass of issue 48, injected faults: names that are not UTF-8 in the JSON summary,
// a TMPDIR naming no folder, running out of memory (address-space limits), writes beyond ulimit -f,
// and signals while standard input is copied, each answered with a documented code and no litter.
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

/// Runs `child` in a forked process (for faults that end or limit a process: resource limits,
/// signals) and returns its wait status. The child reports through its exit code only.
int in_child(const std::function<int()>& child) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 99;
    try {
      code = child();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// GCC says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif
#else
constexpr bool kUnderAsan = false;
#endif

/// The process's mapped address space now, in bytes (/proc/self/statm's first field).
std::uint64_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

// ---- 6. internal errors instead of answers -------------------------------------------------------

TEST_CASE("adversarial: file names that are not UTF-8 survive the JSON summary as escaped bytes") {
  const std::string name = "photos/caf\xE9-\xFF.png";  // Latin-1 bytes, as an old file system holds them
  const nlohmann::json summary = {{"files", {{{"input", name}, {"output", "out/" + name}}}}, {name, 1}};
  CHECK_THROWS(summary.dump(2));  // the defect: nlohmann refuses (type_error 316)
  const std::string text = cuconv::cli::json_dump(summary, 2);
  const nlohmann::json back = nlohmann::json::parse(text);
  CHECK(back["files"][0]["input"] == "photos/caf\\xE9-\\xFF.png");
  CHECK(back.contains("photos/caf\\xE9-\\xFF.png"));
  // Valid UTF-8, however exotic, is kept as it is; every malformed sequence is escaped.
  CHECK(cuconv::cli::json_safe("caf\xC3\xA9 \xF0\x9F\x93\xB7") == "caf\xC3\xA9 \xF0\x9F\x93\xB7");
  CHECK(cuconv::cli::json_safe("\xC0\xAF") == "\\xC0\\xAF");                    // overlong '/'
  CHECK(cuconv::cli::json_safe("\xED\xA0\x80") == "\\xED\\xA0\\x80");           // a surrogate
  CHECK(cuconv::cli::json_safe("\xF4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
  CHECK(cuconv::cli::json_safe("end\xE2\x82") == "end\\xE2\\x82");              // cut short

  // End to end: a batch over a Latin-1 name writes its image and a JSON summary that parses.
  TempDir dir;
  fs::create_directories(dir.path() / "in");
  REQUIRE(cv::imwrite(dir.file("in/caf\xE9.png"), cuconv::test::random_image(8, 8, CV_8U, 3, 12)));
  const auto r = run_cuconv({"--out-dir", dir.file("out"), "-f", "box:3", "--variant", "opencv", "--json",
                             dir.file("summary.json"), dir.file("in")});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir.file("out/caf\xE9.png")));
  const nlohmann::json written = nlohmann::json::parse(read_file(dir.file("summary.json")));
  CHECK(written["files"][0]["input"] == dir.file("in/caf") + "\\xE9.png");
  CHECK(written["files"][0]["status"] == "ok");
}

TEST_CASE("adversarial: TMPDIR naming no folder is an answer naming TMPDIR, not an internal error") {
  TempDir dir;
  const char* saved = std::getenv("TMPDIR");
  const std::string restore = saved != nullptr ? saved : "";
  ::setenv("TMPDIR", dir.file("missing").c_str(), 1);
  CHECK_THROWS_AS((void)fs::temp_directory_path(), fs::filesystem_error);  // the defect's cause
  const auto [kind, message] = error_of([] { (void)cuconv::cli::temp_folder(); });
  ::setenv("TMPDIR", dir.path().c_str(), 1);
  const fs::path good = cuconv::cli::temp_folder();
  if (saved != nullptr)
    ::setenv("TMPDIR", restore.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  CHECK(kind == ErrorKind::bad_input);
  CHECK(message.find("TMPDIR") != std::string::npos);
  CHECK(message.find(dir.file("missing")) != std::string::npos);
  CHECK(good == dir.path());

  // End to end: standard input with TMPDIR naming no folder is exit 3 naming TMPDIR, nothing written.
  write_bytes(dir.file("in.png"), read_file(cuconv::test::sample("camera_crop_40x48.png")));
  const auto r = run_cuconv({"-", dir.file("out.png"), "-f", "box:3", "--variant", "opencv"}, dir.file("in.png"),
                            "export TMPDIR=" + cuconv::test::shell_quote(dir.file("missing")));
  INFO(r.err);
  CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(r.err.find("TMPDIR='" + dir.file("missing") + "'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("out.png")));
}

TEST_CASE("adversarial: out of memory while decoding or filtering names the file, with a documented code") {
  if (kUnderAsan) {
    MESSAGE("AddressSanitizer build: an address-space limit cannot be set under it; skipped");
    return;
  }
  TempDir dir;
  constexpr int kSide = 8192;  // 64 MiB of gray pixels, a PNG of a few hundred KiB
  write_bytes(dir.file("big.png"), big_gray_png(kSide));
  // The child limits its address space to what it maps now plus less than the decoded image.
  const int status = in_child([&] {
    const rlimit limit{address_space_bytes() + (48u << 20), RLIM_INFINITY};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) return 90;
    try {
      (void)cuconv::read_image(dir.file("big.png"));
      return 91;  // decoded within the limit: the test proves nothing
    } catch (const Error& e) {
      const std::string message = e.what();
      if (e.kind() != ErrorKind::bad_input) return 92;
      if (message.find(dir.file("big.png")) == std::string::npos) return 93;
      if (message.find("not enough memory") == std::string::npos) return 94;
      return 0;
    }
  });
  CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), describe_status(status));

  // Filtering on the CPU: decoded within the limit, the filter's output is not.
  const cv::Mat image(4096, 4096, CV_8UC3, cv::Scalar(1, 2, 3));
  const int filter_status = in_child([&] {
    const rlimit limit{address_space_bytes() + (24u << 20), RLIM_INFINITY};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) return 90;
    cuconv::ConvolveOptions options;
    options.variant = cuconv::Variant::opencv;
    try {
      (void)cuconv::convolve(image, cuconv::load_filter("box:3"), options);
      return 91;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::bad_input) return 92;
      if (std::string(e.what()).find("not enough memory to filter a 4096x4096 image") == std::string::npos) return 94;
      return 0;
    }
  });
  CHECK_MESSAGE((WIFEXITED(filter_status) && WEXITSTATUS(filter_status) == 0), describe_status(filter_status));

  // End to end under `ulimit -v` (cuconv itself starts within a few hundred MB): a 16384x16384
  // image does not fit beside it, in either mode; exit 3 naming the file, nothing written. In this
  // process (--server never): the limit is the caller's own, not a server's. A batch whose threads'
  // stacks do not all fit runs with those that do (it was an internal error, exit 1).
  write_bytes(dir.file("huge.png"), big_gray_png(16384));
  const std::string cap = "ulimit -v 600000";
  for (const bool batch : {false, true}) {
    CAPTURE(batch);
    const std::vector<std::string> args =
        batch ? std::vector<std::string>{"--out-dir", dir.file("outs"), dir.file("huge.png"), "-f",    "box:3",
                                         "--variant", "opencv",         "--server",           "never", "--jobs",
                                         "64"}  // more stacks than fit
              : std::vector<std::string>{dir.file("huge.png"),
                                         dir.file("huge-out.png"),
                                         "-f",
                                         "box:3",
                                         "--variant",
                                         "opencv",
                                         "--server",
                                         "never"};
    const auto r = run_cuconv(args, "", cap);
    INFO(r.err);
    CHECK(r.exit_code == static_cast<int>(ExitCode::bad_input));
    CHECK(r.err.find("cuconv: error: " + dir.file("huge.png") + ": not enough memory to ") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.file("huge-out.png")));
    if (batch) CHECK(cuconv::test::file_names(dir.path() / "outs").empty());
  }
}

// ---- 7. litter after faults ----------------------------------------------------------------------

TEST_CASE("adversarial: a write beyond the file size limit is a write error (exit 4), with no temporary file") {
  TempDir dir;
  const cv::Mat noise = cuconv::test::random_image(256, 256, CV_8U, 3, 7);  // ~200 KB as PNG
  const auto attempt = [&](bool ignore_signal) {
    return in_child([&] {
      if (ignore_signal) cuconv::cli::ignore_file_size_signal();
      const rlimit limit{rlim_t{50} * 1024, RLIM_INFINITY};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 90;
      try {
        cuconv::write_image_atomic(dir.file("out.png"), noise);
        return 91;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::output) return 92;
        if (std::string(e.what()).find("File too large") == std::string::npos) return 94;
        return static_cast<int>(cuconv::exit_code_for(e.kind()));
      }
    });
  };
  // The defect: with the default disposition the process dies mid-write and leaves its temporary file.
  const int killed = attempt(false);
  CHECK(WIFSIGNALED(killed));
  CHECK(WTERMSIG(killed) == SIGXFSZ);
  for (const auto& entry : fs::directory_iterator(dir.path())) fs::remove(entry.path());
  // ignore_file_size_signal(), as main calls it: the write fails, the temporary file goes.
  const int status = attempt(true);
  CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == static_cast<int>(ExitCode::output)),
                describe_status(status));
  CHECK(cuconv::test::file_names(dir.path()).empty());
}

TEST_CASE(
    "adversarial: cuconv under ulimit -f reports the write error naming the output, in both modes and for standard "
    "input, and leaves nothing") {
  // The shell runs cuconv with the disposition this process has: the default, which kills.
  struct sigaction current {};
  REQUIRE(::sigaction(SIGXFSZ, nullptr, &current) == 0);
  REQUIRE_MESSAGE((current.sa_handler == SIG_DFL), "SIGXFSZ is not at its default disposition in the test runner");
  const std::string limit = "ulimit -f 16";  // 8 or 16 KiB (the shell's block), below the outputs here
  TempDir dir;
  const cv::Mat noise = cuconv::test::random_image(256, 256, CV_8U, 3, 11);  // ~200 KB as PNG
  fs::create_directories(dir.path() / "in");
  REQUIRE(cv::imwrite(dir.file("in/a.png"), noise));
  REQUIRE(cv::imwrite(dir.file("in/b.png"), noise));
  // Served (cuconv serve), the client's limit holds its outputs too (serve/remote_files.cpp).
  const std::string says = "write failed: File too large";
  const std::vector<std::string> filter = {"-f", "box:3", "--variant", "opencv"};
  const auto with_filter = [&](std::vector<std::string> args) {
    args.insert(args.end(), filter.begin(), filter.end());
    return args;
  };

  // Single-image mode: exit 4 naming the output; no output, no temporary file.
  fs::create_directories(dir.path() / "single");
  const auto single = run_cuconv(with_filter({dir.file("in/a.png"), dir.file("single/out.png")}), "", limit);
  INFO(single.err);
  CHECK(single.signal == 0);
  CHECK(single.exit_code == static_cast<int>(ExitCode::output));
  CHECK(single.err.find(dir.file("single/out.png") + ": " + says) != std::string::npos);
  CHECK(cuconv::test::file_names(dir.path() / "single").empty());
  // In this process the message says which limit it met.
  const auto here =
      run_cuconv(with_filter({dir.file("in/a.png"), dir.file("single/here.png"), "--server", "never"}), "", limit);
  CHECK(here.exit_code == static_cast<int>(ExitCode::output));
  CHECK(here.err.find(dir.file("single/here.png") + ": " + says + " (the process's file size limit, ulimit -f)") !=
        std::string::npos);
  CHECK(cuconv::test::file_names(dir.path() / "single").empty());

  // Batch mode: each input fails naming its output (exit 7 for two, 4 for one alone), nothing left.
  const auto batch = run_cuconv(with_filter({"--out-dir", dir.file("batch"), dir.file("in")}), "", limit);
  INFO(batch.err);
  CHECK(batch.signal == 0);
  CHECK(batch.exit_code == static_cast<int>(ExitCode::some_inputs_failed));
  CHECK(batch.err.find(dir.file("batch/a.png") + ": " + says) != std::string::npos);
  CHECK(batch.err.find(dir.file("batch/b.png") + ": " + says) != std::string::npos);
  CHECK(cuconv::test::file_names(dir.path() / "batch").empty());
  const auto alone = run_cuconv(with_filter({"--out-dir", dir.file("alone"), dir.file("in/a.png")}), "", limit);
  CHECK(alone.exit_code == static_cast<int>(ExitCode::output));
  CHECK(cuconv::test::file_names(dir.path() / "alone").empty());

  // Standard input copied to TMPDIR beyond the limit: exit 3 naming standard input, no copy left
  // (in this process: a server copies standard input into a folder of its own).
  fs::create_directories(dir.path() / "tmp");
  const auto piped =
      run_cuconv(with_filter({"-", dir.file("single/piped.png"), "--server", "never"}), dir.file("in/a.png"),
                 limit + "\nexport TMPDIR=" + cuconv::test::shell_quote(dir.file("tmp")));
  INFO(piped.err);
  CHECK(piped.signal == 0);
  CHECK(piped.exit_code == static_cast<int>(ExitCode::bad_input));
  CHECK(piped.err.find("standard input") != std::string::npos);
  CHECK(piped.err.find("File too large") != std::string::npos);
  CHECK(cuconv::test::file_names(dir.path() / "tmp").empty());
  CHECK(cuconv::test::file_names(dir.path() / "single").empty());
}

TEST_CASE("adversarial: SIGINT or SIGTERM while standard input is copied leaves no temporary copy") {
  for (const int signal : {SIGINT, SIGTERM}) {
    CAPTURE(signal);
    TempDir dir;
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(pipe_fds[1]);
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      try {
        const cuconv::cli::StdinCopy copy(pipe_fds[0], dir.path());
      } catch (...) {
        ::_exit(98);
      }
      ::_exit(97);  // the copy ended: the writer closed the pipe, which this test never does
    }
    ::close(pipe_fds[0]);
    REQUIRE(::write(pipe_fds[1], "\x89PNG\r\n\x1a\n partial", 16) == 16);
    // Wait for the copy to exist (an anonymous file the child holds open in `dir`, blocking to
    // read the rest), then interrupt it.
    const auto copy_open = [&] {
      std::error_code ec;
      for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
        if (fs::read_symlink(fd.path(), ec).string().starts_with(dir.path().string() + "/")) return true;
      return false;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!copy_open() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(copy_open());
    REQUIRE(::kill(pid, signal) == 0);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::close(pipe_fds[1]);
    CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 128 + signal), describe_status(status));
    CHECK(cuconv::test::file_names(dir.path()).empty());
  }

  // Uninterrupted, the copy holds every byte and goes when the object does.
  TempDir dir;
  write_bytes(dir.file("input"), std::string(200000, 'x'));
  const int fd = ::open(dir.file("input").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  std::string copied_path;
  {
    const cuconv::cli::StdinCopy copy(fd, dir.path());
    copied_path = copy.path();
    CHECK(read_file(copy.path()) == std::string(200000, 'x'));
  }
  ::close(fd);
  CHECK_FALSE(fs::exists(copied_path));
  // A missing folder: Error{bad_input} naming it, nothing made.
  const auto [kind, message] = error_of([&] { const cuconv::cli::StdinCopy copy(0, dir.path() / "missing"); });
  CHECK(kind == ErrorKind::bad_input);
  CHECK(message.find("missing") != std::string::npos);
}
