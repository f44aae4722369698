#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI check: every tracked C++ and CUDA file is as clang-format (the repository's .clang-format)
# writes it. Fix a failure with: scripts/check-format.sh --fix
#   scripts/check-format.sh [--fix]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v clang-format > /dev/null; then
  sudo_cmd=(); (( EUID == 0 )) || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-format > /dev/null 2>&1 ||
    { "${sudo_cmd[@]}" apt-get update -qq > /dev/null &&
      "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-format > /dev/null; }
fi
mapfile -d '' files < <(git ls-files -z -- '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh' ':!:third_party/**')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format --style=file -i "${files[@]}"
  echo "formatted ${#files[@]} files"
  exit 0
fi
if ! clang-format --style=file --dry-run --Werror "${files[@]}" 2> /tmp/check-format.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/check-format.$$ | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /'
  rm -f /tmp/check-format.$$
  echo "check-format: run scripts/check-format.sh --fix ($(clang-format --version))"
  exit 1
fi
rm -f /tmp/check-format.$$
echo "check-format: ${#files[@]} files as clang-format writes them ($(clang-format --version | grep -o 'version [0-9.]*'))"
