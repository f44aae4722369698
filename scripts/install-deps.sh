#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian/Ubuntu packages needed to build cuconv. Idempotent: when everything is
# already installed it only runs dpkg-query (no apt-get update, no network).
# CUDA is NOT installed here (it comes from NVIDIA's installer / the machine image); we only
# check that nvcc is present. nvJPEG's header and library (the GPU JPEG codec, issue 25) come from
# the toolkit when it has them, else from NVIDIA's nvidia-nvjpeg wheel (pinned below), unpacked
# into third_party/nvjpeg/ where CMake looks for it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  cmake ninja-build g++
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  libcli11-dev libspdlog-dev doctest-dev nlohmann-json3-dev
  libjpeg-dev   # JPEG input through libjpeg (its warnings refuse truncated data)
  libtiff-dev   # TIFF output (lossless float, 16S in colour)
  libexiv2-dev  # EXIF, ICC and XMP kept from input to output
  libwebp-dev   # WebP output through libwebp itself (lossless keeps transparent pixels exact)
  zlib1g-dev  # tests craft PNG files with valid CRCs
  help2man    # the man page, generated from cuconv --help at build time
  dpkg-dev file  # cpack -G DEB: dpkg-shlibdeps works out the package's Depends
  zsh         # the zsh completion is tested by running it (ctest docs_match_help)
  libvips-tools  # the vips command: ctest libvips_matrixload loads filters/*.mat in libvips
  imagemagick python3-opencv  # ctest coming_from: docs/coming-from.md's rows against convert and cv2
  bash-completion  # ctest completion_setup: docs/install.md's lines that turn tab completion on
  python3-dev python3-pip  # the Python package (python/): Python.h; its modules below come through pip
)

# Collect the packages that are not fully installed ("install ok installed").
missing=()
for pkg in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if (( ${#missing[@]} > 0 )); then
  echo "install-deps: installing ${missing[*]}"
  # Root runs apt-get directly; otherwise go through sudo if there is one.
  sudo_cmd=()
  if (( EUID != 0 )); then
    if command -v sudo >/dev/null 2>&1; then
      sudo_cmd=(sudo)
    else
      echo "install-deps: not root and sudo is not available; install as root: ${missing[*]}" >&2
      exit 1
    fi
  fi
  # Package lists may be absent (slim images) or stale: refresh only when something is missing.
  # `env` because sudo drops DEBIAN_FRONTEND from the environment by default.
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all ${#packages[@]} packages already installed"
fi

# nvcc: CMake honours $CUDACXX, and CMakeLists.txt falls back to /usr/local/cuda/bin/nvcc.
if [[ -n "${CUDACXX:-}" && -x "${CUDACXX}" ]]; then
  nvcc_path="$CUDACXX"
elif command -v nvcc >/dev/null 2>&1; then
  nvcc_path="$(command -v nvcc)"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  nvcc_path=/usr/local/cuda/bin/nvcc
else
  cat >&2 <<'EOF'
install-deps: nvcc (the CUDA compiler) was not found on PATH nor at /usr/local/cuda/bin/nvcc.
  This script does not install CUDA. Install the CUDA Toolkit (12.x or newer) from NVIDIA
  (https://developer.nvidia.com/cuda-downloads) or your distribution's nvidia-cuda-toolkit,
  then put its bin/ on PATH or set CUDACXX=/path/to/nvcc.
EOF
  exit 1
fi
echo "install-deps: nvcc: $nvcc_path ($("$nvcc_path" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"

# ---- nvJPEG: nvjpeg.h and libnvjpeg.so.13 ---------------------------------------------------------
# CUDA 13.0 update 1's nvJPEG (the H100 toolkit's too): any 13.x library runs the code built with
# it, and this one makes its library handle in half the time of the later 13.x wheels measured
# (bench/results/gpu-jpeg-notes.md, "What limits it").
nvjpeg_wheel_version=13.0.1.86
nvjpeg_dir=third_party/nvjpeg
cuda_root="$(dirname "$(dirname "$nvcc_path")")"
if [[ -f "$cuda_root/include/nvjpeg.h" ]]; then
  echo "install-deps: nvjpeg: $cuda_root/include/nvjpeg.h (CUDA toolkit)"
elif [[ -f "$nvjpeg_dir/include/nvjpeg.h" && "$(cat "$nvjpeg_dir/VERSION" 2>/dev/null)" == "$nvjpeg_wheel_version" ]]; then
  echo "install-deps: nvjpeg: $nvjpeg_dir (nvidia-nvjpeg $nvjpeg_wheel_version, already unpacked)"
else
  echo "install-deps: fetching nvidia-nvjpeg==$nvjpeg_wheel_version (nvjpeg.h, libnvjpeg.so.13)"
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "install-deps: python3 -m pip is needed to fetch nvJPEG (or install a CUDA toolkit that has nvjpeg.h);" \
         "without it cuconv builds without the GPU JPEG codec" >&2
    exit 1
  fi
  wheel_tmp="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform "manylinux2014_$(uname -m)" "nvidia-nvjpeg==$nvjpeg_wheel_version" -d "$wheel_tmp"
  python3 -m zipfile -e "$wheel_tmp"/nvidia_nvjpeg-*.whl "$wheel_tmp/unpacked"
  rm -rf "$nvjpeg_dir"
  mkdir -p "$nvjpeg_dir"
  cp -r "$wheel_tmp"/unpacked/nvidia/cu13/include "$wheel_tmp"/unpacked/nvidia/cu13/lib "$nvjpeg_dir/"
  cp "$wheel_tmp"/unpacked/nvidia_nvjpeg-*.dist-info/licenses/License.txt "$nvjpeg_dir/LICENSE.txt"
  echo "$nvjpeg_wheel_version" > "$nvjpeg_dir/VERSION"
  rm -rf "$wheel_tmp"
  echo "install-deps: nvjpeg: unpacked into $nvjpeg_dir"
fi

# ---- the Python package (python/, docs/python.md) ------------------------------------------------
# What building it (nanobind, scikit-build-core) and its pytest suite (pytest, NumPy, cv2 as the
# reference) need, in the python3 on PATH; pip only for what that python3 lacks.
python_missing=()
for entry in nanobind:nanobind scikit_build_core:scikit-build-core numpy:numpy pytest:pytest cv2:opencv-python-headless; do
  python3 -c "import ${entry%%:*}" >/dev/null 2>&1 || python_missing+=("${entry#*:}")
done
if (( ${#python_missing[@]} > 0 )); then
  echo "install-deps: pip installing ${python_missing[*]} for $(command -v python3)"
  pip_flags=(--quiet)
  # Debian's own python3 refuses pip installs outside a virtual environment (PEP 668) unless told.
  if python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    pip_flags+=(--break-system-packages)
  fi
  python3 -m pip install "${pip_flags[@]}" "${python_missing[@]}"
else
  echo "install-deps: python3 has nanobind, scikit-build-core, numpy, pytest and cv2"
fi
