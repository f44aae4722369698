// SPDX-License-Identifier: Apache-2.0
#pragma once
// Batch mode's reporting: the progress line on a terminal, the closing log lines and the JSON
// summary (docs/batch.md, "Summary").
#include "engine/batch_pipeline.hpp"
#include "engine/batch_plan.hpp"

#include <cuconv/convolve.hpp>
#include <cuconv/filter.hpp>

#include <spdlog/logger.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace cuconv::cli {

/// "done/total, images/s, ETA" on the session's stderr, redrawn in place at most ten times a
/// second. Only on a terminal: in a log file the carriage returns would be noise.
class ProgressLine {
 public:
  ProgressLine(bool enabled, std::size_t total, int fd)
      : enabled_(enabled), total_(total), start_(std::chrono::steady_clock::now()), fd_(fd) {}
  void update(std::size_t done);
  /// Erases the line so that a log line can take its place (the next update redraws it).
  void clear();
  /// Leaves the last state on screen: the last count given to update, drawn now if a redraw
  /// limit held it back.
  void finish();

 private:
  void redraw();
  void draw(std::string_view text) const;

  bool enabled_;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
  std::size_t done_ = 0;        ///< the last count given to update
  std::size_t drawn_done_ = 0;  ///< the count on screen
  int fd_;
};

/// Where the time before the pipeline went, and what it found out.
struct StartupTimes {
  double startup_ms = 0;      ///< from the command's start to the pipeline's: options, filter, input listing
  double gpu_init_ms = 0;     ///< CUDA's initialisation (the device check), beside the above and the first decodes
  std::string no_gpu_reason;  ///< why `auto` filters with OpenCV; empty when a GPU is usable
  bool served = false;        ///< run by `cuconv serve` for a client
  std::string server;         ///< then the server (Session::server_description)
};

/// The JSON summary of a finished batch.
[[nodiscard]] nlohmann::json summary_json(const engine::BatchSummary& summary, ExitCode exit_code, int signal,
                                          const engine::Shard& shard, const engine::BatchOptions& options,
                                          const StartupTimes& startup);

/// The closing lines: outputs kept, an interruption, failures, the rate and the GPU JPEG stages.
void log_outcome(const engine::BatchSummary& summary, bool fail_fast, int signal, spdlog::logger& log);

}  // namespace cuconv::cli
