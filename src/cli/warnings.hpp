// SPDX-License-Identifier: Apache-2.0
#pragma once
// The command's warnings that are not errors: a filter that clips most of its result, and the
// no-GPU warning (one line, once per terminal session: session_key, first_in_session).
#include "engine/files.hpp"

#include <cuconv/filter.hpp>

#include <opencv2/core/mat.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace cuconv::cli {

/// The warning for a result filtered with weights that sum to neither 0 nor 1 when most of its
/// values (over half) sit at the output type's limits (0 or 255 for 8U ...): a white or black
/// image, which --normalize would have kept in range. nullopt when the filter sums to 0 or 1, the
/// result is float, or it is mostly in range (an intended gain).
[[nodiscard]] std::optional<std::string> unnormalized_filter_warning(const Filter& filter, const cv::Mat& result);

/// Fraction (0-1) of `image`'s values at its type's limits: 0 or the maximum for 8U and 16U,
/// either end for 16S; 0 for float images, which do not saturate.
[[nodiscard]] double saturated_fraction(const cv::Mat& image);

/// The environment variable that silences the no-GPU warning (documented in docs/usage.md): set
/// to 1 on a machine that is meant to filter on the CPU.
inline constexpr const char* kNoGpuWarningVariable = "CUCONV_NO_GPU_WARNING";

/// Whether the no-GPU warning should be printed, given the value of kNoGpuWarningVariable
/// (nullptr when unset): anything but "1" keeps it.
[[nodiscard]] bool no_gpu_warning_wanted(const char* variable_value);

/// The no-GPU warning for `reason` (cuda_device_available's), naming kNoGpuWarningVariable=1,
/// which silences it: one line of at most kHelpWidth columns as printed (the reason shortened to
/// fit). Printed once per process.
[[nodiscard]] std::string no_gpu_warning(std::string_view reason);

/// no_gpu_warning(reason) the first time it is asked for in this process; nullopt after that.
/// Whether the command's environment silences it is the caller's to ask (gpu_warning, through
/// the session's environment). Thread-safe: batch mode and the single-image flow call it alike.
[[nodiscard]] std::optional<std::string> no_gpu_warning_once(std::string_view reason);

/// The terminal session of process `pid` as a key no later session shares: "SID-START", the
/// session id (getsid) and its leader's start time (/proc/SID/stat, clock ticks since boot; 0 when
/// the leader has gone), so a session id reused after a logout is a new key. Empty when `pid`
/// cannot be asked (gone, or outside this process's pid namespace).
[[nodiscard]] std::string session_key(long pid);

/// Whether the session `key` (session_key's) has not been warned yet, recording it if so: a marker
/// file `no-gpu-warned-KEY` in `folder` (the user's private runtime folder), made through `files`.
/// The first call of a session answers true, later ones false. Making a marker also removes the
/// markers of sessions that have ended. True when the marker cannot be made (warn rather than
/// stay silent); never throws.
[[nodiscard]] bool first_in_session(engine::Files& files, const std::string& folder, const std::string& key);

}  // namespace cuconv::cli
