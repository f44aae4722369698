// SPDX-License-Identifier: Apache-2.0
// Batch planning: input lists, directory expansion, output names, sharding.
#include "engine/batch_plan.hpp"

#include "engine/files.hpp"

#include "common/whole_number.hpp"

#include <cuconv/error.hpp>
#include <cuconv/image_io.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <map>
#include <system_error>
#include <utility>

namespace cuconv::engine {

namespace fs = std::filesystem;

namespace {

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

/// Text after the last `%s` of a template (all of it when there is none): where an extension
/// of the template's own would be.
std::string_view template_tail(std::string_view name_template) {
  const auto last = name_template.rfind("%s");
  return last == std::string_view::npos ? name_template : name_template.substr(last + 2);
}

/// An environment variable or option value as a whole number; unset (nullptr) gives nullopt.
std::optional<long long> parse_integer(const char* text) {
  return text == nullptr ? std::nullopt : common::parse_whole_number<long long>(text);
}

}  // namespace

std::vector<std::string> read_path_list(std::istream& in, std::string_view list_name) {
  std::vector<std::string> paths;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find('\0') != std::string::npos)
      throw Error(ErrorKind::bad_input,
                  (list_name.empty() ? std::string("a `input_list` list") : "`input_list` " + std::string(list_name)) +
                      ": line " + std::to_string(number) +
                      " holds a NUL byte, which no path can hold (a list made with "
                      "-print0 or -z? give one path per line)");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!is_blank(line)) paths.push_back(line);
  }
  return paths;
}

std::vector<std::string> collect_inputs(const std::vector<std::string>& paths, bool recursive) {
  return collect_inputs(paths, recursive, engine::local_files());
}

std::vector<std::string> collect_inputs(const std::vector<std::string>& paths, bool recursive, engine::Files& access) {
  std::vector<std::string> files;
  // A folder's images; with `recursive` its subfolders' too, not following links to folders.
  const std::function<void(const fs::path&)> add_folder = [&](const fs::path& dir) {
    for (const std::string& name : access.list_directory(dir.string())) {
      const fs::path path = dir / name;
      const engine::FileKind kind = access.kind(path.string(), true);
      if (kind == engine::FileKind::regular && has_image_extension(path.string()) && !is_temp_file_name(path.string()))
        files.push_back(path.lexically_normal().string());
      else if (recursive && kind == engine::FileKind::directory &&
               access.kind(path.string(), false) == engine::FileKind::directory)
        add_folder(path);
    }
  };
  for (const std::string& path : paths) {
    if (access.kind(path, true) == engine::FileKind::directory)
      add_folder(path);
    else
      files.push_back(fs::path(path).lexically_normal().string());
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

std::string why_unreachable(const std::string& path, engine::Files& files) {
  const engine::FileStatus status = files.status(path);
  if (status.error == 0) return {};
  const std::string why = std::generic_category().message(status.error);
  if (status.error == ENOENT || status.error == ENOTDIR) return "does not exist";
  if (status.error == ELOOP) return "is a symbolic link loop (" + why + ")";
  return "cannot be reached: " + why;
}

std::string why_unreachable(const std::string& path) { return why_unreachable(path, engine::local_files()); }

void check_name_template(std::string_view name_template, std::size_t input_count) {
  const std::string quoted = "`name_template` '" + std::string(name_template) + "'";
  if (name_template.empty()) throw Error(ErrorKind::usage, quoted + ": the name template is empty");
  if (name_template.find('/') != std::string_view::npos)
    throw Error(ErrorKind::usage, quoted + ": a file name, not a path (outputs go to `out_dir`)");
  if (name_template == "." || name_template == "..")
    throw Error(ErrorKind::usage, quoted + ": names a folder, not a file; use e.g. '%s_out'");
  if (name_template.starts_with(kTempFilePrefix))
    throw Error(ErrorKind::usage, quoted + ": names starting with '" + std::string(kTempFilePrefix) +
                                      "' mark unfinished files, which later runs skip and clean-ups delete");
  bool has_stem = false;
  for (std::size_t i = 0; i < name_template.size(); ++i) {
    if (name_template[i] != '%') continue;
    const char next = i + 1 < name_template.size() ? name_template[i + 1] : '\0';
    if (next != 's' && next != '%')
      throw Error(ErrorKind::usage, quoted + ": only %s (the input's name without extension) and %% may follow '%'");
    has_stem = has_stem || next == 's';
    ++i;
  }
  if (!has_stem && input_count > 1)
    throw Error(ErrorKind::usage,
                quoted + ": has no %s, so all " + std::to_string(input_count) + " inputs would be written to one file");
}

bool template_has_extension(std::string_view name_template) {
  return template_tail(name_template).find('.') != std::string_view::npos;
}

std::string output_name(std::string_view name_template, const std::string& input) {
  const fs::path in(input);
  std::string name;
  for (std::size_t i = 0; i < name_template.size(); ++i) {
    if (name_template[i] == '%' && i + 1 < name_template.size()) {
      ++i;
      if (name_template[i] == 's')
        name += in.stem().string();
      else
        name += name_template[i];  // "%%"; check_name_template refuses anything else
    } else {
      name += name_template[i];
    }
  }
  if (!template_has_extension(name_template)) name += in.extension().string();
  return name;
}

std::vector<BatchItem> plan_outputs(const std::vector<std::string>& inputs, const std::string& out_dir,
                                    std::string_view name_template) {
  return plan_outputs(inputs, out_dir, name_template, PathContext{engine::local_files(), engine::working_folder()});
}

std::vector<BatchItem> plan_outputs(const std::vector<std::string>& inputs, const std::string& out_dir,
                                    std::string_view name_template, const PathContext& where) {
  std::vector<BatchItem> items;
  items.reserve(inputs.size());
  std::map<std::string, const std::string*> input_of_output;
  for (const std::string& input : inputs) {
    std::string output = (fs::path(out_dir) / output_name(name_template, input)).lexically_normal().string();
    if (is_temp_file_name(output))
      throw Error(ErrorKind::usage, input + ": its output " + output + " would start with '" +
                                        std::string(kTempFilePrefix) +
                                        "', the mark of unfinished files; "
                                        "rename the input or choose another `name_template`");
    const auto [it, inserted] = input_of_output.emplace(output, &input);
    if (!inserted)
      throw Error(ErrorKind::usage, *it->second + " and " + input + " would both be written to " + output +
                                        "; choose a `name_template` that keeps them apart, or run them separately");
    items.push_back({input, std::move(output)});
  }
  check_outputs_not_inputs(items, where);
  return items;
}

namespace {

/// `path` absolute (from `working_folder`) and in lexically normal form: how two spellings of
/// one path compare equal.
std::string normal_absolute(const std::string& path, const std::string& working_folder) {
  const fs::path given(path);
  return (given.is_absolute() || working_folder.empty() ? given : fs::path(working_folder) / given)
      .lexically_normal()
      .string();
}

/// Device and inode of the file at `path` (links followed), or nullopt when nothing is there.
std::optional<std::pair<std::uint64_t, std::uint64_t>> file_identity(const std::string& path, engine::Files& files) {
  const engine::FileStatus status = files.status(path);
  if (status.error != 0) return std::nullopt;
  return std::pair{status.device, status.inode};
}

}  // namespace

void check_outputs_not_inputs(const std::vector<BatchItem>& items, const PathContext& where) {
  std::map<std::string, const std::string*> input_by_path;
  std::map<std::pair<std::uint64_t, std::uint64_t>, const std::string*> input_by_file;
  for (const BatchItem& item : items) {
    input_by_path.emplace(normal_absolute(item.input, where.working_folder), &item.input);
    if (const auto identity = file_identity(item.input, where.files)) input_by_file.emplace(*identity, &item.input);
  }
  for (const BatchItem& item : items) {
    const std::string* input = nullptr;
    if (const auto it = input_by_path.find(normal_absolute(item.output, where.working_folder));
        it != input_by_path.end())
      input = it->second;
    if (input == nullptr) {
      if (const auto identity = file_identity(item.output, where.files))
        if (const auto it = input_by_file.find(*identity); it != input_by_file.end()) input = it->second;
    }
    if (input == nullptr) continue;
    if (*input == item.input)
      throw Error(ErrorKind::usage, item.output + ": output is the input file; refusing to overwrite it");
    throw Error(ErrorKind::usage, item.output + ": the output of " + item.input + " is the input file " + *input +
                                      " of the same batch, which it could replace before it is read; choose a "
                                      "`name_template` or `out_dir` that keeps outputs apart from inputs");
  }
}

Shard parse_shard(std::string_view text) {
  const auto fail = [&] {
    return Error(ErrorKind::usage, "`shard` '" + std::string(text) + "': expected I/N with 0 <= I < N, e.g. 0/4");
  };
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) throw fail();
  const std::string index_text(text.substr(0, slash));
  const std::string count_text(text.substr(slash + 1));
  const auto index = parse_integer(index_text.c_str());
  const auto count = parse_integer(count_text.c_str());
  if (!index || !count || *index < 0 || *count < 1 || *index >= *count) throw fail();
  return {static_cast<std::size_t>(*index), static_cast<std::size_t>(*count)};
}

std::optional<Shard> slurm_array_shard(const EnvironmentLookup& env) {
  const char* id_text = env("SLURM_ARRAY_TASK_ID");
  const char* count_text = env("SLURM_ARRAY_TASK_COUNT");
  if (id_text == nullptr || count_text == nullptr) return std::nullopt;
  const auto id = parse_integer(id_text);
  const auto count = parse_integer(count_text);
  const char* min_text = env("SLURM_ARRAY_TASK_MIN");
  const char* step_text = env("SLURM_ARRAY_TASK_STEP");
  const auto min = min_text != nullptr ? parse_integer(min_text) : std::optional<long long>(0);
  const auto step = step_text != nullptr ? parse_integer(step_text) : std::optional<long long>(1);
  const std::string described = std::string("SLURM_ARRAY_TASK_ID=") + id_text +
                                ", SLURM_ARRAY_TASK_COUNT=" + count_text +
                                (min_text ? std::string(", SLURM_ARRAY_TASK_MIN=") + min_text : "") +
                                (step_text ? std::string(", SLURM_ARRAY_TASK_STEP=") + step_text : "");
  if (!id || !count || !min || !step || *count < 1 || *step < 1 || *id < *min || (*id - *min) % *step != 0 ||
      (*id - *min) / *step >= *count)
    throw Error(ErrorKind::usage, described +
                                      ": not a task of a contiguous array (sbatch -a A-B or A-B:S); "
                                      "give `shard` I/N explicitly");
  return Shard{static_cast<std::size_t>((*id - *min) / *step), static_cast<std::size_t>(*count)};
}

}  // namespace cuconv::engine
