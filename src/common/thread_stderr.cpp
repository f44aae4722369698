// SPDX-License-Identifier: Apache-2.0
// stderr and std::cerr routed by thread (thread_stderr.hpp). Both streams are unbuffered, so each
// write reaches route() on the thread that made it; a thread's partial line waits in its own
// buffer until its newline.
#include "common/thread_stderr.hpp"

#include "common/write_all.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

namespace cuconv::common {

namespace {

thread_local StderrSink* t_sink = nullptr;
using ShownPaths = std::vector<std::pair<std::string, std::string>>;  ///< local path -> shown, innermost last
thread_local ShownPaths t_shown;
std::mutex g_shown_mutex;
ShownPaths g_shown;  ///< for process_shown_paths: kept, since the pipe's reader sees a line later

/// `text` with the paths of `shown` named as the user gave them.
std::string renamed_paths(std::string text, const ShownPaths& shown) {
  for (auto it = shown.rbegin(); it != shown.rend(); ++it) {
    const auto& [local, name] = *it;
    if (local.empty() || local == name) continue;
    for (std::size_t at = text.find(local); at != std::string::npos;) {
      // /proc/self/fd/1 is no part of /proc/self/fd/12.
      const std::size_t end = at + local.size();
      if (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0) {
        at = text.find(local, end);
        continue;
      }
      text.replace(at, local.size(), name);
      at = text.find(local, at + name.size());
    }
  }
  return text;
}
thread_local std::string t_pending;
std::atomic<bool> g_routed{false};

/// Hands the calling thread's complete lines to its sink, or the text to descriptor 2.
void route(const char* data, std::size_t size) {
  if (t_sink == nullptr) {
    static_cast<void>(write_all(STDERR_FILENO, std::string_view(data, size)));  // nowhere else to say it
    return;
  }
  t_pending.append(data, size);
  std::size_t start = 0;
  for (std::size_t end; (end = t_pending.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string_view line = std::string_view(t_pending).substr(start, end - start);
    if (t_shown.empty())
      t_sink->line(line);
    else
      t_sink->line(shown_paths(std::string(line)));
  }
  t_pending.erase(0, start);
}

ssize_t cookie_write(void*, const char* data, std::size_t size) {
  try {
    route(data, size);
  } catch (...) {  // a sink that throws loses the line, never the writer
  }
  return static_cast<ssize_t>(size);
}

/// std::cerr's buffer: no put area, so every character or block goes to route() at once.
class RoutingBuffer final : public std::streambuf {
 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char byte = traits_type::to_char_type(c);
    cookie_write(nullptr, &byte, 1);
    return c;
  }
  std::streamsize xsputn(const char* data, std::streamsize size) override {
    cookie_write(nullptr, data, static_cast<std::size_t>(size));
    return size;
  }
};

}  // namespace

void route_stderr_by_thread() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::fflush(stderr);
    std::cerr.flush();
    // Never destroyed: std::cerr is flushed after static destructors have run (ios_base::Init).
    static RoutingBuffer* const buffer = new RoutingBuffer;
    std::cerr.rdbuf(buffer);
    cookie_io_functions_t functions{};
    functions.write = cookie_write;
    if (std::FILE* routed = ::fopencookie(nullptr, "w", functions); routed != nullptr) {
      std::setvbuf(routed, nullptr, _IONBF, 0);
      stderr = routed;  // what libpng's and libjpeg's fprintf(stderr, ...) now reach
    }
    g_routed = true;
  });
}

bool stderr_routed_by_thread() noexcept { return g_routed.load(); }

ThreadShownPath::ThreadShownPath(std::string local, std::string shown) {
  if (local.empty() || local == shown) return;
  kept_ = true;
  t_shown.emplace_back(local, shown);
  if (g_routed.load()) return;  // a server: its lines are renamed on the thread that prints them
  const std::lock_guard lock(g_shown_mutex);
  g_shown.emplace_back(std::move(local), std::move(shown));
}

ThreadShownPath::~ThreadShownPath() {
  if (kept_) t_shown.pop_back();
}

std::string shown_paths(std::string text) { return renamed_paths(std::move(text), t_shown); }

std::string process_shown_paths(std::string text) {
  const std::lock_guard lock(g_shown_mutex);
  return renamed_paths(std::move(text), g_shown);
}

StderrSink* thread_stderr_sink() noexcept { return t_sink; }

ThreadStderrSink::ThreadStderrSink(StderrSink* sink) noexcept : previous_(t_sink) { t_sink = sink; }

ThreadStderrSink::~ThreadStderrSink() {
  if (t_sink != nullptr && !t_pending.empty()) {
    try {
      t_sink->line(t_pending);
    } catch (...) {  // a destructor never throws: the unfinished line is lost
    }
  }
  t_pending.clear();
  t_sink = previous_;
}

}  // namespace cuconv::common
