// SPDX-License-Identifier: Apache-2.0
// A planted defect for tests/scripts/check_fs_env_uses.py's own test (fs_env_uses_refuses): the engine
// asking this process's file system and environment instead of the command's.
#include <cstdlib>
#include <filesystem>
#include <string>

bool planted_output_exists(const std::string& output) { return std::filesystem::exists(output); }
const char* planted_temporary_folder() { return std::getenv("TMPDIR"); }
