// SPDX-License-Identifier: Apache-2.0
// A stand-in for `cuconv serve` in tests/cpu/test_serve_*.cpp: the real transport (run_server) with a
// handler that exercises RemoteFiles the way the engine does, without the engine (no OpenCV, no
// CUDA). Commands (argv after the program name):
//   --version                      prints a version line
//   copy IN OUT [--overwrite] [--slow-ms N] [--stoppable]
//                                  open_input, kind, create_temp, write through /proc/self/fd/N,
//                                  "temp written" on stderr, sleep N ms, publish; exit 4 when OUT
//                                  exists and --overwrite is not given. --stoppable: the sleep
//                                  ends at the client's forwarded signal, which discards the
//                                  temporary file, says "stopped by signal N", and exits 128 + N
//   list DIR                       the folder's names, sorted, one a line
//   cat                            copies the client's stdin to its stdout
//   exit N                         exits N
// Options: --socket PATH, --idle SECONDS, --max-clients N, --ping-ms N, --stall-ms N, --sndbuf
// BYTES (each connection's SO_SNDBUF), --identity ID (the engine identity a client must name),
// --build TEXT, --watch FILE (exit once idle when FILE is replaced); socket activation when
// LISTEN_FDS is set. Like the product's server it leaves its working folder for / once bound.
//   pwd                            prints the server's working folder
// `--probe SOCKET` instead is a bare client that skips the client's own checks: it sends Hello and
// prints the server's first answer (the test of the server's uid check runs it as another user).
#include "serve/server.hpp"

#include <cuconv/error.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

using namespace cuconv;

void print(int fd, const std::string& text) {
  [[maybe_unused]] const ssize_t n = ::write(fd, text.data(), text.size());
}

std::string read_all(const std::string& path) {
  std::string data;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::bad_input, path + ": " + std::strerror(errno));
  char buffer[65536];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) data.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return data;
}

int copy(const std::vector<std::string>& args, serve::ClientSession& session) {
  if (args.size() < 4) return 2;
  const std::string& input = args[2];
  const std::string& output = args[3];
  bool overwrite = false;
  int slow_ms = 0;
  bool stoppable = false;
  for (std::size_t i = 4; i < args.size(); ++i) {
    if (args[i] == "--overwrite") overwrite = true;
    if (args[i] == "--stoppable") stoppable = true;
    if (args[i] == "--slow-ms" && i + 1 < args.size()) slow_ms = std::atoi(args[++i].c_str());
  }
  auto& files = session.files();
  const engine::OpenedFile in = files.open_input(input);
  const std::string data = read_all(in.local_path());
  if (files.kind(output, false) == engine::FileKind::directory) {
    print(session.err_fd(), output + ": is a folder\n");
    return 4;
  }
  auto temp = files.create_temp(output);
  const int out = ::open(temp.file.local_path().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (out < 0 || ::write(out, data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    files.discard(temp);
    throw Error(ErrorKind::output, output + ": cannot write");
  }
  ::close(out);
  print(session.err_fd(), "temp written\n");
  const auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(slow_ms);
  while (std::chrono::steady_clock::now() < wake) {
    std::this_thread::sleep_for(std::chrono::milliseconds(stoppable ? 5 : slow_ms));
    if (const int signal = stoppable ? session.interrupt_signal() : 0; signal != 0) {
      files.discard(temp);
      print(session.err_fd(), "stopped by signal " + std::to_string(signal) + "\n");
      return 128 + signal;
    }
  }
  if (!files.publish(temp, output, overwrite)) {
    print(session.err_fd(), output + ": exists (not replaced)\n");
    return 4;
  }
  print(session.err_fd(), "copied " + input + " -> " + output + "\n");
  return 0;
}

int handle(const serve::ClientRequest& request, serve::ClientSession& session) {
  const auto& args = request.argv;
  try {
    if (args.size() >= 2 && args[1] == "--version") {
      print(session.out_fd(), "cuconv test server\n");
      return 0;
    }
    if (args.size() >= 2 && args[1] == "copy") return copy(args, session);
    if (args.size() == 3 && args[1] == "list") {
      auto names = session.files().list_directory(args[2]);
      std::sort(names.begin(), names.end());
      std::string text;
      for (const auto& name : names) text += name + "\n";
      print(session.out_fd(), text);
      return 0;
    }
    if (args.size() == 2 && args[1] == "cat") {
      char buffer[4096];
      ssize_t n = 0;
      while ((n = ::read(session.in_fd(), buffer, sizeof buffer)) > 0) print(session.out_fd(), std::string(buffer, n));
      return 0;
    }
    if (args.size() == 3 && args[1] == "exit") return std::atoi(args[2].c_str());
    if (args.size() == 2 && args[1] == "pwd") {
      char cwd[4096];
      print(session.out_fd(), std::string(::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "?") + "\n");
      return 0;
    }
  } catch (const Error& e) {
    print(session.err_fd(), std::string("cuconv: ") + e.what() + "\n");
    return static_cast<int>(exit_code_for(e.kind()));
  }
  print(session.err_fd(), "usage: copy IN OUT | list DIR | cat | exit N | pwd | --version\n");
  return 2;
}

}  // namespace

/// --probe: connect, Hello, print "welcome", "queued" or "refused: MESSAGE".
int probe(const char* path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path, sizeof address.sun_path - 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    std::printf("connect: %s\n", std::strerror(errno));
    return 1;
  }
  serve::Channel channel{serve::UniqueFd(fd)};
  (void)channel.send(serve::Hello{});
  const serve::Received answer = channel.receive(5000);
  if (answer.status != serve::Received::Status::message) {
    std::printf("no answer\n");
    return 1;
  }
  if (const auto* refused = std::get_if<serve::Refused>(&answer.message)) {
    std::printf("refused: %s\n", refused->message.c_str());
  } else {
    std::printf("%s\n", std::holds_alternative<serve::Welcome>(answer.message) ? "welcome" : "other");
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--probe") == 0) return probe(argv[2]);
  serve::ServerOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string option = argv[i];
    if (option == "--socket")
      options.socket_path = argv[i + 1];
    else if (option == "--idle")
      options.idle_exit_seconds = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (option == "--max-clients")
      options.max_clients = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (option == "--ping-ms")
      options.ping_interval_ms = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (option == "--stall-ms")
      options.stall_ms = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (option == "--sndbuf")
      options.socket_buffer_bytes = std::atoi(argv[i + 1]);
    else if (option == "--identity")
      options.identity = argv[i + 1];
    else if (option == "--build")
      options.build = argv[i + 1];
    else if (option == "--watch")
      options.executable = argv[i + 1];
  }
  options.leave_working_folder = true;  // as the product's server: nothing depends on its folder
  return serve::run_server(options, handle);
}
