// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers shared by the test suites: temporary folders, running the cuconv binary, sample
// paths and random images.
#include <cuconv/compare.hpp>
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>
#include <cuconv/image_io.hpp>

#include <doctest/doctest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace cuconv::test {

namespace fs = std::filesystem;

/// A fresh folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static std::mt19937_64 rng{std::random_device{}()};
    path_ = fs::temp_directory_path() / ("cuconv-test-" + std::to_string(rng()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// Environment variable or a fallback (paths baked in at build time; the bundle overrides them).
inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}
inline std::string cuconv_binary() { return env_or("CUCONV_BIN", CUCONV_TEST_BINARY); }
inline std::string sample(const std::string& name) {
  return env_or("CUCONV_SAMPLES", CUCONV_TEST_SAMPLES) + "/" + name;
}

struct CommandResult {
  int exit_code = -1;  ///< 128 + N when signal N ended the process
  int signal = 0;      ///< the signal that ended the process; 0 when it exited
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A cuconv process started in the background: `/bin/sh -c 'SETUP; exec cuconv ARGS'` with stdout
/// and stderr captured to files (and stdin from a file when given). `exec` makes the shell become
/// cuconv, so a signal sent to pid() reaches cuconv itself. The one way the tests run the binary:
/// run_cuconv() below starts one and waits for it.
class CuconvProcess {
 public:
  /// `shell_setup` runs first in the same shell: resource limits (`ulimit -v 1000000`), `umask`,
  /// `export VAR=value`, a background writer into a FIFO that `stdin_file` names.
  /// Without CUCONV_SERVER in the environment (the suite run by hand, not by ctest) the command
  /// says `never`, so it cannot reach a user's server; `shell_setup` may say otherwise.
  explicit CuconvProcess(const std::vector<std::string>& args, const std::string& stdin_file = "",
                         const std::string& shell_setup = "") {
    std::string cmd = std::getenv("CUCONV_SERVER") == nullptr ? "export CUCONV_SERVER=never\n" : "";
    cmd += (shell_setup.empty() ? "" : shell_setup + "\n") + "exec " + shell_quote(cuconv_binary());
    for (const auto& a : args) cmd += " " + shell_quote(a);
    cmd += " >" + shell_quote(capture_.file("out")) + " 2>" + shell_quote(capture_.file("err"));
    if (!stdin_file.empty()) cmd += " <" + shell_quote(stdin_file);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // The child starts with the default dispositions, whatever the test runner set.
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      // A terminal session of its own: cuconv gives the no-GPU warning once per session
      // (src/cli/warnings.hpp), and each command here is a fresh one, as before that rule.
      ::setsid();
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  CuconvProcess(const CuconvProcess&) = delete;
  CuconvProcess& operator=(const CuconvProcess&) = delete;
  ~CuconvProcess() {
    if (pid_ > 0 && !waited_) {
      ::kill(pid_, SIGKILL);
      (void)wait();
    }
  }

  [[nodiscard]] pid_t pid() const { return pid_; }

  /// Waits for the process; the exit code is 128 + N for a process ended by signal N.
  CommandResult wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    waited_ = true;
    CommandResult r;
    r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + r.signal;
    r.out = read_file(capture_.file("out"));
    r.err = read_file(capture_.file("err"));
    return r;
  }

 private:
  TempDir capture_;
  pid_t pid_ = -1;
  bool waited_ = false;
};

/// Runs the cuconv binary with `args` and waits, capturing stdout, stderr and the exit code
/// (see CuconvProcess for `stdin_file` and `shell_setup`).
inline CommandResult run_cuconv(const std::vector<std::string>& args, const std::string& stdin_file = "",
                                const std::string& shell_setup = "") {
  return CuconvProcess(args, stdin_file, shell_setup).wait();
}

/// OpenCV's border code for `b`, written out here (not taken from src/) so reference sums in the
/// tests do not share the code they check.
/// `result` of filtering `src` with `f` under `o` (border, anchor, delta, depth, alpha) by
/// `result_variant`, against filter2D's reference (OpenCvMethod::reference) under the pass rule of
/// compare_to_reference with the run's options, as --compare judges it (each output by its own
/// footprint; integer values equal to the exact sum count as correct).
inline ComparisonStats compare_with_filter2d(const cv::Mat& result, const cv::Mat& src, const Filter& f,
                                             const ConvolveOptions& o, Variant result_variant = Variant::automatic) {
  ConvolveOptions reference = o;
  reference.variant = Variant::opencv;
  reference.opencv_method = OpenCvMethod::reference;
  reference.gpu_memory_limit = 0;
  const cv::Mat expected = convolve(src, f, reference).image;
  return compare_to_reference(result, expected, src, f, o, result_variant);
}

inline int opencv_border_code(cuconv::Border b) {
  switch (b) {
    case cuconv::Border::reflect101:
      return cv::BORDER_REFLECT_101;
    case cuconv::Border::reflect:
      return cv::BORDER_REFLECT;
    case cuconv::Border::replicate:
      return cv::BORDER_REPLICATE;
    case cuconv::Border::constant:
      return cv::BORDER_CONSTANT;
    case cuconv::Border::wrap:
      return cv::BORDER_WRAP;
  }
  return -1;
}

/// Every border mode, in documentation order.
inline constexpr Border kAllBorders[] = {Border::reflect101, Border::reflect, Border::replicate, Border::constant,
                                         Border::wrap};

/// The options the GPU sweeps vary from case to case (`index`): `border` (a constant one pads
/// with 77 around 8-bit images, 901.25 around others), delta 1.5 on every third case, and on
/// four-channel images alpha kept on every second.
inline cuconv::ConvolveOptions sweep_case_options(cuconv::Border border, int depth, int channels, int index) {
  cuconv::ConvolveOptions o;
  o.border = border;
  o.border_value = border == cuconv::Border::constant ? (depth == CV_8U ? 77 : 901.25) : 0.0;
  o.delta = index % 3 == 0 ? 1.5 : 0.0;
  o.keep_alpha = channels == 4 && index % 2 == 0;
  return o;
}

/// CUCONV_TEST_STRIDE=N: the large GPU sweeps run every N-th case (compute-sanitizer runs).
inline int sweep_stride() {
  const char* s = std::getenv("CUCONV_TEST_STRIDE");
  return s != nullptr && std::atoi(s) > 0 ? std::atoi(s) : 1;
}

/// CUCONV_TEST_VARIANTS=fast,fft: the GPU sweeps cover only these variants (sanitizer runs split
/// the suite into one process per variant so each finishes within the device's time limit).
/// Unset: every GPU variant.
inline std::vector<cuconv::Variant> tested_gpu_variants() {
  const char* s = std::getenv("CUCONV_TEST_VARIANTS");
  if (s == nullptr || *s == '\0') return cuconv::gpu_variants();
  std::vector<cuconv::Variant> chosen;
  const std::string list = std::string(",") + s + ",";
  for (cuconv::Variant v : cuconv::gpu_variants())
    if (list.find("," + std::string(cuconv::to_string(v)) + ",") != std::string::npos) chosen.push_back(v);
  if (chosen.empty()) throw std::runtime_error(std::string("CUCONV_TEST_VARIANTS names no GPU variant: ") + s);
  return chosen;
}

/// The variant `auto` picks for `spec` on the sample image `name` with the current device's
/// tuning row, as convolve() and the CLI pick it: what a test that names auto's choice expects
/// (an H200's row sends gauss5 on small colour images to `tensor` where an H100's keeps `fast`).
inline std::string auto_choice(const std::string& spec, const std::string& name) {
  const cv::Mat image = cv::imread(sample(name), cv::IMREAD_UNCHANGED);
  return std::string(cuconv::to_string(cuconv::choose_variant(cuconv::load_filter(spec), cuconv::ConvolveOptions{},
                                                              true, image.depth(), image.depth(), image.channels(),
                                                              image.cols, image.rows)));
}

/// Whether the sweeps cover `variant` (see tested_gpu_variants).
inline bool variant_tested(cuconv::Variant variant) {
  for (cuconv::Variant v : tested_gpu_variants())
    if (v == variant) return true;
  return false;
}

/// The seed of a test's random choices: CUCONV_TEST_SEED (read by the tests only, never by the
/// product) to replay a run, else a fresh one. Printed either way (doctest MESSAGE), so a failing
/// run's log says how to replay its choices.
inline std::uint32_t test_seed(const char* what) {
  const char* given = std::getenv("CUCONV_TEST_SEED");
  const std::uint32_t seed = given != nullptr && *given != '\0'
                                 ? static_cast<std::uint32_t>(std::strtoul(given, nullptr, 10))
                                 : std::random_device{}();
  MESSAGE(std::string(what) << ": seed " << seed << " (replay with CUCONV_TEST_SEED=" << seed << ")");
  return seed;
}

/// Random image of the given depth: full range for integers, [-100, 100] for float.
inline cv::Mat random_image(int rows, int cols, int depth, int channels, std::uint64_t seed) {
  cv::Mat m(rows, cols, CV_MAKETYPE(depth, channels));
  cv::RNG rng(seed);
  switch (depth) {
    case CV_8U:
      rng.fill(m, cv::RNG::UNIFORM, 0, 256);
      break;
    case CV_16U:
      rng.fill(m, cv::RNG::UNIFORM, 0, 65536);
      break;
    default:
      rng.fill(m, cv::RNG::UNIFORM, -100.0, 100.0);
      break;
  }
  return m;
}

/// Writes `count` random RGB images of about size x size pixels (distinct seeds) named
/// img00.png ... into `dir`; returns them by file name.
inline std::map<std::string, cv::Mat> write_random_images(const fs::path& dir, int count, int size = 48) {
  fs::create_directories(dir);
  std::map<std::string, cv::Mat> images;
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "img%02d.png", i);
    cv::Mat image = random_image(size, size + i % 5, CV_8U, 3, 1000 + static_cast<std::uint64_t>(i));
    if (!cv::imwrite((dir / name).string(), image)) throw std::runtime_error("cannot write " + (dir / name).string());
    images.emplace(name, image);
  }
  return images;
}

/// The names of the entries of `dir`.
inline std::set<std::string> file_names(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

/// Whether `name` is one of write_image_atomic's temporary files.
inline bool is_temp_name(const std::string& name) { return name.starts_with(kTempFilePrefix); }

/// A random dense filter: weights in [-0.3, 1) scaled to sum 1, so outputs stay in the input's
/// range and integer rounding is exercised rather than saturation.
inline cuconv::Filter random_filter(int kw, int kh, std::uint64_t seed) {
  cv::RNG rng(seed);
  cuconv::Filter f;
  f.width = kw;
  f.height = kh;
  f.origin = "random " + std::to_string(kw) + "x" + std::to_string(kh);
  double sum = 0;
  for (int i = 0; i < kw * kh; ++i) {
    f.weights.push_back(rng.uniform(-0.3, 1.0));
    sum += f.weights.back();
  }
  for (double& w : f.weights) w /= sum;
  return f;
}

/// The filter's weights as the CV_64F kh x kw matrix a direct cv::filter2D call takes.
inline cv::Mat kernel_matrix(const cuconv::Filter& f) {
  cv::Mat k(f.height, f.width, CV_64F);
  for (int r = 0; r < f.height; ++r)
    for (int c = 0; c < f.width; ++c) k.at<double>(r, c) = f.at(r, c);
  return k;
}

/// True when both images have the same size, type and bytes, except that in float images a NaN
/// equals any NaN (payloads differ between CPU and GPU) and nothing else. Bytes, not
/// cv::compare: OpenCV 4.6's vectorised CMP_NE reports a NaN equal to any number
/// (tests/cpu/test_pass_rules.cpp shows it), which let a NaN pixel pass every float check here.
inline bool bit_equal(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return false;
  const std::size_t row_bytes = static_cast<std::size_t>(a.cols) * a.elemSize();
  const std::size_t values = static_cast<std::size_t>(a.cols) * static_cast<std::size_t>(a.channels());
  for (int r = 0; r < a.rows; ++r) {
    if (std::memcmp(a.ptr(r), b.ptr(r), row_bytes) == 0) continue;
    if (a.depth() != CV_32F) return false;
    const float* pa = a.ptr<float>(r);
    const float* pb = b.ptr<float>(r);
    for (std::size_t i = 0; i < values; ++i) {
      // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): bit for bit is the point (-0 is not +0)
      const bool same = std::isnan(pa[i]) ? std::isnan(pb[i]) : std::memcmp(&pa[i], &pb[i], sizeof(float)) == 0;
      if (!same) return false;
    }
  }
  return true;
}

/// A `cuconv serve` on a private socket for the life of the object, started in a folder of its
/// own (server-home in `dir`, not the caller's folder; its log: server.log in `dir`); setup() is
/// the shell line that points a command at it.
class Server {
 public:
  explicit Server(const TempDir& dir, const std::string& serve_options = "")
      : socket_(dir.file("socket")), pid_file_(dir.file("server.pid")) {
    fs::create_directories(dir.path() / "server-home");
    // The socket's folder: the server refuses one that group or others may write to (any umask).
    fs::permissions(dir.path(), fs::perms::owner_all);
    const std::string command = "cd " + shell_quote(dir.file("server-home")) +
                                " && CUCONV_SOCKET=" + shell_quote(socket_) + " exec " + shell_quote(cuconv_binary()) +
                                " serve --idle-exit 120 " + serve_options + " >" + shell_quote(dir.file("server.log")) +
                                " 2>&1 & echo $! >" + shell_quote(pid_file_);
    REQUIRE(std::system(command.c_str()) == 0);
    for (int i = 0; i < 100; ++i) {
      if (run_cuconv({"--server", "always", "--version"}, "", setup()).exit_code == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL("cuconv serve did not answer");
  }
  /// Stops the server (SIGTERM, up to 10 s) and checks that its log reports no internal error
  /// and no sanitizer finding.
  ~Server() {
    const std::string pid = read_file(pid_file_);
    if (pid.empty()) return;
    const pid_t server = std::stoi(pid);
    ::kill(server, SIGTERM);
    // Not this process's child: gone, or a zombie where nothing reaps it.
    const auto running = [&] {
      const std::string stat = read_file("/proc/" + std::to_string(server) + "/stat");
      const std::size_t close = stat.rfind(") ");
      return !stat.empty() && close != std::string::npos && stat.compare(close + 2, 1, "Z") != 0;
    };
    for (int i = 0; i < 200 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string log = read_file(fs::path(pid_file_).parent_path() / "server.log");
    for (const char* finding : {"internal error", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"})
      CHECK_MESSAGE(log.find(finding) == std::string::npos, "the server's log says '", finding, "':\n", log);
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  [[nodiscard]] std::string setup() const { return "export CUCONV_SOCKET=" + socket_; }

 private:
  std::string socket_;
  std::string pid_file_;
};

}  // namespace cuconv::test
