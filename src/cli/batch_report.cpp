// SPDX-License-Identifier: Apache-2.0
// Batch mode's reporting (batch_report.hpp).
#include "cli/batch_report.hpp"
#include "cli/option_names.hpp"

#include "cli/interrupt.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace cuconv::cli {

using engine::BatchSummary;
using engine::ItemReport;
using Clock = std::chrono::steady_clock;

void ProgressLine::update(std::size_t done) {
  if (!enabled_) return;
  done_ = done;
  if (done < total_ && Clock::now() - last_draw_ < std::chrono::milliseconds(100)) return;
  redraw();
}

void ProgressLine::redraw() {
  const std::size_t done = done_;
  const auto now = Clock::now();
  last_draw_ = now;
  drawn_done_ = done;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  // Capped at 99:59:59 so a stalled start cannot overflow the conversion to int.
  const double eta = rate > 0 ? std::min(static_cast<double>(total_ - done) / rate, 359999.0) : 0.0;
  const int eta_s = static_cast<int>(eta);
  draw(fmt::format("\r\033[K{}/{} images, {:.1f} images/s, ETA {}:{:02}:{:02}", done, total_, rate, eta_s / 3600,
                   eta_s / 60 % 60, eta_s % 60));
  drawn_ = true;
}

void ProgressLine::clear() {
  if (!drawn_) return;
  draw("\r\033[K");
  drawn_ = false;
  last_draw_ = {};
}

void ProgressLine::finish() {
  if (drawn_ && drawn_done_ != done_) redraw();
  if (drawn_) draw("\n");
  drawn_ = false;
}

void ProgressLine::draw(std::string_view text) const {
  while (!text.empty()) {
    const ssize_t n = ::write(fd_, text.data(), text.size());
    if (n <= 0) return;  // the progress line is a courtesy: a closed terminal stops it
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

namespace {

/// The filter as it was applied: where it came from, its weights, and every option that shapes
/// the result, so that a summary says exactly what each output is.
nlohmann::json filter_json(const Filter& filter, const ConvolveOptions& options) {
  nlohmann::json rows = nlohmann::json::array();
  for (int r = 0; r < filter.height; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int c = 0; c < filter.width; ++c) row.push_back(filter.at(r, c));
    rows.push_back(std::move(row));
  }
  return {{"origin", filter.origin},
          {"width", filter.width},
          {"height", filter.height},
          {"anchor",
           {options.anchor_x >= 0 ? options.anchor_x : filter.resolved_anchor_x(),
            options.anchor_y >= 0 ? options.anchor_y : filter.resolved_anchor_y()}},
          {"offset", filter.offset},
          {"weights", rows},
          {"border", std::string(to_string(options.border))},
          {"border_value", options.border_value},
          {"depth", std::string(to_string(options.depth))},
          {"delta", options.delta},
          {"alpha", options.keep_alpha ? "keep" : "filter"}};
}

/// Why `item` was filtered with OpenCV although `requested` was `auto`; empty otherwise.
std::string variant_reason(const ItemReport& item, Variant requested, const std::string& no_gpu_reason) {
  if (!item.gpu_fallback.empty()) return in_cli_terms(item.gpu_fallback);
  if (requested == Variant::automatic && item.variant_used == Variant::opencv)
    return "no usable CUDA device" + (no_gpu_reason.empty() ? std::string() : ": " + no_gpu_reason);
  return {};
}

}  // namespace

nlohmann::json summary_json(const BatchSummary& summary, ExitCode exit_code, int signal, const engine::Shard& shard,
                            const engine::BatchOptions& options, const StartupTimes& startup) {
  nlohmann::json files = nlohmann::json::array();
  for (const ItemReport& item : summary.items) {
    files.push_back(
        {{"input", item.input},
         {"output", item.output},
         {"status", std::string(engine::to_string(item.status))},
         {"reason", in_cli_terms(item.reason)},
         {"exit_code", static_cast<int>(item.exit_code)},
         {"device", item.device},
         {"variant", item.variant_used ? nlohmann::json(std::string(to_string(*item.variant_used))) : nlohmann::json()},
         {"variant_reason", variant_reason(item, options.run.convolve.variant, startup.no_gpu_reason)},
         {"decoder", item.decoder},
         {"decoder_reason", in_cli_terms(item.decoder_fallback)},
         {"encoder", item.encoder},
         {"timings",
          {{"read_ms", item.times.read_ms},
           {"filter_ms", item.times.filter_ms},
           {"upload_ms", item.times.upload_ms},
           {"download_ms", item.times.download_ms},
           {"write_ms", item.times.write_ms},
           {"total_ms", item.times.total_ms}}}});
  }
  const double seconds = summary.wall_ms / 1000.0;
  return {{"files", files},
          {"totals",
           {{"inputs", summary.items.size()},
            {"ok", summary.ok},
            {"failed", summary.failed},
            {"skipped", summary.skipped},
            {"existing_outputs", summary.existing_outputs},
            {"written_by_another_process", summary.lost_races},
            {"not_started", summary.not_started},
            {"wall_ms", summary.wall_ms},
            {"startup_ms", startup.startup_ms},
            {"gpu_init_ms", startup.gpu_init_ms},
            {"gpu_setup_ms", summary.gpu_setup_ms},
            {"peak_images_held", summary.peak_images_held},
            {"gpu_codec",
             {{"batches", summary.gpu_codec.batches},
              {"files", summary.gpu_codec.files},
              {"setup_ms", summary.gpu_codec.setup_ms},
              {"decode_ms", summary.gpu_codec.decode_ms},
              {"decode_submit_ms", summary.gpu_codec.decode_submit_ms},
              {"decoder_waiting_ms", summary.gpu_codec.decoder_waiting_ms},
              {"decoder_blocked_ms", summary.gpu_codec.decoder_blocked_ms},
              {"encode_ms", summary.gpu_codec.encode_ms},
              {"encoders_waiting_ms", summary.gpu_codec.encoders_waiting_ms},
              {"first_result_ms", summary.gpu_codec.first_result_ms},
              {"last_result_ms", summary.gpu_codec.last_result_ms}}},
            {"images_per_s", seconds > 0 ? static_cast<double>(summary.ok) / seconds : 0.0}}},
          {"exit_code", static_cast<int>(exit_code)},
          {"served", startup.served},
          {"server", startup.served ? nlohmann::json(startup.server) : nlohmann::json()},
          {"interrupted_by", signal != 0 ? nlohmann::json(signal_name(signal)) : nlohmann::json()},
          {"shard", std::to_string(shard.index) + "/" + std::to_string(shard.count)},
          {"filter", !options.run.apply_filter ? nlohmann::json("none (--no-filter)")
                                               : filter_json(options.run.filter, options.run.convolve)},
          {"variant", std::string(to_string(options.run.convolve.variant))},
          {"jobs", options.jobs},
          {"gpu_threads", !options.run.apply_filter ? 0 : options.filter_threads_per_device},
          {"devices", options.devices}};
}

void log_outcome(const BatchSummary& summary, bool fail_fast, int signal, spdlog::logger& log) {
  if (summary.existing_outputs > 0)
    log.warn("{} output(s) already existed and were left unchanged (use --overwrite to replace them){}",
             summary.existing_outputs,
             summary.lost_races > 0
                 ? fmt::format("; {} of them were written by another process while this one ran", summary.lost_races)
                 : std::string());
  if (signal != 0)
    log.warn("interrupted by {}: {} written, {} not started; run the same command again to finish", signal_name(signal),
             summary.ok, summary.not_started);
  if (summary.failed > 0)
    log.error("{} of {} input(s) failed{}", summary.failed, summary.items.size(),
              fail_fast ? "; stopped at the first failure (--fail-fast)" : "");
  const double seconds = summary.wall_ms / 1000.0;
  log.info("batch: {} ok, {} failed, {} skipped in {:.2f} s ({:.1f} images/s)", summary.ok, summary.failed,
           summary.skipped, seconds, seconds > 0 ? static_cast<double>(summary.ok) / seconds : 0.0);
  if (const auto& j = summary.gpu_codec; j.batches > 0)
    log.info(
        "GPU codec: set-up {:.0f} ms; {} files in {} decode calls; decoder busy {:.0f} ms ({:.0f} in the library's "
        "batched call), waiting for files "
        "{:.0f} ms, for encoders {:.0f} ms; encoder threads busy {:.0f} ms, waiting {:.0f} ms (summed)",
        j.setup_ms, j.files, j.batches, j.decode_ms, j.decode_submit_ms, j.decoder_waiting_ms, j.decoder_blocked_ms,
        j.encode_ms, j.encoders_waiting_ms);
}

}  // namespace cuconv::cli
