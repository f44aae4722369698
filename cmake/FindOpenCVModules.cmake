# SPDX-License-Identifier: Apache-2.0
# OpenCV's CMake package (OpenCVConfig.cmake) ships only in Debian's libopencv-dev, which pulls in
# every OpenCV module. We need three, from libopencv-{core,imgproc,imgcodecs}-dev, so find them
# directly and expose one imported target, OpenCV::modules, with the headers as system headers.
include(FindPackageHandleStandardArgs)

find_path(OpenCVModules_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4)
set(_cuconv_opencv_libs "")
foreach(module core imgproc imgcodecs)
  find_library(OpenCVModules_${module}_LIBRARY NAMES opencv_${module})
  list(APPEND _cuconv_opencv_libs OpenCVModules_${module}_LIBRARY)
endforeach()
find_package_handle_standard_args(OpenCVModules REQUIRED_VARS OpenCVModules_INCLUDE_DIR ${_cuconv_opencv_libs})

# OpenCV::imgproc is core and imgproc alone: imgcodecs, with its dependencies (GDAL, GDCM ...), is for the
# programs that read and write images through OpenCV (src/codec/opencv_codecs.hpp).
if(OpenCVModules_FOUND AND NOT TARGET OpenCV::modules)
  add_library(OpenCV::imgproc INTERFACE IMPORTED)
  set_target_properties(OpenCV::imgproc PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${OpenCVModules_INCLUDE_DIR}")
  target_link_libraries(OpenCV::imgproc INTERFACE ${OpenCVModules_imgproc_LIBRARY} ${OpenCVModules_core_LIBRARY})
  add_library(OpenCV::modules INTERFACE IMPORTED)
  target_link_libraries(OpenCV::modules INTERFACE ${OpenCVModules_imgcodecs_LIBRARY} OpenCV::imgproc)
endif()
