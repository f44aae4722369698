#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pack what bench/cudnn_peer.cu needs of cuDNN into one tarball to carry to a GPU node (which has CUDA but no cuDNN):
#
#   scripts/cudnn-peer-pack.sh [--set jit|legacy] [--version V] OUT_DIR
#
# -> OUT_DIR/cudnn-peer.tar.xz with
#      include/   cudnn*.h (what `#include <cudnn.h>` pulls in)
#      lib/       the cuDNN libraries of the set, under their SONAMEs (libcudnn*.so.9), plus libcudnn*.so links
#      licenses/  cuDNN's license, from the wheel
#    and OUT_DIR/cudnn-peer.tar.xz.info (version, set, files, sizes: a rerun with the same inputs does nothing).
#
# On the node:
#   mkdir -p /tmp/cudnn && tar -xJf cudnn-peer.tar.xz -C /tmp/cudnn
#   nvcc -O2 -std=c++17 -arch=native bench/cudnn_peer.cu -I/tmp/cudnn/include -L/tmp/cudnn/lib -lcudnn \
#        -o /tmp/cudnn_peer
#   LD_LIBRARY_PATH=/tmp/cudnn/lib:/usr/local/cuda/lib64 /tmp/cudnn_peer > cudnn.jsonl
#
# Sets (xz -9 sizes measured for the versions named):
#   jit     libcudnn + libcudnn_graph + libcudnn_engines_runtime_compiled: cuDNN's GRAPH_JIT_ONLY configuration. Graph
#           (backend) API only, kernels compiled at run time by the node's NVRTC (libnvrtc.so.13 from
#           /usr/local/cuda/lib64). 11.0 MB for 9.12.0.46, 12.9 MB for 9.19.0.56, 56 MB for 9.28.0.42 (whose
#           libcudnn_graph grew from 4 MB to 149 MB). Built with 9.12 or 9.13, cudnn_peer sets
#           CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY itself when the precompiled engines are missing (9.16 and later do so on
#           their own). Default.
#   legacy  libcudnn + libcudnn_graph + libcudnn_ops + libcudnn_cnn + libcudnn_engines_precompiled: what the legacy
#           convolution API (cudnnFindConvolutionForwardAlgorithmEx, cudnnConvolutionForward) needs; its kernels
#           (implicit GEMM, FFT, Winograd) exist only in the precompiled engines. About 255 MB for 9.28: far over
#           what can be carried, kept for machines where size does not matter.
#
# Environment: CUDNN_PEER_VERSION (default 9.12.0.46, the first cuDNN for CUDA 13 on PyPI and the only version measured
# under 12 MB; 9.13 to 9.18 were not measured), CUDNN_PEER_SET (default jit), CUDNN_PEER_MAX_MB (default 12; the
# pack fails when the tarball is larger; 0 turns the check off), CUDNN_PEER_CACHE (where wheels are kept, default
# ~/.cache/cuconv/cudnn-wheels).
# Needs python3 with pip (the wheel comes from PyPI: nvidia-cudnn-cu13), xz and GNU tar.
set -euo pipefail

die() { echo "cudnn-peer-pack: error: $*" >&2; exit 1; }
log() { echo "cudnn-peer-pack: $*"; }
usage() { echo "usage: $0 [--set jit|legacy] [--version V] OUT_DIR" >&2; exit 2; }

version="${CUDNN_PEER_VERSION:-9.12.0.46}"
set_name="${CUDNN_PEER_SET:-jit}"
max_mb="${CUDNN_PEER_MAX_MB:-12}"
cache="${CUDNN_PEER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cuconv/cudnn-wheels}"
out_dir=""
while (($#)); do
  case "$1" in
    --set) (($# >= 2)) || usage; set_name="$2"; shift 2 ;;
    --version) (($# >= 2)) || usage; version="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "cudnn-peer-pack: unknown option $1" >&2; usage ;;
    *) [[ -z "$out_dir" ]] || usage; out_dir="$1"; shift ;;
  esac
done
[[ -n "$out_dir" ]] || usage
[[ "$version" =~ ^9\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "version '$version' is not a cuDNN 9 version (e.g. 9.12.0.46)"
[[ "$max_mb" =~ ^[0-9]+$ ]] || die "CUDNN_PEER_MAX_MB must be a whole number of MB, not '$max_mb'"

case "$set_name" in
  jit) libs=(libcudnn.so.9 libcudnn_graph.so.9 libcudnn_engines_runtime_compiled.so.9) ;;
  legacy)
    libs=(libcudnn.so.9 libcudnn_graph.so.9 libcudnn_ops.so.9 libcudnn_cnn.so.9 libcudnn_engines_precompiled.so.9) ;;
  *) die "unknown set '$set_name' (jit or legacy)" ;;
esac

for tool in python3 xz tar; do
  command -v "$tool" > /dev/null || die "$tool not found"
done
python3 -m pip --version > /dev/null 2>&1 || die "pip not found for python3 (python3 -m pip)"

mkdir -p "$out_dir" || die "cannot create $out_dir"
out_dir="$(cd "$out_dir" && pwd)"
tarball="$out_dir/cudnn-peer.tar.xz"
info="$tarball.info"

check_size() {
  local bytes mb
  bytes="$(stat -c %s "$tarball")"
  mb="$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')"
  log "$tarball: $mb MB ($bytes bytes), set $set_name, cuDNN $version"
  if ((max_mb > 0 && bytes > max_mb * 1000000)); then
    echo "cudnn-peer-pack: error: the tarball is $mb MB, over the budget of $max_mb MB (CUDNN_PEER_MAX_MB)." >&2
    echo "  The smallest measured: --set jit --version 9.12.0.46 (11 MB). CUDNN_PEER_MAX_MB=0 skips this check." >&2
    exit 3
  fi
}

# 1. The wheel (kept in the cache; pip verifies it against PyPI's hash on download).
mkdir -p "$cache" || die "cannot create the wheel cache $cache"
wheel="$(find "$cache" -maxdepth 1 -name "nvidia_cudnn_cu13-$version-*.whl" | sort | tail -n 1)"
if [[ -z "$wheel" ]]; then
  log "downloading nvidia-cudnn-cu13==$version (about 500 MB) into $cache"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_27_x86_64 \
      --python-version 3.12 --implementation py -d "$cache" "nvidia-cudnn-cu13==$version" \
    || die "pip could not download nvidia-cudnn-cu13==$version (is PyPI reachable? is the version right?)"
  wheel="$(find "$cache" -maxdepth 1 -name "nvidia_cudnn_cu13-$version-*.whl" | sort | tail -n 1)"
  [[ -n "$wheel" ]] || die "pip finished but no nvidia_cudnn_cu13-$version-*.whl is in $cache"
fi
wheel_id="$(basename "$wheel") $(stat -c %s "$wheel")"
want_info="version=$version set=$set_name wheel=$wheel_id libs=${libs[*]}"
if [[ -f "$tarball" && -f "$info" ]] && [[ "$(head -n 1 "$info")" == "$want_info" ]]; then
  log "up to date"
  check_size
  exit 0
fi

# 2. Unpack the headers, the set's libraries and the license from the wheel into a staging folder.
stage="$(mktemp -d "${TMPDIR:-/tmp}/cudnn-peer-pack.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
python3 - "$wheel" "$stage" "${libs[@]}" << 'EOF' || die "could not unpack $wheel"
import os, shutil, sys, zipfile

wheel, stage, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    def copy(member, dest):
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(member) as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst)
    headers = [n for n in names if n.startswith("nvidia/cudnn/include/") and n.endswith(".h")]
    if not any(n.endswith("/cudnn.h") for n in headers):
        sys.exit("cudnn.h is not in the wheel")
    for n in headers:
        copy(n, os.path.join(stage, "include", os.path.basename(n)))
    for lib in libs:
        member = "nvidia/cudnn/lib/" + lib
        if member not in names:
            sys.exit(lib + " is not in the wheel")
        copy(member, os.path.join(stage, "lib", lib))
        os.chmod(os.path.join(stage, "lib", lib), 0o755)
    for n in names:
        if "/licenses/" in n or n.endswith("/LICENSE") or n.endswith("License.txt"):
            copy(n, os.path.join(stage, "licenses", os.path.basename(n)))
EOF

# 3. Development links (-lcudnn) and a check that every cuDNN library a packed one needs is packed too.
for lib in "${libs[@]}"; do
  ln -s "$lib" "$stage/lib/${lib%.9}"
done
if command -v readelf > /dev/null; then
  for lib in "${libs[@]}"; do
    soname="$(readelf -d "$stage/lib/$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
    [[ "$soname" == "$lib" ]] || die "$lib has SONAME '$soname'; the pack expects the file name to be the SONAME"
    while read -r needed; do
      [[ -e "$stage/lib/$needed" ]] || die "$lib needs $needed, which is not in the set '$set_name'"
    done < <(readelf -d "$stage/lib/$lib" | sed -n 's/.*(NEEDED).*\[\(libcudnn[^]]*\)\]/\1/p')
  done
else
  log "readelf not found: skipping the dependency check"
fi

# 4. The tarball (stable order and owners, so equal inputs give equal contents), then the record of what is in it.
log "compressing ${libs[*]} (xz -9e; a minute or more)"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$stage" -cf - include lib licenses \
  | xz -9e -T0 > "$tarball.tmp" || die "tar/xz failed"
mv -f "$tarball.tmp" "$tarball"
{
  echo "$want_info"
  (cd "$stage" && find include lib licenses \( -type f -o -type l \) -printf '%p %s\n' | sort)
} > "$info"
check_size
