# SPDX-License-Identifier: Apache-2.0
# libwebp (Debian libwebp-dev), for the lossless WebP encoder that keeps the colour of fully
# transparent pixels (src/codec/image_io.cpp: OpenCV's own WebP encoder cannot). One imported
# target, WebP::webp. Installed next to cuconvConfig.cmake, which finds it for the static library's
# users the same way.
include(FindPackageHandleStandardArgs)

find_path(WebP_INCLUDE_DIR webp/encode.h)
find_library(WebP_LIBRARY NAMES webp)
find_package_handle_standard_args(WebP REQUIRED_VARS WebP_LIBRARY WebP_INCLUDE_DIR)

if(WebP_FOUND AND NOT TARGET WebP::webp)
  add_library(WebP::webp UNKNOWN IMPORTED)
  set_target_properties(WebP::webp PROPERTIES IMPORTED_LOCATION "${WebP_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${WebP_INCLUDE_DIR}")
endif()
mark_as_advanced(WebP_INCLUDE_DIR WebP_LIBRARY)
