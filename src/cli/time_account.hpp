// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where a single-image command's time went, for -v: from its process's start (the client's, when
// served) through main, the libraries loaded on first use, the command's set-up and the image's
// stages to the written output, with what is left unaccounted. A stage's time in the engine's
// report (engine::ImageTimes) leaves out the loads timed inside it, so the parts do not overlap.
#include "cli/session.hpp"
#include "engine/image_operation.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace cuconv::cli {

/// The instants the single-image flow marks, on the steady clock.
struct TimeMarks {
  std::chrono::steady_clock::time_point image_started;  ///< engine::process_image called
  double inspect_ms = 0;  ///< --compare and --bench inside the image's span (0 without them)
  double deliver_ms = 0;  ///< writing the result (file or standard output), less library loads
};

/// The -v lines accounting for the time from the process's start (Session::process_started;
/// served, the client's) to now: the start-up, the libraries loaded on first use (served: those
/// already loaded in the server), and "time since ...: TOTAL ms = PART X + ...; unaccounted U
/// ms", whose parts are disjoint and U is what they leave of TOTAL.
[[nodiscard]] std::vector<std::string> time_account(const Session& session, const engine::ImageTimes& times,
                                                    const TimeMarks& marks);

}  // namespace cuconv::cli
