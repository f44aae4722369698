// SPDX-License-Identifier: Apache-2.0
#pragma once
// How the batch pipeline starts its stage threads (as many as the address space allows, each
// printing into its starter's stderr sink) and steps the codec threads' priority down.
#include "common/thread_stderr.hpp"

#include <cuconv/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace cuconv::engine {

/// Starts up to `count` threads running `body` into `threads`: fewer when the process cannot start
/// more (each thread's stack is a mapping, which an address-space limit, `ulimit -v`, refuses).
/// When `required` and none starts: Error{bad_input}, as the other out-of-memory failures of an
/// input are (docs/usage.md, exit 3).
template <class Body>
inline void start_threads(std::vector<std::jthread>& threads, std::size_t count, const Body& body, bool required) {
  // Each thread prints into its starter's stderr sink: a served command's libraries reach its client.
  common::StderrSink* const sink = common::thread_stderr_sink();
  for (std::size_t i = 0; i < count; ++i) {
    try {
      threads.emplace_back([sink, body] {
        const common::ThreadStderrSink bound(sink);
        body();
      });
    } catch (const std::system_error& e) {
      if (!required) return;
      throw Error(ErrorKind::bad_input, std::string("not enough memory to start a thread (") + e.what() +
                                            "; free memory or raise the address-space limit, ulimit -v)");
    }
  }
}

/// Nice levels the decode and encode threads step down while filter threads run beside them.
/// Those threads outnumber the cores, and a filter thread sleeps on every GPU copy it waits for:
/// at equal priority it then waits for a time slice each time it wakes, with the images behind it.
constexpr int kCodecNiceSteps = 5;

/// Lowers the calling thread's CPU priority by `steps` nice levels (on Linux nice is per thread).
/// A failure changes nothing but the scheduling, so it is ignored.
inline void lower_thread_priority(int steps) noexcept {
#ifdef __linux__
  const auto thread = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, thread);
  if (errno == 0) (void)::setpriority(PRIO_PROCESS, thread, std::min(current + steps, 19));
#else
  (void)steps;
#endif
}

}  // namespace cuconv::engine
