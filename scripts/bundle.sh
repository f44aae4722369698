#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Make a relocatable tarball of an existing cuconv build:
#
#   scripts/bundle.sh [BUILD_DIR] [--only NAME,...] [--suffix LABEL]   (default: build/h100)
#
#   --only NAME,...  bundle cuconv and only these of the other binaries (e.g. cuconv_bench); a
#                    node that only filters needs none of them (each of cuconv_tests,
#                    cuconv_gpu_tests and cuconv_bench is about 21 MB unpacked)
#   --split          two tarballs: NAME-lib.tar.xz (lib/ and licenses/) and NAME.tar.xz (the
#                    rest), for a GPU node that carries at most 64 MiB a call: unpack the first
#                    in one call, the second in the next, into the same folder
#   --suffix LABEL   name the tarball cuconv-<version>-linux-<arch>-LABEL.tar.xz (the folder in
#                    it keeps its name)
#
# -> dist/cuconv-<version>-linux-<arch>.tar.xz containing
#    cuconv-<version>-linux-<arch>/
#      bin/        cuconv, cuconv_tests, cuconv_gpu_tests, cuconv_bench, cuconv_fast_tune, cuconv_wide_tune,
#                  cuconv_wgmma_tune, cuconv_make_corpus
#                  (those that were built)
#                  cuconv-env.sh (source it, or use it as a wrapper: bin/cuconv-env.sh cuconv ...)
#      lib/        non-system shared libraries the binaries need (OpenCV and its closure), and
#                  libnvjpeg.so.13 (loaded at run time by the GPU JPEG codec)
#      licenses/   Debian copyright files of the packages those libraries come from
#      samples/    copy of samples/
#      scripts/    make-batch-corpus.sh, batch-bench.sh (batch-mode benchmark on the node),
#                  jpeg-bench.sh (GPU JPEG codec benchmark)
#      test/       CTestTestfile.cmake.in (run-tests.sh fills in the bundle path for ctest)
#      run-tests.sh
#
# glibc, libstdc++/libgcc_s and the NVIDIA driver libraries (libcuda, libnvidia-*) are NOT
# bundled: they must come from the machine the bundle runs on (the driver must match the kernel
# module; glibc cannot be mixed). The target needs glibc >= the one of the build machine.
set -euo pipefail

build_arg=build/h100
only=""      # comma-separated binaries to bundle besides cuconv; empty: all that were built
suffix=""
split=0
while (( $# > 0 )); do
  case "$1" in
    --only) only="${2:?bundle: --only needs a list of binaries}"; shift 2 ;;
    --only=*) only="${1#*=}"; shift ;;
    --split) split=1; shift ;;
    --suffix) suffix="${2:?bundle: --suffix needs a label}"; shift 2 ;;
    --suffix=*) suffix="${1#*=}"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bundle: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) build_arg="$1"; shift ;;
  esac
done
# Resolve the build dir against the caller's cwd before moving to the repository root.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ "$build_arg" != /* && ! -d "$build_arg" && -d "$repo_root/$build_arg" ]]; then
  build_arg="$repo_root/$build_arg"   # default/relative paths also work from outside the repo
fi
if [[ ! -d "$build_arg" ]]; then
  echo "bundle: build dir '$build_arg' not found; build first, e.g." >&2
  echo "  cmake --preset h100 && cmake --build --preset h100 -j" >&2
  exit 1
fi
build_dir="$(cd "$build_arg" && pwd)"
cd "$repo_root"

log() { echo "bundle: $*"; }
warn() { echo "bundle: warning: $*" >&2; }

# ---- version and names -------------------------------------------------------------------------
version="$(sed -n 's/^[[:space:]]*project([[:space:]]*cuconv[[:space:]]\+VERSION[[:space:]]\+\([0-9][0-9.]*\).*/\1/p' CMakeLists.txt | head -n1)"
if [[ -z "$version" ]]; then
  echo "bundle: could not read 'project(cuconv VERSION x.y.z' from CMakeLists.txt" >&2
  exit 1
fi
name="cuconv-${version}-linux-$(uname -m)"
dist_dir="$repo_root/dist"
tarball="$dist_dir/$name${suffix:+-$suffix}.tar.xz"

stage_parent="$(cd "$(mktemp -d "${TMPDIR:-/tmp}/cuconv-bundle.XXXXXX")" && pwd -P)"
trap 'rm -rf "$stage_parent"' EXIT
stage="$stage_parent/$name"
mkdir -p "$stage"/{bin,lib,licenses,test}

# ---- binaries ----------------------------------------------------------------------------------
# Paths relative to the build dir; the bundle puts them all flat in bin/.
# libcuconv-opencv-codecs.so: OpenCV's image codecs, which the engine loads from beside itself.
candidates=(cuconv cuconv-engine libcuconv-opencv-codecs.so tests/cuconv_tests tests/cuconv_gpu_tests bench/cuconv_bench bench/cuconv_fast_tune bench/cuconv_wide_tune bench/cuconv_wgmma_tune cuconv_make_corpus
            bench/cuconv_nvjpeg_floor)
if [[ -n "$only" ]]; then
  known=",$(printf '%s,' "${candidates[@]##*/}")"
  IFS=',' read -r -a asked <<<"$only"
  for b in "${asked[@]}"; do
    if [[ "$known" != *",$b,"* ]]; then
      echo "bundle: --only: unknown binary '$b' (known: ${candidates[*]##*/})" >&2
      exit 2
    fi
  done
fi
bins=()
declare -A bin_src=()   # bundled name -> file in the build dir
for rel in "${candidates[@]}"; do
  always=0
  [[ "$rel" == cuconv || "$rel" == cuconv-engine || "$rel" == libcuconv-opencv-codecs.so ]] && always=1
  if [[ -n "$only" ]] && (( ! always )) && [[ ",$only," != *",$(basename "$rel"),"* ]]; then
    continue   # not asked for (--only)
  fi
  if [[ -f "$build_dir/$rel" && -x "$build_dir/$rel" ]]; then
    cp "$build_dir/$rel" "$stage/bin/"
    bins+=("$(basename "$rel")")
    bin_src[$(basename "$rel")]="$build_dir/$rel"
  elif [[ -n "$only" ]] && (( ! always )); then
    echo "bundle: --only: $build_dir/$rel was asked for but is not built" >&2
    exit 1
  else
    warn "$build_dir/$rel not found, not bundled"
  fi
done
if [[ ! -f "$stage/bin/cuconv" || ! -f "$stage/bin/cuconv-engine" || ! -f "$stage/bin/libcuconv-opencv-codecs.so" ]]; then
  echo "bundle: $build_dir/cuconv, cuconv-engine or libcuconv-opencv-codecs.so is missing; nothing useful to bundle" >&2
  exit 1
fi
log "binaries: ${bins[*]}"

# ---- shared-library closure --------------------------------------------------------------------
# True for libraries the target machine must provide itself: the glibc family (version-locked
# to each other and to ld.so), the compiler runtime, and the NVIDIA driver libraries.
is_system_lib() {
  case "$1" in
    linux-vdso.so* | linux-gate.so* | ld-linux*.so* | */ld-linux*.so* | \
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | \
    libresolv.so* | libutil.so* | libanl.so* | libmvec.so* | libnss_*.so* | \
    libBrokenLocale.so* | libthread_db.so* | libc_malloc_debug.so* | \
    libstdc++.so* | libgcc_s.so* | \
    libcuda.so* | libnvidia-*) return 0 ;;
    *) return 1 ;;
  esac
}

# Filter for ldd's output: prints "soname<TAB>resolved path" for every library (ldd already
# gives the full transitive closure). Unresolved ones get the path "NOT_FOUND".
parse_ldd() {
  awk '
    $2 == "=>" && $3 == "not" { print $1 "\tNOT_FOUND"; next }
    $2 == "=>"                { print $1 "\t" $3; next }
    NF >= 1 && $1 !~ /:$/ && $1 != "statically" && $1 != "not" { print $1 "\t" $1 }'
}

declare -A copied=()
missing_libs=0
for b in "${bins[@]}"; do
  while IFS=$'\t' read -r soname path; do
    is_system_lib "$(basename "$soname")" && continue
    [[ -n "${copied[$soname]:-}" ]] && continue
    if [[ "$path" == NOT_FOUND ]]; then
      warn "$b needs $soname, which ldd cannot find on this machine"
      missing_libs=1
      continue
    fi
    # Copy the file the symlink chain ends at, under the name the loader asks for (the SONAME).
    cp -L "$path" "$stage/lib/$soname"
    chmod u+w "$stage/lib/$soname"
    copied[$soname]="$path"
  done < <(ldd "${bin_src[$b]}" 2>/dev/null | parse_ldd)
done
if (( missing_libs )); then
  echo "bundle: some libraries could not be resolved (see above); fix the build machine first" >&2
  exit 1
fi
log "bundled ${#copied[@]} shared libraries"

# ---- nvJPEG: dlopen'ed by the GPU JPEG codec, so ldd does not list it ----------------------------
# The build records the libnvjpeg.so.13 it found (CUDA toolkit or the nvidia-nvjpeg wheel that
# scripts/install-deps.sh unpacks); it is redistributable with its licence.
nvjpeg_lib="$(head -n1 "$build_dir/nvjpeg-library.txt" 2>/dev/null || true)"
if [[ -n "$nvjpeg_lib" && -f "$nvjpeg_lib" ]]; then
  cp -L "$nvjpeg_lib" "$stage/lib/libnvjpeg.so.13"
  chmod u+w "$stage/lib/libnvjpeg.so.13"
  nvjpeg_dir="$(dirname "$nvjpeg_lib")"
  nvjpeg_licence=""
  for candidate in "$nvjpeg_dir/../LICENSE.txt" "$nvjpeg_dir/../EULA.txt" "$nvjpeg_dir/../../EULA.txt" \
                   /usr/local/cuda/EULA.txt; do
    if [[ -f "$candidate" ]]; then nvjpeg_licence="$candidate"; break; fi
  done
  if [[ -n "$nvjpeg_licence" ]]; then
    cp -L "$nvjpeg_licence" "$stage/licenses/nvjpeg.LICENSE.txt"
  else
    warn "no licence file found next to $nvjpeg_lib; add NVIDIA's CUDA EULA to licenses/ by hand"
  fi
  log "nvJPEG: $nvjpeg_lib${nvjpeg_licence:+ (licence: $nvjpeg_licence)}"
else
  warn "libnvjpeg.so.13 was not found at build time: the bundle's GPU JPEG codec needs it on LD_LIBRARY_PATH"
fi

# ---- licences of the bundled libraries (best effort, Debian/Ubuntu only) ------------------------
if command -v dpkg-query >/dev/null 2>&1 && (( ${#copied[@]} > 0 )); then
  # With merged /usr, ldd reports /lib/... while dpkg may have registered /usr/lib/... (or the
  # other way round): ask for the resolved path with and without the /usr prefix.
  query_paths=()
  for soname in "${!copied[@]}"; do
    real="$(readlink -f "${copied[$soname]}")"
    query_paths+=("$real" "${real#/usr}" "/usr${real#/usr}")
  done
  while read -r pkg; do
    doc="/usr/share/doc/${pkg%%:*}/copyright"
    [[ -r "$doc" ]] && cp -L "$doc" "$stage/licenses/${pkg%%:*}.copyright"
  done < <(dpkg-query -S "${query_paths[@]}" 2>/dev/null | grep -v '^diversion' |
           sed -n 's|: /.*$||p' | tr ',' '\n' | tr -d ' ' | sort -u)
fi
[[ -f LICENSE ]] && cp LICENSE "$stage/licenses/cuconv.LICENSE"

# ---- RPATH -------------------------------------------------------------------------------------
# RUNPATH $ORIGIN/../lib on the binaries and $ORIGIN on the libraries: RUNPATH is not inherited
# by dependencies, so each bundled library must find its own dependencies next to itself.
ensure_patchelf() {
  command -v patchelf >/dev/null 2>&1 && return 0
  local sudo_cmd=()
  if (( EUID != 0 )); then
    command -v sudo >/dev/null 2>&1 || return 1
    sudo_cmd=(sudo)
  fi
  log "installing patchelf"
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf >/dev/null 2>&1 ||
    { "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf >/dev/null; } ||
    return 1
  command -v patchelf >/dev/null 2>&1
}

have_rpath=0
if ensure_patchelf; then
  for b in "${bins[@]}"; do
    # shellcheck disable=SC2016  # literal $ORIGIN for the loader
    patchelf --set-rpath '$ORIGIN/../lib' "$stage/bin/$b"
  done
  for soname in "${!copied[@]}"; do
    # shellcheck disable=SC2016
    patchelf --set-rpath '$ORIGIN' "$stage/lib/$soname"
  done
  have_rpath=1
  log "RUNPATH set with $(patchelf --version)"
else
  warn "patchelf unavailable: binaries rely on LD_LIBRARY_PATH (bin/cuconv-env.sh, run-tests.sh)"
fi

# ---- environment helper, tests -----------------------------------------------------------------
# Fallback for when RUNPATH is missing or stripped: put lib/ on LD_LIBRARY_PATH and bin/ on PATH.
cat >"$stage/bin/cuconv-env.sh" <<'EOF'
#!/usr/bin/env bash
# Source it:   . /path/to/bundle/bin/cuconv-env.sh   (adds bin/ to PATH, lib/ to LD_LIBRARY_PATH)
# or wrap:     /path/to/bundle/bin/cuconv-env.sh cuconv in.png out.png --filter gauss5
CUCONV_HOME="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CUCONV_HOME
export PATH="$CUCONV_HOME/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$CUCONV_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUCONV_BIN="${CUCONV_BIN:-$CUCONV_HOME/bin/cuconv}"
export CUCONV_SAMPLES="${CUCONV_SAMPLES:-$CUCONV_HOME/samples}"
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  # Executed rather than sourced: run the given command in this environment.
  set -euo pipefail
  if (( $# == 0 )); then
    echo "usage: $0 COMMAND [ARGS...]   (or source this file)" >&2
    exit 2
  fi
  exec "$@"
fi
EOF
chmod +x "$stage/bin/cuconv-env.sh"

{
  cat <<'EOF'
# Tests of an unpacked cuconv bundle (written by scripts/bundle.sh). run-tests.sh turns this
# template into CTestTestfile.cmake with the bundle's absolute path: ctest gives the file no
# reliable way to find its own folder (CMAKE_CURRENT_LIST_DIR is empty there).
set(CUCONV_BUNDLE "@CUCONV_BUNDLE@")
set(CUCONV_TEST_ENV "CUCONV_BIN=${CUCONV_BUNDLE}/bin/cuconv" "CUCONV_SAMPLES=${CUCONV_BUNDLE}/samples")
# Fallback for binaries without RUNPATH: lib/ first on LD_LIBRARY_PATH (once; no trailing ':',
# which would mean the current directory).
string(FIND "$ENV{LD_LIBRARY_PATH}" "${CUCONV_BUNDLE}/lib" CUCONV_LIB_POS)
if(CUCONV_LIB_POS EQUAL 0)
  list(APPEND CUCONV_TEST_ENV "LD_LIBRARY_PATH=$ENV{LD_LIBRARY_PATH}")
elseif(NOT "$ENV{LD_LIBRARY_PATH}" STREQUAL "")
  list(APPEND CUCONV_TEST_ENV "LD_LIBRARY_PATH=${CUCONV_BUNDLE}/lib:$ENV{LD_LIBRARY_PATH}")
else()
  list(APPEND CUCONV_TEST_ENV "LD_LIBRARY_PATH=${CUCONV_BUNDLE}/lib")
endif()
EOF
  # Only tests whose binary was bundled; the GPU suite exits 77 (skipped) without a GPU.
  for pair in cpu:cuconv_tests gpu:cuconv_gpu_tests; do
    test_name="${pair%%:*}" exe="${pair#*:}"
    if [[ -f "$stage/bin/$exe" ]]; then
      # shellcheck disable=SC2016  # ${...} are CMake variables, expanded by ctest
      printf 'add_test(%s "${CUCONV_BUNDLE}/bin/%s")\n' "$test_name" "$exe"
      # shellcheck disable=SC2016
      printf 'set_tests_properties(%s PROPERTIES ENVIRONMENT "${CUCONV_TEST_ENV}" SKIP_RETURN_CODE 77)\n' "$test_name"
    else
      warn "test '$test_name' left out of test/CTestTestfile.cmake ($exe not bundled)"
    fi
  done
} >"$stage/test/CTestTestfile.cmake.in"

cat >"$stage/run-tests.sh" <<'EOF'
#!/usr/bin/env bash
# Run the bundled test suites: ./run-tests.sh [extra ctest arguments, e.g. -R gpu -V]
set -euo pipefail
bundle="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
. "$bundle/bin/cuconv-env.sh"
sed "s|@CUCONV_BUNDLE@|$bundle|g" "$bundle/test/CTestTestfile.cmake.in" >"$bundle/test/CTestTestfile.cmake"
exec ctest --test-dir "$bundle/test" --output-on-failure "$@"
EOF
chmod +x "$stage/run-tests.sh"

cp -r samples "$stage/samples"
mkdir -p "$stage/scripts"
cp scripts/make-batch-corpus.sh scripts/batch-bench.sh scripts/jpeg-bench.sh "$stage/scripts/"

# ---- check the staged tree resolves its libraries from lib/ ------------------------------------
check_env=()
(( have_rpath )) || check_env=(LD_LIBRARY_PATH="$stage/lib")
outside=0
for b in "${bins[@]}"; do
  while IFS=$'\t' read -r soname path; do
    is_system_lib "$(basename "$soname")" && continue
    # ldd prints $ORIGIN expanded, e.g. .../bin/../lib/x.so: normalise before comparing.
    [[ "$path" != NOT_FOUND ]] && path="$(readlink -f "$path")"
    if [[ "$path" != "$stage/lib/"* ]]; then
      warn "bin/$b: $soname resolves to $path, not to the bundle's lib/"
      outside=1
    fi
  done < <(env -u LD_LIBRARY_PATH "${check_env[@]}" ldd "$stage/bin/$b" 2>/dev/null | parse_ldd)
done
(( outside )) && warn "the bundle may pick up libraries from the target system"
# The loader must accept every patched library: run the CLI's --help (no GPU needed).
if ! env -u LD_LIBRARY_PATH "${check_env[@]}" "$stage/bin/cuconv" --help >/dev/null 2>&1; then
  warn "bundled bin/cuconv --help failed; check the bundle before shipping it"
fi

# ---- tarball -----------------------------------------------------------------------------------
mkdir -p "$dist_dir"
rm -f "$tarball"
# Numeric owner 0 so the archive does not carry this machine's user names; xz multi-threaded and
# at its strongest setting: each binary carries every kernel (about 21 MB each), which -9e packs
# to 55 MB where the default gave 65 MB (over the 64 MiB a GPU-node transfer may carry here).
pack() {  # pack TARBALL [tar options and members...]
  local to="$1"
  shift
  XZ_OPT="${XZ_OPT:--T0 -9e}" tar -C "$stage_parent" --owner=0 --group=0 --numeric-owner -cJf "$to.tmp" "$@"
  mv "$to.tmp" "$to"
}
if (( split )); then
  lib_tarball="${tarball%.tar.xz}-lib.tar.xz"
  pack "$lib_tarball" "$name/lib" "$name/licenses"
  pack "$tarball" --exclude="$name/lib" --exclude="$name/licenses" "$name"
  log "$lib_tarball: $(numfmt --to=iec --suffix=B "$(stat -c %s "$lib_tarball")")"
else
  pack "$tarball" "$name"
fi

size_bytes="$(stat -c %s "$tarball")"
log "$tarball"
log "size: $(numfmt --to=iec --suffix=B "$size_bytes") ($size_bytes bytes), unpacked $(du -sh "$stage" | cut -f1)"
