// SPDX-License-Identifier: Apache-2.0
// libtiff's client callbacks on an in-memory file (tiff_memory.hpp).
#include "codec/tiff_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace cuconv::codec {

namespace {

MemoryFile& file_of(thandle_t handle) { return *static_cast<MemoryFile*>(handle); }

std::span<const unsigned char> contents(const MemoryFile& file) {
  return !file.source.empty() ? file.source : std::span<const unsigned char>(file.written);
}

tmsize_t read_proc(thandle_t handle, void* out, tmsize_t size) {
  MemoryFile& file = file_of(handle);
  const auto bytes = contents(file);
  const auto available = file.position < bytes.size() ? bytes.size() - file.position : 0;
  const auto count = std::min<std::uint64_t>(available, static_cast<std::uint64_t>(size));
  if (count > 0) std::memcpy(out, bytes.data() + file.position, count);
  file.position += count;
  return static_cast<tmsize_t>(count);
}

tmsize_t write_proc(thandle_t handle, void* data, tmsize_t size) {
  MemoryFile& file = file_of(handle);
  if (!file.source.empty()) return 0;  // read-only
  const auto end = file.position + static_cast<std::uint64_t>(size);
  if (end > file.written.size()) file.written.resize(end);
  std::memcpy(file.written.data() + file.position, data, static_cast<std::size_t>(size));
  file.position = end;
  return size;
}

toff_t seek_proc(thandle_t handle, toff_t offset, int whence) {
  MemoryFile& file = file_of(handle);
  const std::uint64_t base = whence == SEEK_CUR ? file.position : whence == SEEK_END ? contents(file).size() : 0;
  file.position = base + offset;
  return file.position;
}

int close_proc(thandle_t) { return 0; }
toff_t size_proc(thandle_t handle) { return contents(file_of(handle)).size(); }
int map_proc(thandle_t, void**, toff_t*) { return 0; }
void unmap_proc(thandle_t, void*, toff_t) {}

}  // namespace

TIFF* open_memory_tiff(const std::string& name, const char* mode, MemoryFile& file, TIFFOpenOptions* options) {
  return TIFFClientOpenExt(name.c_str(), mode, &file, read_proc, write_proc, seek_proc, close_proc, size_proc, map_proc,
                           unmap_proc, options);
}

}  // namespace cuconv::codec
