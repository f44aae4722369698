// SPDX-License-Identifier: Apache-2.0
// Descriptor 2 through a pipe, or a served command's threads' stderr, while cuconv works: the
// image libraries' lines become log lines.
#include "cli/library_messages.hpp"

#include "common/write_all.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <iostream>
#include <string>

#if defined(__SANITIZE_ADDRESS__)
#define CUCONV_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUCONV_UNDER_ASAN 1
#endif
#endif
#if defined(CUCONV_UNDER_ASAN)
#include <sanitizer/common_interface_defs.h>

#include <cstdint>
#endif

namespace cuconv::cli {

namespace {

/// How the libraries' messages start: libpng's warning and error callbacks, libjpeg's
/// output_message texts, libtiff's default handlers ("TIFFReadDirectory: Warning, ..."),
/// OpenCV's imread_/imwrite_ notes (std::cerr) and its logger ("[ WARN:0@...]").
constexpr std::string_view kLibraryPrefixes[] = {
    "libpng warning:",
    "libpng error:",  // libpng
    "Corrupt JPEG data",
    "Premature end of JPEG file",
    "Invalid SOS parameters",  // libjpeg
    "Inconsistent progression sequence",
    "Unsupported marker type",
    "Warning: ",
    "imread_(",
    "imwrite_(",
    "imdecode_(",
    "OpenCV(",
    "[ WARN:",
    "[ INFO:",
    "[ERROR:",  // OpenCV
};

/// Under AddressSanitizer (the asan preset) the sanitizers' reports go straight to the terminal's
/// descriptor: a report that ends the process would otherwise die in the pipe with it.
void send_sanitizer_reports_to([[maybe_unused]] int terminal_fd) {
#if defined(CUCONV_UNDER_ASAN)
  __sanitizer_set_report_fd(reinterpret_cast<void*>(static_cast<std::uintptr_t>(terminal_fd)));
#endif
}

}  // namespace

std::FILE* terminal_stderr() {
  static std::FILE* const terminal = [] {
    const int fd = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    std::FILE* file = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
    if (file == nullptr) return stderr;
    std::setvbuf(file, nullptr, _IOLBF, 0);
    return file;
  }();
  return terminal;
}

bool is_library_message(std::string_view line) {
  for (std::string_view prefix : kLibraryPrefixes)
    if (line.starts_with(prefix)) return true;
  // libtiff's default handlers: "TIFFReadDirectory: ...", "TIFFFetchNormalTag: ...".
  return line.starts_with("TIFF") && line.find(": ") != std::string_view::npos && line.find(' ') > line.find(':');
}

LibraryMessages::LibraryMessages(bool show_each, spdlog::logger& log, LibraryCapture how, int passthrough_fd)
    : show_each_(show_each), log_(log), passthrough_fd_(passthrough_fd) {
  if (how == LibraryCapture::this_thread) {
    if (!common::stderr_routed_by_thread()) return;  // then the lines reach descriptor 2 as before
    bound_.emplace(static_cast<common::StderrSink*>(this));
    active_ = true;
    return;
  }
  std::FILE* terminal = terminal_stderr();
  if (terminal == stderr) return;
  send_sanitizer_reports_to(::fileno(terminal));
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return;  // messages then reach the terminal as before
  std::fflush(stderr);
  std::cerr.flush();
  if (::dup2(ends[1], STDERR_FILENO) < 0) {
    ::close(ends[0]);
    ::close(ends[1]);
    return;
  }
  ::close(ends[1]);
  active_ = true;
  reader_ = std::thread([this, fd = ends[0]] { read_lines(fd); });
}

LibraryMessages::~LibraryMessages() {
  if (!active_) return;
  try {
    if (bound_) {
      bound_.reset();  // hands on this thread's unfinished line; the threads it started have ended
      summarise();
      return;
    }
    std::fflush(stderr);
    std::cerr.flush();
    // Descriptor 2 back to the terminal closes the pipe's last write end: the reader sees its end.
    ::dup2(::fileno(terminal_stderr()), STDERR_FILENO);
    reader_.join();
    summarise();
  } catch (...) {  // a destructor never throws; the summary is lost, nothing else
  }
}

void LibraryMessages::summarise() {
  if (!show_each_ && count_ > 0)
    log_.warn("{} message(s) from the image libraries, the first: '{}' (-v shows them all)", count_, first_);
}

void LibraryMessages::line(std::string_view raw) {
  if (raw.empty()) return;
  // Routed by thread, the line names the user's paths already (common::shown_paths); read from
  // descriptor 2, the process runs one command, whose paths are every thread's.
  const std::string named = bound_ ? std::string(raw) : common::process_shown_paths(std::string(raw));
  const std::string_view text = named;
  if (!is_library_message(text)) {  // not the libraries': passed on unchanged
    if (passthrough_fd_ < 0) {
      std::fprintf(terminal_stderr(), "%.*s\n", static_cast<int>(text.size()), text.data());
      return;
    }
    static_cast<void>(common::write_all(passthrough_fd_, std::string(text) + '\n'));  // best effort, as a print
    return;
  }
  const std::lock_guard lock(mutex_);
  if (count_++ == 0) first_ = text;
  if (show_each_) log_.info("image library: {}", text);
}

void LibraryMessages::read_lines(int fd) {
  std::string pending;
  std::array<char, 4096> buffer{};
  static_cast<void>(common::read_to_end(fd, buffer, [&](std::string_view chunk) {  // a failed read ends it too
    pending += chunk;
    for (std::size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1))
      line(std::string_view(pending).substr(0, end));
  }));
  line(pending);
  ::close(fd);
}

}  // namespace cuconv::cli
