// SPDX-License-Identifier: Apache-2.0
// cuconv_make_corpus: a benchmark corpus for batch mode. Derives N distinct RGB images of about
// SIZE x SIZE pixels from the sample images (crop, flip, resize, light noise), deterministically
// from the image index, so every machine that runs it gets the same corpus. Built here and
// carried by the bundle, because GPU nodes have no OpenCV besides the bundle's.
#include <cuconv/image_io.hpp>

#include <CLI/CLI.hpp>

#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// Sources too small to stand for a photo once scaled up are left out.
constexpr int kMinSourceSide = 256;

/// The 8-bit sample images as BGR, sorted by file name (a fixed order across machines).
std::vector<cv::Mat> load_sources(const fs::path& samples) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(samples))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<cv::Mat> sources;
  for (const fs::path& file : files) {
    const cv::Mat image = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
    if (image.empty() || image.depth() != CV_8U || std::min(image.rows, image.cols) < kMinSourceSide) continue;
    cv::Mat bgr;
    if (image.channels() == 1)
      cv::cvtColor(image, bgr, cv::COLOR_GRAY2BGR);
    else if (image.channels() == 4)
      cv::cvtColor(image, bgr, cv::COLOR_BGRA2BGR);
    else
      bgr = image;
    sources.push_back(bgr);
  }
  return sources;
}

/// Image `index`: a crop of 60-100% of a source (chosen in turn), one of four flips, resized to
/// about `size` pixels per side (+-5%, so sizes are not all equal), plus noise of sigma 2.
cv::Mat derive(const std::vector<cv::Mat>& sources, int index, int size) {
  // cv::RNG's first draws follow its seed almost linearly: scramble the index (splitmix64 step).
  std::uint64_t seed = 0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(index) + 1);
  seed = (seed ^ (seed >> 30)) * 0xbf58476d1ce4e5b9ULL;
  seed = (seed ^ (seed >> 27)) * 0x94d049bb133111ebULL;
  cv::RNG rng(seed ^ (seed >> 31));
  const cv::Mat& source = sources[static_cast<std::size_t>(index) % sources.size()];
  const double keep = rng.uniform(0.6, 1.0);
  const int crop_w = std::max(1, static_cast<int>(source.cols * keep));
  const int crop_h = std::max(1, static_cast<int>(source.rows * keep));
  const cv::Rect crop(rng.uniform(0, source.cols - crop_w + 1), rng.uniform(0, source.rows - crop_h + 1), crop_w,
                      crop_h);
  cv::Mat image;
  const int flip = index / static_cast<int>(sources.size()) % 4;  // 0: none, then around x, y, both
  if (flip == 0)
    image = source(crop).clone();
  else
    cv::flip(source(crop), image, flip == 1 ? 0 : flip == 2 ? 1 : -1);
  const int width = static_cast<int>(size * rng.uniform(0.95, 1.05));
  const int height = static_cast<int>(size * rng.uniform(0.95, 1.05));
  cv::resize(image, image, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
  cv::Mat noise(image.size(), CV_16SC3);
  rng.fill(noise, cv::RNG::NORMAL, 0, 2);
  cv::Mat noisy;
  cv::add(image, noise, noisy, cv::noArray(), CV_8U);  // saturating
  return noisy;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  std::string out_dir;
  std::string samples = "samples";
  int size = 2000;
  std::string extension = ".png";
  CLI::App app{"cuconv_make_corpus: N images of about SIZE x SIZE RGB derived from the samples, for batch benchmarks"};
  app.add_option("--count", count, "number of images")->required()->check(CLI::Range(1, 10000000));
  app.add_option("--out", out_dir, "output folder (created; existing images are kept)")->required();
  app.add_option("--samples", samples, "folder of source images (8-bit, at least 256 px per side)")
      ->capture_default_str();
  app.add_option("--size", size, "approximate side in pixels")->check(CLI::Range(16, 20000))->capture_default_str();
  int quality = 95;
  app.add_option("--quality", quality, "JPEG quality (.jpg only)")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--ext", extension, "image format by extension")
      ->check(CLI::IsMember({".png", ".jpg", ".tif", ".bmp"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<cv::Mat> sources;
  try {
    sources = load_sources(samples);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuconv_make_corpus: %s: %s\n", samples.c_str(), e.what());
    return 3;
  }
  if (sources.empty()) {
    std::fprintf(stderr, "cuconv_make_corpus: no 8-bit images of at least %d px per side in %s\n", kMinSourceSide,
                 samples.c_str());
    return 3;
  }
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "cuconv_make_corpus: %s: %s\n", out_dir.c_str(), ec.message().c_str());
    return 4;
  }

  std::atomic<int> failures{0};
  std::atomic<int> written{0};
  cv::parallel_for_(cv::Range(0, count), [&](const cv::Range& range) {
    for (int i = range.start; i < range.end; ++i) {
      char name[64];
      std::snprintf(name, sizeof name, "corpus_%06d%s", i, extension.c_str());
      const fs::path path = fs::path(out_dir) / name;
      if (fs::exists(path)) continue;  // a rerun only adds what is missing
      try {
        // Atomic, so an interrupted run leaves no partial image that a batch would read.
        const cv::Mat image = derive(sources, i, size);
        if (extension == ".jpg") {
          std::vector<unsigned char> jpeg;
          if (!cv::imencode(".jpg", image, jpeg, {cv::IMWRITE_JPEG_QUALITY, quality}))
            throw std::runtime_error("cannot encode JPEG");
          cuconv::write_encoded_atomic(path.string(), jpeg);
        } else {
          cuconv::write_image_atomic(path.string(), image);
        }
        ++written;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cuconv_make_corpus: %s\n", e.what());
        ++failures;
      }
    }
  });
  std::fprintf(stderr, "cuconv_make_corpus: %d image(s) written, %d already there, in %s\n", written.load(),
               count - written.load() - failures.load(), out_dir.c_str());
  if (failures > 0) {
    std::fprintf(stderr, "cuconv_make_corpus: %d image(s) could not be written\n", failures.load());
    return 4;
  }
  return 0;
}
