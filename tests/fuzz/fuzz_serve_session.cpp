// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for a served session (src/serve/server.cpp): a real server (run_server, on a
// private socket, in this process, with a handler that asks the client for files as a command
// does) is driven by a byte stream read as one client's actions: messages in any order (Request
// before Hello, two Hellos, Replies nobody asked for), raw frames, descriptors attached to any
// message, half-closed connections. After each input the server must still answer a fresh client
// with Welcome, and hold no descriptor of the finished connection once its deadline has passed.
// A crash, a sanitizer report, a hang past the deadlines or a leaked descriptor is a bug.
#include "serve/channel.hpp"
#include "serve/protocol.hpp"
#include "serve/server.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace cuconv::serve;
using Clock = std::chrono::steady_clock;

constexpr unsigned kDeadlineMs = 100;  // Hello and Request each, so a stalled session ends soon

/// Bytes of the input, read front to back; zeros once they run out.
class Bytes {
 public:
  explicit Bytes(std::span<const std::uint8_t> data) : data_(data) {}
  [[nodiscard]] bool empty() const { return at_ >= data_.size(); }
  std::uint8_t u8() { return empty() ? 0 : data_[at_++]; }
  std::string text(std::size_t most = 16) {
    const std::size_t size = std::min<std::size_t>(u8() % (most + 1), data_.size() - std::min(at_, data_.size()));
    std::string s(reinterpret_cast<const char*>(data_.data() + at_), size);
    at_ += size;
    return s;
  }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t at_ = 0;
};

/// A command as the engine's would ask for files: argv[1] names the operation.
int handle(const ClientRequest& request, ClientSession& session) {
  const auto& args = request.argv;
  auto& files = session.files();
  const std::string path = args.size() > 2 ? args[2] : "x";
  const std::string op = args.size() > 1 ? args[1] : "";
  try {
    if (op == "open")
      (void)files.open_input(path);
    else if (op == "kind")
      (void)files.kind(path, true);
    else if (op == "list")
      (void)files.list_directory(path);
    else if (op == "write")
      (void)files.write_output(path, std::span<const unsigned char>(), false);
    else if (op == "mkdir")
      files.make_directories(path);
    else if (op == "same")
      (void)files.same_file(path, path);
    else if (op == "wait")
      (void)session.interrupt_signal();
  } catch (const std::exception&) {
    return 3;
  }
  return static_cast<int>(args.size());
}

/// The server under test, started once and again whenever a session stopped it (a Hello of
/// purpose stop in the fuzzed bytes ends it, as it should).
class FuzzServer {
 public:
  FuzzServer() {
    char folder[] = "/tmp/cuconv-fuzz-session-XXXXXX";
    if (::mkdtemp(folder) == nullptr) std::abort();
    socket_ = std::string(folder) + "/socket";
    null_ = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (::pipe2(stop_, O_CLOEXEC) != 0) std::abort();
    start();
  }
  ~FuzzServer() {
    [[maybe_unused]] const ssize_t n = ::write(stop_[1], "x", 1);
    thread_.join();
  }
  FuzzServer(const FuzzServer&) = delete;
  FuzzServer& operator=(const FuzzServer&) = delete;
  [[nodiscard]] const std::string& socket() const { return socket_; }

  /// A fresh client gets Welcome (the server is restarted first when a session stopped it).
  void check_alive() {
    UniqueFd fd;
    std::string why;
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    for (;;) {
      if (done_) {
        thread_.join();
        start();
      }
      if (connect_socket(socket_, 2000, fd, why) == Connect::ok) break;
      if (Clock::now() > deadline) {  // neither serving nor stopped
        std::fprintf(stderr, "fuzz_serve_session: the server accepts no client: %s\n", why.c_str());
        std::abort();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    Channel channel(std::move(fd));
    if (!channel.send(Hello{})) std::abort();
    for (;;) {
      const Received answer = channel.receive(2000);
      if (answer.status == Received::Status::message && std::holds_alternative<Ping>(answer.message)) continue;
      if (answer.status == Received::Status::message && std::holds_alternative<Welcome>(answer.message)) return;
      if (done_) return;  // it was stopping as this client came: the next check restarts it
      std::fprintf(stderr, "fuzz_serve_session: no Welcome for a fresh client\n");
      std::abort();
    }
  }

 private:
  void start() {
    done_ = false;
    thread_ = std::thread([this] {
      ServerOptions options;
      options.socket_path = socket_;
      options.idle_exit_seconds = 0;
      options.max_clients = 2;
      options.max_waiting = 4;
      options.handle_signals = false;
      options.stop_fd = stop_[0];
      options.log_fd = null_;
      options.ping_interval_ms = 20;
      options.stall_ms = 200;
      options.message_deadline_ms = kDeadlineMs;
      (void)run_server(options, handle);
      done_ = true;
    });
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (::access(socket_.c_str(), F_OK) != 0) {
      if (Clock::now() > deadline) std::abort();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::string socket_;
  int null_ = -1;
  int stop_[2] = {-1, -1};  // written at exit: the server stops
  std::thread thread_;
  std::atomic<bool> done_{false};
};

std::size_t open_descriptors() {
  std::size_t count = 0;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (::readdir(dir) != nullptr) ++count;
    ::closedir(dir);
  }
  return count;
}

/// One well-formed message of a kind the next byte picks, its fields from the input. Hellos are
/// of purpose command or status (stop ends the server; the raw frames may still say it).
Message message_from(Bytes& in) {
  switch (in.u8() % 12) {
    case 0:
      return Hello{kProtocolMagic, kProtocolVersion, in.u8() % 2 ? HelloPurpose::status : HelloPurpose::command,
                   in.text(), in.text()};
    case 1:
      return Hello{kProtocolMagic, in.u8(), HelloPurpose::command, {}, {}};
    case 2: {
      static const char* ops[] = {"open", "kind", "list", "write", "mkdir", "same", "wait", "exit"};
      Request request;
      request.argv = {"cuconv", ops[in.u8() % 8], in.text()};
      if (in.u8() % 4 == 0) request.argv.clear();
      request.cwd = in.text();
      request.environment = {in.text()};
      return request;
    }
    case 3:
      return Reply{static_cast<std::int32_t>(in.u8() % 40),
                   in.text(),
                   static_cast<std::uint32_t>(in.u8() % 6),
                   in.text(),
                   {in.text()},
                   in.u8() % 2 == 1};
    case 4:
      return Interrupt{in.u8()};
    case 5:
      return Ping{};
    case 6:
      return Exit{in.u8()};
    case 7:
      return Welcome{kProtocolVersion, in.u8(), in.u8(), in.text()};
    case 8:
      return Status{};
    case 9:
      return OpenInput{in.text()};
    case 10:
      return CreateScratch{in.text()};
    default:
      return Refused{RefusalReason::bad_message, in.text()};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzServer server;
  // Counted before each session: libFuzzer itself opens some between inputs (its symbolizer's pipes).
  const std::size_t baseline = open_descriptors();
  Bytes in(std::span<const std::uint8_t>(data, size));
  {
    UniqueFd fd;
    std::string why;
    if (connect_socket(server.socket(), 2000, fd, why) == Connect::ok) {
      Channel channel(std::move(fd));
      int steps = 0;
      while (!in.empty() && ++steps < 64) {
        const std::uint8_t action = in.u8();
        switch (action % 6) {
          case 0:
          case 1: {  // a message, with 0-4 descriptors (0-3 of them on purpose, 4: over the bound)
            const Message message = message_from(in);
            std::vector<int> fds;
            for (unsigned i = 0, n = (action >> 3) % 5; i < n; ++i)
              fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
            (void)channel.send(message, fds.size() <= kMaxFds ? std::span<const int>(fds) : std::span<const int>());
            for (int fd_sent : fds) ::close(fd_sent);
            break;
          }
          case 2: {  // a raw frame: any type, any payload, a declared size that may lie
            std::vector<std::uint8_t> frame(kHeaderSize);
            const std::string payload = in.text(64);
            const std::uint32_t declared = in.u8() % 4 == 0 ? in.u8() : static_cast<std::uint32_t>(payload.size());
            for (int i = 0; i < 4; ++i) frame[i] = static_cast<std::uint8_t>(declared >> (8 * i));
            frame[4] = in.u8();
            frame.insert(frame.end(), payload.begin(), payload.end());
            (void)::send(channel.fd(), frame.data(), frame.size(), MSG_NOSIGNAL);
            break;
          }
          case 3: {  // read what the server said (answering nothing)
            for (int reads = 0; reads < 8; ++reads) {
              const Received received = channel.receive(in.u8() % 8);
              if (received.status != Received::Status::message) break;
            }
            channel.drop_fds();
            break;
          }
          case 4:
            ::shutdown(channel.fd(), SHUT_WR);
            break;
          default:
            std::this_thread::sleep_for(std::chrono::milliseconds(in.u8() % 4));
            break;
        }
      }
    }
  }  // the connection closes here
  server.check_alive();
  // The server lets go of everything of that connection within its deadlines.
  const auto deadline = Clock::now() + std::chrono::milliseconds(20 * kDeadlineMs);
  while (open_descriptors() > baseline) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "fuzz_serve_session: %zu descriptors open, %zu before the session:\n", open_descriptors(),
                   baseline);
      if (DIR* dir = ::opendir("/proc/self/fd")) {
        while (const dirent* entry = ::readdir(dir)) {
          char target[256] = {};
          const std::string link = std::string("/proc/self/fd/") + entry->d_name;
          [[maybe_unused]] const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
          std::fprintf(stderr, "  %s -> %s\n", entry->d_name, target);
        }
        ::closedir(dir);
      }
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return 0;
}
