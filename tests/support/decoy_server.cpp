// SPDX-License-Identifier: Apache-2.0
// A decoy on the default socket while ctest runs (tests/CMakeLists.txt, fixture `decoy`): every
// test must use `--server never` or a private socket of a server it started, so a command that
// reaches the socket a user's `cuconv serve` would hold is a defect of the suite. The decoy
// accepts, logs the caller (pid, working folder, command line), says "cuconv-decoy" and closes,
// so the command fails or runs in-process; `check` then fails the run if anything was logged.
//   cuconv_decoy_server start STATE_DIR   takes the default socket (default_socket_path(): the
//                                          environment ctest gives the tests) and returns once
//                                          it listens; the decoy ends with the ctest run that
//                                          started it (its parent), or after 4 hours
//   cuconv_decoy_server check STATE_DIR   stops it; exit 1 when it logged a connection, could not
//                                          take the socket (a server answers there) or died
//                                          early; 77 (skipped) when another ctest run's decoy
//                                          held the socket (that one logs this run's commands)
// Each ctest run keeps its state in STATE_DIR/run-<ctest's pid>. Knows nothing of the protocol,
// so it holds whatever the handshake becomes.
#include "serve/socket_path.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_term(int) { g_stop = 1; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

sockaddr_un address_of(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  return address;
}

constexpr char kBanner[] = "cuconv-decoy\n";

enum class Occupant { none, decoy, other };

/// What accepts connections at `path`: nothing, a decoy (it says its banner at once), or
/// something else (a server waits for the client's Hello).
Occupant occupant(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un address = address_of(path);
  Occupant found = Occupant::none;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
    found = Occupant::other;
    pollfd p{fd, POLLIN, 0};
    char said[sizeof kBanner] = {};
    if (::poll(&p, 1, 500) == 1 && ::read(fd, said, sizeof said - 1) > 0 && std::string(said) == kBanner)
      found = Occupant::decoy;
  }
  ::close(fd);
  return found;
}

std::string link_target(const std::string& path) {
  char target[4096] = {};
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?";
}

/// The caller's pid, working folder and command line, read before its connection closes; empty
/// for another decoy's look at the socket (start, in a second ctest run, of this build or of
/// another checkout's: the same program name).
std::string describe_peer(int connection) {
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) return "an unknown process";
  const std::string proc = "/proc/" + std::to_string(peer.pid);
  const auto program_name = [](const std::string& exe) { return exe.substr(exe.rfind('/') + 1); };
  if (program_name(link_target(proc + "/exe")) == program_name(link_target("/proc/self/exe"))) return {};
  std::string command = slurp(proc + "/cmdline");
  for (char& c : command)
    if (c == '\0') c = ' ';
  return "pid " + std::to_string(peer.pid) + " in " + link_target(proc + "/cwd") + ": " + command;
}

int serve(int listener, const std::string& state, const std::string& socket_path, ino_t socket_inode, bool made_folder,
          const std::string& folder, pid_t ctest) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::hours(4);
  std::ofstream log(state + "/connections.log", std::ios::app);
  while (g_stop == 0 && std::chrono::steady_clock::now() < deadline && ::kill(ctest, 0) == 0) {
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    const int connection = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    if (const std::string peer = describe_peer(connection); !peer.empty())
      log << "connection from " << peer << std::endl;
    [[maybe_unused]] const ssize_t n = ::send(connection, kBanner, sizeof kBanner - 1, MSG_NOSIGNAL);
    ::close(connection);
  }
  // Remove the socket only if it is still this decoy's (nothing replaced it meanwhile).
  struct stat at {};
  if (::lstat(socket_path.c_str(), &at) == 0 && at.st_ino == socket_inode) ::unlink(socket_path.c_str());
  ::close(listener);
  if (made_folder) ::rmdir(folder.c_str());
  return 0;
}

/// This ctest run's state folder in `base`: the run is the parent of both start and check.
std::string run_folder(const std::string& base) { return base + "/run-" + std::to_string(::getppid()); }

int start(const std::string& base) {
  ::mkdir(base.c_str(), 0700);
  const std::string state = run_folder(base);
  ::mkdir(state.c_str(), 0700);
  for (const char* name : {"/pid", "/occupied", "/shared", "/connections.log", "/decoy.err"})
    ::unlink((state + name).c_str());
  const cuconv::serve::SocketPath where = cuconv::serve::default_socket_path();
  switch (occupant(where.path)) {
    case Occupant::none:
      break;
    case Occupant::decoy:
      write_text(state + "/shared", "another ctest run's decoy holds " + where.path +
                                        ": it logs (and fails) that run "
                                        "for any command of this one that reaches it\n");
      std::cout << "decoy: another run's decoy holds " << where.path << "\n";
      return 0;
    case Occupant::other:
      write_text(state + "/occupied", "something answers on " + where.path +
                                          " (a cuconv serve of this user?): the decoy "
                                          "could not take its place, so the suite was not checked against it\n");
      std::cout << "decoy: " << where.path << " is taken; the check will fail\n";
      return 0;
  }
  struct stat before {};
  const bool made_folder = ::stat(where.folder.c_str(), &before) != 0;
  if (!where.from_environment) {
    if (const std::string why = cuconv::serve::prepare_private_folder(where.folder); !why.empty()) {
      std::cerr << "decoy: " << why << "\n";
      return 1;
    }
  }
  struct stat existing {};
  if (::lstat(where.path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      std::cerr << "decoy: " << where.path << " exists and is not a socket; not touching it\n";
      return 1;
    }
    ::unlink(where.path.c_str());  // a stale socket: nothing answered above
  }
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un address = address_of(where.path);
  if (::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 64) != 0) {
    std::cerr << "decoy: cannot listen on " << where.path << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  struct stat bound {};
  ::lstat(where.path.c_str(), &bound);
  const pid_t ctest = ::getppid();
  const pid_t child = ::fork();
  if (child < 0) return 1;
  if (child > 0) {
    write_text(state + "/pid", std::to_string(child) + "\n");
    std::cout << "decoy: listening on " << where.path << " (pid " << child << ")\n";
    return 0;
  }
  ::setsid();
  const int err = ::open((state + "/decoy.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  ::dup2(null, 0);
  ::dup2(null, 1);
  ::dup2(err, 2);
  std::signal(SIGTERM, on_term);
  std::signal(SIGINT, on_term);
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  ::_exit(
      serve(listener, state, where.path, bound.st_ino, made_folder && !where.from_environment, where.folder, ctest));
}

int check(const std::string& base) {
  const std::string state = run_folder(base);
  if (const std::string occupied = slurp(state + "/occupied"); !occupied.empty()) {
    std::cout << "decoy: FAIL: " << occupied;
    return 1;
  }
  if (const std::string shared = slurp(state + "/shared"); !shared.empty()) {
    std::cout << "decoy: not checked here: " << shared;
    ::unlink((state + "/shared").c_str());
    ::rmdir(state.c_str());
    return 77;
  }
  const std::string pid_text = slurp(state + "/pid");
  if (pid_text.empty()) {
    std::cout << "decoy: FAIL: no decoy was started (run the fixture's setup, decoy_start)\n";
    return 1;
  }
  const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
  const bool was_running = ::kill(pid, SIGTERM) == 0;
  for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::unlink((state + "/pid").c_str());
  const std::string connections = slurp(state + "/connections.log");
  if (!connections.empty()) {
    std::cout << "decoy: FAIL: test commands reached the default socket, where a user's server would answer "
                 "(each must use --server never or its own server's private socket):\n"
              << connections;
    return 1;
  }
  if (!was_running) {
    std::cout << "decoy: FAIL: the decoy was gone before the suite ended:\n" << slurp(state + "/decoy.err");
    return 1;
  }
  for (const char* name : {"/connections.log", "/decoy.err"}) ::unlink((state + name).c_str());
  ::rmdir(state.c_str());
  std::cout << "decoy: no test command reached the default socket\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode == "start") return start(argv[2]);
  if (mode == "check") return check(argv[2]);
  std::cerr << "usage: cuconv_decoy_server start|check STATE_DIR\n";
  return 2;
}
