// SPDX-License-Identifier: Apache-2.0
#pragma once
// Batch mode, before any image is read: which files are inputs, where each result goes, and which
// share of the inputs this process takes. Everything here is deterministic, so independent
// processes (Slurm array tasks, GNU parallel jobs) agree on the plan without talking.
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuconv::engine {
class Files;
}

namespace cuconv::engine {

/// One input and the file its result goes to.
struct BatchItem {
  std::string input;
  std::string output;
};

/// Paths listed one per line (--from). A trailing CR (files from Windows) is dropped and lines
/// holding only white space are skipped; every other line is a path, taken verbatim. A line
/// holding a NUL byte is refused (Error{bad_input} naming `list_name`, the list's path or
/// "standard input", and the line): no path can hold one, and opening the text before it while
/// naming the output after the rest would put one image's pixels under another's name (a
/// `find -print0` list read as lines).
[[nodiscard]] std::vector<std::string> read_path_list(std::istream& in, std::string_view list_name = {});

/// The input files for what the user named: a file stays as given (whether it exists is the
/// reader's business, so a missing file fails alone); a directory contributes its files with an
/// image extension (has_image_extension; write_image_atomic's temporary files never), and with
/// `recursive` those of its subdirectories. Sorted and without duplicates (paths compared in
/// lexically normal form, so `./a.png` and `a.png` are one input). Throws Error{bad_input} when
/// a directory cannot be listed.
[[nodiscard]] std::vector<std::string> collect_inputs(const std::vector<std::string>& paths, bool recursive);
/// The same through `files` (a client's file access when served).
[[nodiscard]] std::vector<std::string> collect_inputs(const std::vector<std::string>& paths, bool recursive,
                                                      engine::Files& files);

/// Why nothing can be read at `path`, asked of `files` (the caller's, when served): "" when
/// something is there (a file, a folder ...), "does not exist", or the error itself ("is a symbolic
/// link loop (Too many levels of symbolic links)", "cannot be reached: Permission denied"): what a
/// check that inputs exist reports.
[[nodiscard]] std::string why_unreachable(const std::string& path, engine::Files& files);
[[nodiscard]] std::string why_unreachable(const std::string& path);  ///< this process's files

/// Throws Error{usage} unless `name_template` is a usable --name for `input_count` inputs:
/// a file name (no '/', not `.` or `..`, not starting with kTempFilePrefix, which marks
/// unfinished files that later runs skip and clean-ups delete), whose only '%' sequences are `%s`
/// (the input's stem) and `%%` (a '%'), with at least one `%s` when there is more than one input.
void check_name_template(std::string_view name_template, std::size_t input_count);

/// The output file name for `input`: every `%s` replaced by the input's stem and `%%` by '%'.
/// When the template names no extension after its last `%s`, the input's extension is appended
/// (so the format is kept); otherwise the template's extension picks the format.
[[nodiscard]] std::string output_name(std::string_view name_template, const std::string& input);

/// Whether the template picks the output format itself (see output_name).
[[nodiscard]] bool template_has_extension(std::string_view name_template);

/// Where a plan's paths are: the command's file access and the working folder its relative
/// paths start from (a served command's are its client's; empty folder: relative paths are
/// compared as they are).
struct PathContext {
  engine::Files& files;
  std::string working_folder;
};

/// Pairs every input with `out_dir`/output_name(...). Throws Error{usage} naming both inputs
/// when two of them map to the same output file, when an output name starts with
/// kTempFilePrefix, or when an output is another input of the plan (check_outputs_not_inputs).
[[nodiscard]] std::vector<BatchItem> plan_outputs(const std::vector<std::string>& inputs, const std::string& out_dir,
                                                  std::string_view name_template, const PathContext& where);
/// The same in this process's files and working folder.
[[nodiscard]] std::vector<BatchItem> plan_outputs(const std::vector<std::string>& inputs, const std::string& out_dir,
                                                  std::string_view name_template);

/// Throws Error{usage} naming both files when an item's output is the input of an item (its own
/// or another's): the same path in lexically normal absolute form (from `where`'s working
/// folder), or, for files that exist, the same file (device and inode, through symbolic and hard
/// links and bind mounts, asked of `where`'s files). Otherwise one item could replace another's
/// input before it is read, with or without --overwrite. Called by plan_outputs for the whole
/// plan, before sharding, so no shard writes another's input.
void check_outputs_not_inputs(const std::vector<BatchItem>& items, const PathContext& where);

/// This process's share of the inputs: the items whose position in the sorted list is
/// `index` modulo `count`.
struct Shard {
  std::size_t index = 0;
  std::size_t count = 1;
};

/// "I/N" with 0 <= I < N; Error{usage} otherwise.
[[nodiscard]] Shard parse_shard(std::string_view text);

/// Reads an environment variable; std::getenv in production, a map in tests.
using EnvironmentLookup = std::function<const char*(const char*)>;

/// The shard of a Slurm array task: SLURM_ARRAY_TASK_COUNT tasks, this one number
/// (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP (MIN 0 and STEP 1 when
/// unset), so `--array=1-16` works as well as `--array=0-15`. std::nullopt outside an array job.
/// Throws Error{usage} when the task ids are not a contiguous range (e.g. `--array=1,5,9`).
[[nodiscard]] std::optional<Shard> slurm_array_shard(const EnvironmentLookup& env);

/// The elements of `sorted` that belong to `shard`, in order.
template <class T>
[[nodiscard]] std::vector<T> select_shard(const std::vector<T>& sorted, Shard shard) {
  std::vector<T> mine;
  for (std::size_t i = shard.index; i < sorted.size(); i += shard.count) mine.push_back(sorted[i]);
  return mine;
}

}  // namespace cuconv::engine
