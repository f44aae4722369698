// SPDX-License-Identifier: Apache-2.0
#pragma once
// What libraries print to stderr, sorted by the thread that printed it. A resident server runs
// many clients' commands at once in one process, so descriptor 2 cannot be any one client's; the
// image libraries print their warnings through C's `stderr` and std::cerr from the thread that
// decodes. route_stderr_by_thread() replaces both by streams that hand each line to the sink bound
// to the writing thread (ThreadStderrSink), and pass the text of threads without one to
// descriptor 2 unchanged.
#include <string>
#include <string_view>

namespace cuconv::common {

/// Receives whole lines (without the newline) written to stderr on threads bound to it; called
/// on those threads, so implementations serialise themselves.
class StderrSink {
 public:
  virtual ~StderrSink() = default;
  virtual void line(std::string_view text) = 0;
};

/// Replaces C's `stderr` (glibc lets a program assign it) and std::cerr's buffer by the routing
/// streams; once per process, before threads that print start. Idempotent.
void route_stderr_by_thread();

/// Whether route_stderr_by_thread() has run.
[[nodiscard]] bool stderr_routed_by_thread() noexcept;

/// The sink bound to the calling thread; nullptr when none.
[[nodiscard]] StderrSink* thread_stderr_sink() noexcept;

/// Binds `sink` to the calling thread while alive (nullptr: none), restoring the previous binding
/// after handing on the thread's unfinished last line. Threads a command starts bind their
/// starter's sink, so their libraries' lines reach the same command.
class ThreadStderrSink {
 public:
  explicit ThreadStderrSink(StderrSink* sink) noexcept;
  ~ThreadStderrSink();
  ThreadStderrSink(const ThreadStderrSink&) = delete;
  ThreadStderrSink& operator=(const ThreadStderrSink&) = delete;

 private:
  StderrSink* previous_;
};

/// While alive, the calling thread's lines name `shown` wherever they name `local`: a served
/// command reads its client's files at /proc/self/fd/N, and the libraries (OpenCV's imread notes,
/// libtiff's warnings) name the path they opened; the user gave another. Nested ones apply too.
/// A process of its own, which hears the libraries on descriptor 2 (no thread to tell them by,
/// and later than they printed), keeps the names for its life: see process_shown_paths.
class ThreadShownPath {
 public:
  ThreadShownPath(std::string local, std::string shown);
  ~ThreadShownPath();
  ThreadShownPath(const ThreadShownPath&) = delete;
  ThreadShownPath& operator=(const ThreadShownPath&) = delete;

 private:
  bool kept_ = false;  ///< `local` differs from `shown`: this thread's lines are renamed
};

/// `text` with every path of the calling thread's ThreadShownPath named as the user gave it.
[[nodiscard]] std::string shown_paths(std::string text);

/// `text` with the paths of every ThreadShownPath this process has had named as the user gave
/// them: for a process of its own (stderr not routed by thread), which runs one command; its
/// only renamed path is its copy of standard input (its other paths are the user's own).
[[nodiscard]] std::string process_shown_paths(std::string text);

}  // namespace cuconv::common
