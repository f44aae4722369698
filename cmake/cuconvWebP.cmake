# libwebp for cuconv_core (cmake/FindWebP.cmake). Kept apart only until the two lines below move
# into CMakeLists.txt (find_package next to exiv2's, WebP::webp into cuconv_core's PRIVATE links,
# before cmake/cuconvInstall.cmake reads those links for the package's find_dependency lines).
find_package(WebP REQUIRED)  # lossless WebP keeping transparent pixels' colour (src/codec/image_io.cpp)
target_link_libraries(cuconv_core PRIVATE WebP::webp)
