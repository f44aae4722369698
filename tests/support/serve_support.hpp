// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers the `cuconv serve` suites share: a private folder, child processes with captured output,
// run_server on a thread with a copying handler, and raw connections to a server's socket.
#include "serve/channel.hpp"
#include "serve/server.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace cuconv::test {

inline constexpr const char* kFront = CUCONV_TEST_BINARY;  // the front end, installed as cuconv
inline constexpr const char* kTestServer = CUCONV_TEST_SERVE_SERVER;

/// A fresh folder (mode 0700) removed with its contents.
class Folder {
 public:
  Folder() {
    char name[] = "/tmp/cuconv-serve-test-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path_ = name;
  }
  ~Folder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  Folder(const Folder&) = delete;
  Folder& operator=(const Folder&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }
  [[nodiscard]] std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& path, const std::string& data) { std::ofstream(path, std::ios::binary) << data; }

/// Whether `done` became true within `limit`, asked every 5 ms.
inline bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

/// A child process (exec'd at once after fork: safe beside the server threads) whose stdout and
/// stderr go to files.
struct Child {
  pid_t pid = -1;
  fs::path out, err;

  /// Its exit code (128 + signal when killed); -1 when it did not end within `limit` (killed then).
  int wait(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    for (;;) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  [[nodiscard]] std::string stdout_text() const { return read_file(out); }
  [[nodiscard]] std::string stderr_text() const { return read_file(err); }
};

struct SpawnOptions {
  std::vector<std::string> env;  ///< NAME=VALUE added to a cleaned environment
  std::string stdin_path = "/dev/null";
  int fd3 = -1;                  ///< becomes descriptor 3 (socket activation)
  bool listen_pid_self = false;  ///< LISTEN_PID=<the child's pid>
};

/// `argv` started with a cleaned environment (no CUCONV_ or LISTEN_ variables) plus `options`,
/// its output in `folder` under `tag`.
inline Child spawn(const std::vector<std::string>& argv, const fs::path& folder, const std::string& tag,
                   const SpawnOptions& options = {}) {
  static int counter = 0;
  Child child;
  child.out = folder / (tag + "." + std::to_string(++counter) + ".out");
  child.err = folder / (tag + "." + std::to_string(counter) + ".err");
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("CUCONV_", 0) == 0 || entry.rfind("LISTEN_", 0) == 0) continue;
    env.push_back(entry);
  }
  env.insert(env.end(), options.env.begin(), options.env.end());
  std::string listen_pid = "LISTEN_PID=" + std::string(20, '\0');
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  if (options.listen_pid_self) envp.push_back(listen_pid.data());
  envp.push_back(nullptr);
  const std::string out = child.out.string(), err = child.err.string();

  child.pid = ::fork();
  REQUIRE(child.pid >= 0);
  if (child.pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    if (options.listen_pid_self) {
      char digits[20];
      int n = 0;
      for (pid_t p = ::getpid(); p > 0; p /= 10) digits[n++] = static_cast<char>('0' + p % 10);
      for (int i = 0; i < n; ++i) listen_pid[11 + i] = digits[n - 1 - i];
    }
    const int in = ::open(options.stdin_path.c_str(), O_RDONLY);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (options.fd3 >= 0) {
      if (options.fd3 == 3)
        ::fcntl(3, F_SETFD, 0);
      else
        ::dup2(options.fd3, 3);
    }
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  return child;
}

/// run_server on a thread of this process; stopped and joined on destruction.
class ServerThread {
 public:
  explicit ServerThread(const std::string& socket, unsigned max_clients = 64,
                        const serve::Handler& handler = copy_handler())
      : handler_(handler) {
    REQUIRE(::pipe2(stop_, O_CLOEXEC) == 0);
    log_path_ = socket + ".log";
    log_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    serve::ServerOptions options;
    options.socket_path = socket;
    options.idle_exit_seconds = 0;
    options.max_clients = max_clients;
    options.handle_signals = false;
    options.stop_fd = stop_[0];
    options.log_fd = log_;
    thread_ = std::thread([this, options] { result_ = serve::run_server(options, handler_); });
    REQUIRE(wait_for([&] { return fs::exists(socket); }));
  }
  ~ServerThread() {
    [[maybe_unused]] const ssize_t n = ::write(stop_[1], "x", 1);
    thread_.join();
    ::close(stop_[0]);
    ::close(stop_[1]);
    ::close(log_);
  }
  [[nodiscard]] std::string log() const { return read_file(log_path_); }

  /// The handler of tests/support/serve_test_server.cpp in brief: copy argv[2] to argv[3] through
  /// RemoteFiles, "copied" on the client's stderr; `exit N` exits N.
  static serve::Handler copy_handler() {
    return [](const serve::ClientRequest& request, serve::ClientSession& session) -> int {
      const auto& args = request.argv;
      if (args.size() == 3 && args[1] == "exit") return std::atoi(args[2].c_str());
      if (args.size() != 4 || args[1] != "copy") return 2;
      auto& files = session.files();
      const cuconv::engine::OpenedFile in = files.open_input(args[2]);
      const std::string data = read_file(in.local_path());
      auto temp = files.create_temp(args[3]);
      std::ofstream(temp.file.local_path(), std::ios::binary) << data;
      if (!files.publish(temp, args[3], false)) return 4;
      const std::string line = "copied " + args[2] + "\n";
      [[maybe_unused]] const ssize_t n = ::write(session.err_fd(), line.data(), line.size());
      return 0;
    };
  }

 private:
  serve::Handler handler_;
  int stop_[2] = {-1, -1};
  int log_ = -1;
  std::string log_path_;
  std::thread thread_;
  int result_ = -1;
};

/// The argv of the front end (cuconv) running `args`.
inline std::vector<std::string> front(const std::vector<std::string>& args) {
  std::vector<std::string> argv{kFront};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

/// A client's environment that sends its command to the server on `socket`, and to no other.
inline SpawnOptions served_by(const std::string& socket) {
  return SpawnOptions{{"CUCONV_SOCKET=" + socket, "CUCONV_SERVER=always"}};
}

/// The names of the temporary files a write left in `folder`.
inline std::vector<std::string> temporaries_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".cuconv-tmp-", 0) == 0) names.push_back(name);
  }
  return names;
}

/// A connected raw socket to `path` (for messages a well-behaved client never sends).
inline serve::UniqueFd connect_raw(const std::string& path) {
  serve::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  REQUIRE(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

inline bool have_root() { return ::geteuid() == 0; }

}  // namespace cuconv::test
