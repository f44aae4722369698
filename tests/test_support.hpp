#pragma once
// Helpers shared by the test suites: temporary folders, running the cuconv binary, sample
// paths and random images.
#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <opencv2/core.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
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
  int exit_code = -1;
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

/// Runs the cuconv binary with `args`, capturing stdout, stderr and the exit code.
/// `shell_setup` runs first in the same shell, e.g. "ulimit -v 1000000" to cap its memory.
inline CommandResult run_cuconv(const std::vector<std::string>& args, const std::string& stdin_file = "",
                                const std::string& shell_setup = "") {
  TempDir capture;
  std::string cmd = (shell_setup.empty() ? "" : shell_setup + "; ") + shell_quote(cuconv_binary());
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(capture.file("out")) + " 2>" + shell_quote(capture.file("err"));
  if (!stdin_file.empty()) cmd += " <" + shell_quote(stdin_file);
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(capture.file("out"));
  r.err = read_file(capture.file("err"));
  return r;
}

/// Every border mode, in documentation order.
inline constexpr Border kAllBorders[] = {Border::reflect101, Border::reflect, Border::replicate, Border::constant,
                                         Border::wrap};

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

/// Whether the sweeps cover `variant` (see tested_gpu_variants).
inline bool variant_tested(cuconv::Variant variant) {
  for (cuconv::Variant v : tested_gpu_variants())
    if (v == variant) return true;
  return false;
}

/// Random image of the given depth: full range for integers, [-100, 100] for float.
inline cv::Mat random_image(int rows, int cols, int depth, int channels, std::uint64_t seed) {
  cv::Mat m(rows, cols, CV_MAKETYPE(depth, channels));
  cv::RNG rng(seed);
  switch (depth) {
    case CV_8U: rng.fill(m, cv::RNG::UNIFORM, 0, 256); break;
    case CV_16U: rng.fill(m, cv::RNG::UNIFORM, 0, 65536); break;
    default: rng.fill(m, cv::RNG::UNIFORM, -100.0, 100.0); break;
  }
  return m;
}

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

/// True when both images have the same size, type and every value.
inline bool bit_equal(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return false;
  cv::Mat diff;
  cv::compare(a.reshape(1), b.reshape(1), diff, cv::CMP_NE);
  return cv::countNonZero(diff) == 0;
}

}  // namespace cuconv::test
