# SPDX-License-Identifier: Apache-2.0
# `cpack -G DEB` in a build folder: cuconv_<version>_amd64.deb with the binary in /usr/bin, the man
# page, the bash and zsh completions and the presets (component Runtime; scripts/package.sh).
# Depends comes from dpkg-shlibdeps on the binary: the OpenCV, spdlog and fmt runtime packages
# and libc/libstdc++. The CUDA runtime is linked statically (CUDA::cudart_static), so the package
# needs no CUDA package; libcuda.so.1 (the NVIDIA driver) is loaded at run time when present, and
# without it cuconv filters on the CPU. cuFFT (the fft variant) is loaded with dlopen when found.
set(CPACK_PACKAGE_NAME cuconv)
set(CPACK_PACKAGE_VENDOR "cuconv")
set(CPACK_PACKAGE_CONTACT "cuconv maintainers <cuconv@invalid>" CACHE STRING "Maintainer field of the .deb")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
  "cuconv filters images with a convolution kernel on an NVIDIA GPU, with the results of OpenCV's cv::filter2D (borders, anchor, delta, output depth, rounding). One image or a folder of images (batch mode, sharded for Slurm array jobs); without a GPU it filters with OpenCV on the CPU.")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

# Only the Runtime component goes into the .deb; headers, library and CMake package are for
# `cmake --install` (docs/install.md).
set(CPACK_COMPONENTS_ALL Runtime)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)

set(CPACK_DEBIAN_PACKAGE_NAME cuconv)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # cuconv_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION graphics)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Packages the binary needs that dpkg-shlibdeps cannot see (it reads only DT_NEEDED entries).
# >>> exiv2: once cuconv links libexiv2, dpkg-shlibdeps adds libexiv2-27 by itself and nothing
# >>> is needed here; only a library loaded with dlopen must be named in this list.
set(CUCONV_DEB_EXTRA_DEPENDS "" CACHE STRING "Extra Depends of the .deb, comma-separated")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${CUCONV_DEB_EXTRA_DEPENDS}")
# Tab completion needs bash-completion loaded in the shell: without it the completion installed
# under share/bash-completion is never read.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bash-completion")

include(CPack)
cpack_add_component(Runtime DISPLAY_NAME "cuconv command-line tool")
cpack_add_component(Development DISPLAY_NAME "cuconv library, headers and CMake package")
