# SPDX-License-Identifier: Apache-2.0
# Install rules: the cuconv front end and its engine (component Runtime), and the library, its public headers and a
# relocatable CMake package (component Development), so another project can write
#   find_package(cuconv 0.1 REQUIRED)  target_link_libraries(app PRIVATE cuconv::cuconv)
# against any prefix (tests/consumer builds exactly that, scripts/test-install.sh runs it).
include(CMakePackageConfigHelpers)

set(CUCONV_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/cuconv" CACHE STRING
    "Where cuconvConfig.cmake goes, relative to the prefix")
set(CUCONV_INSTALL_FILTERDIR "${CMAKE_INSTALL_DATADIR}/cuconv/filters" CACHE STRING
    "Where the preset files (filters/*.mat) go, relative to the prefix")

install(TARGETS cuconv RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
# The engine the front end execs when no server answers: not a command of its own, so off PATH.
install(TARGETS cuconv-engine RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/cuconv COMPONENT Runtime)
# OpenCV's image codecs as a module the engine loads from beside itself (src/codec/opencv_codecs.hpp).
install(TARGETS cuconv_opencv_codecs_module LIBRARY DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/cuconv COMPONENT Runtime)
# The presets are compiled into the binary; the files are installed for reading and for other
# tools (libvips `matrixload` reads the same .mat format).
file(GLOB cuconv_preset_files CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/filters/*.mat")
install(FILES ${cuconv_preset_files} DESTINATION ${CUCONV_INSTALL_FILTERDIR} COMPONENT Runtime)
# The licence in Debian's machine-readable form, where Debian keeps it (/usr/share/doc/cuconv/
# copyright), and the guides the man page points to: README.md and docs/*.md (the measurement
# data and pictures under docs/ stay in the repository).
install(FILES "${PROJECT_SOURCE_DIR}/packaging/copyright" "${PROJECT_SOURCE_DIR}/README.md"
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT Runtime)
file(GLOB cuconv_doc_pages CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*.md")
install(FILES ${cuconv_doc_pages} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT Runtime)
# systemd user units of `cuconv serve` (socket activation; docs/serve.md): enabled by each user with
# `systemctl --user enable --now cuconv.socket`.
install(FILES "${PROJECT_SOURCE_DIR}/packaging/cuconv.socket" "${PROJECT_SOURCE_DIR}/packaging/cuconv.service"
        DESTINATION lib/systemd/user COMPONENT Runtime)
if(CUCONV_BUILD_TESTS)
  # What `cmake --install --component Runtime` (the .deb's contents) puts where the man page says.
  add_test(NAME install_docs
           COMMAND bash "${PROJECT_SOURCE_DIR}/packaging/check-install-docs.sh" "${PROJECT_BINARY_DIR}"
                   "${PROJECT_SOURCE_DIR}")
  set_tests_properties(install_docs PROPERTIES LABELS cpu)
endif()

# The library: a static archive (device code compiled without relocatable device code, so a
# consumer links it with its host linker and needs no CUDA language of its own).
install(TARGETS cuconv_core cuconv_opencv_codecs EXPORT cuconvTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/cuconv" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT Development FILES_MATCHING PATTERN "*.hpp")
install(FILES "${PROJECT_BINARY_DIR}/generated/cuconv/version.hpp"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cuconv COMPONENT Development)

# The package: targets, config (finds OpenCV's three modules and the CUDA runtime the static
# library needs), version file. SameMajorVersion: 0.x releases are compatible only with 0.x.
install(EXPORT cuconvTargets NAMESPACE cuconv:: DESTINATION ${CUCONV_INSTALL_CMAKEDIR}
        COMPONENT Development)
# The static library passes the libraries it links on to its users, so the config must find each
# imported target it links: a find_dependency() line for every one the build really links (the
# table: target, package). OpenCV::modules and ::imgproc, WebP::webp, CUDA::* and Threads are always found by the config.
set(CUCONV_CONFIG_DEPENDENCIES "")
get_target_property(cuconv_core_links cuconv_core LINK_LIBRARIES)
foreach(entry IN ITEMS "JPEG::JPEG JPEG" "TIFF::TIFF TIFF" "exiv2lib exiv2")
  separate_arguments(entry)
  list(GET entry 0 dependency_target)
  list(GET entry 1 dependency_package)
  if(dependency_target IN_LIST cuconv_core_links)
    string(APPEND CUCONV_CONFIG_DEPENDENCIES "find_dependency(${dependency_package})\n")
    list(REMOVE_ITEM cuconv_core_links ${dependency_target})
  endif()
endforeach()
foreach(link IN LISTS cuconv_core_links)
  if(TARGET "${link}" AND NOT link MATCHES "^(OpenCV::modules|OpenCV::imgproc|WebP::webp|CUDA::.*|Threads::Threads)$")
    message(WARNING "cuconv_core links ${link}: add its package to the find_dependency table in "
                    "cmake/cuconvInstall.cmake, or find_package(cuconv) fails for users")
  endif()
endforeach()
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/cuconvConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cuconvConfig.cmake" INSTALL_DESTINATION ${CUCONV_INSTALL_CMAKEDIR})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/cuconvConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES "${PROJECT_BINARY_DIR}/cuconvConfig.cmake" "${PROJECT_BINARY_DIR}/cuconvConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/FindOpenCVModules.cmake" "${PROJECT_SOURCE_DIR}/cmake/FindWebP.cmake"
        DESTINATION ${CUCONV_INSTALL_CMAKEDIR} COMPONENT Development)
