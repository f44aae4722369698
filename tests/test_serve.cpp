// SPDX-License-Identifier: Apache-2.0
// `cuconv serve`'s transport (src/serve): the protocol's bounds, the socket folder's checks, and a
// real server (run_server, in a thread or as tests/serve_test_server.cpp's process) answering the
// thin front end (cuconv_front) through RemoteFiles: round trip, exit codes, descriptors, another
// uid refused, a server killed mid-request, SIGTERM draining, idle exit, socket activation,
// 100 concurrent clients, oversized messages.
#include "serve/channel.hpp"
#include "serve/client.hpp"
#include "serve/protocol.hpp"
#include "serve/server.hpp"
#include "serve/socket_path.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <condition_variable>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace cuconv::serve;
using namespace std::chrono_literals;

constexpr const char* kFront = CUCONV_TEST_BINARY;  // the front end, installed as cuconv
constexpr const char* kTestServer = CUCONV_TEST_SERVE_SERVER;

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

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

/// A child process (exec'd at once after fork: safe beside the server threads) whose stdout and
/// stderr go to files.
struct Child {
  pid_t pid = -1;
  fs::path out, err;

  /// Its exit code (128 + signal when killed); -1 when it did not end within `limit` (killed then).
  int wait(std::chrono::milliseconds limit = 20s) {
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
      std::this_thread::sleep_for(2ms);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  [[nodiscard]] std::string stdout_text() const { return read_file(out); }
  [[nodiscard]] std::string stderr_text() const { return read_file(err); }
};

struct SpawnOptions {
  std::vector<std::string> env;      ///< NAME=VALUE added to a cleaned environment
  std::string stdin_path = "/dev/null";
  int fd3 = -1;                      ///< becomes descriptor 3 (socket activation)
  bool listen_pid_self = false;      ///< LISTEN_PID=<the child's pid>
};

Child spawn(const std::vector<std::string>& argv, const fs::path& folder, const std::string& tag,
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
      if (options.fd3 == 3) ::fcntl(3, F_SETFD, 0);
      else ::dup2(options.fd3, 3);
    }
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  return child;
}

/// run_server on a thread of this process; stopped and joined on destruction.
class ServerThread {
 public:
  explicit ServerThread(const std::string& socket, unsigned max_clients = 64, const Handler& handler = copy_handler())
      : handler_(handler) {
    REQUIRE(::pipe2(stop_, O_CLOEXEC) == 0);
    log_path_ = socket + ".log";
    log_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ServerOptions options;
    options.socket_path = socket;
    options.idle_exit_seconds = 0;
    options.max_clients = max_clients;
    options.handle_signals = false;
    options.stop_fd = stop_[0];
    options.log_fd = log_;
    thread_ = std::thread([this, options] { result_ = run_server(options, handler_); });
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

  /// The handler of tests/serve_test_server.cpp in brief: copy argv[2] to argv[3] through
  /// RemoteFiles, "copied" on the client's stderr; `exit N` exits N.
  static Handler copy_handler() {
    return [](const ClientRequest& request, ClientSession& session) -> int {
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
  Handler handler_;
  int stop_[2] = {-1, -1};
  int log_ = -1;
  std::string log_path_;
  std::thread thread_;
  int result_ = -1;
};

std::vector<std::string> front(const std::vector<std::string>& args) {
  std::vector<std::string> argv{kFront};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

SpawnOptions served_by(const std::string& socket) { return SpawnOptions{{"CUCONV_SOCKET=" + socket, "CUCONV_SERVER=always"}}; }

std::vector<std::string> temporaries_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".cuconv-tmp-", 0) == 0) names.push_back(name);
  }
  return names;
}

/// A connected raw socket to `path` (for messages a well-behaved client never sends).
UniqueFd connect_raw(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  REQUIRE(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

bool have_root() { return ::geteuid() == 0; }

}  // namespace

// ---- protocol ------------------------------------------------------------------------------------

TEST_CASE("serve protocol: every message survives encode and decode") {
  const std::vector<Message> messages{
      Hello{}, Request{{"cuconv", "in.png", "out.png", "-f", "gauss5"}, "/home/u", true, {"CUCONV_NO_GPU_WARNING=1", "TMPDIR=/t"},
              (std::uint64_t{1} << 40) + 8192},
      Reply{2, "No such file or directory", 1, ".cuconv-tmp-out.png.abc123", {"a", "b", ""}, true},
      Welcome{1, 4242, 5000}, Queued{3, 5000}, Refused{RefusalReason::other_user, "no"}, OpenInput{"in.png"},
      KindQuery{"out", true}, SameFile{"a", "b"}, ListDirectory{"photos"}, CreateTemp{"out/x.jpg"},
      Publish{".cuconv-tmp-x", "x", true}, Discard{".cuconv-tmp-x"}, Exit{-3}, Ping{}, MakeDirectories{"out/a"},
      RemoveFile{"out/summary.json"}, Interrupt{2}};
  for (const Message& message : messages) {
    const auto frame = encode(message);
    std::string error;
    const auto header = parse_header(frame, error);
    REQUIRE(header);
    CHECK(header->payload_size == frame.size() - kHeaderSize);
    const auto decoded = decode(header->type, std::span(frame).subspan(kHeaderSize), error);
    REQUIRE_MESSAGE(decoded, type_name(header->type) << ": " << error);
    CHECK(*decoded == message);
  }
}

TEST_CASE("serve protocol: truncated, padded, lying and unknown payloads are refused") {
  const auto frame = encode(Request{{"cuconv", "a"}, "/", false});
  const auto payload = std::span(frame).subspan(kHeaderSize);
  const auto type = static_cast<std::uint8_t>(MessageType::request);
  std::string error;
  for (std::size_t cut = 0; cut < payload.size(); ++cut) {
    CHECK_FALSE(decode(type, payload.first(cut), error));
  }
  std::vector<std::uint8_t> padded(payload.begin(), payload.end());
  padded.push_back(0);
  CHECK_FALSE(decode(type, padded, error));
  CHECK(error.find("after the message") != std::string::npos);

  // A list that claims more strings than the payload could hold is refused before any allocation.
  std::vector<std::uint8_t> lying{0, 1, 0, 0, 0, '/', 0xff, 0xff, 0xff, 0x0f};
  CHECK_FALSE(decode(type, lying, error));
  CHECK(error.find("over the bound") != std::string::npos);
  // A string longer than kMaxString.
  std::vector<std::uint8_t> long_string{0x00, 0x00, 0x10, 0x00};  // OpenInput path of 1 MiB
  CHECK_FALSE(decode(static_cast<std::uint8_t>(MessageType::open_input), long_string, error));
  CHECK_FALSE(decode(0, {}, error));
  CHECK(error.find("unknown message type") != std::string::npos);
  std::vector<std::uint8_t> bad_bool{2};
  CHECK_FALSE(decode(static_cast<std::uint8_t>(MessageType::reply), bad_bool, error));
}

TEST_CASE("serve protocol: frame bounds") {
  std::string error;
  const std::uint32_t over = kMaxPayload + 1;
  const std::uint8_t header[5] = {static_cast<std::uint8_t>(over), static_cast<std::uint8_t>(over >> 8),
                                  static_cast<std::uint8_t>(over >> 16), static_cast<std::uint8_t>(over >> 24), 2};
  CHECK_FALSE(parse_header(header, error));
  CHECK(error.find("over the bound") != std::string::npos);
  CHECK_THROWS_AS((void)encode(OpenInput{std::string(kMaxString + 1, 'x')}), std::length_error);
  // The largest argv Linux allows fits.
  CHECK_NOTHROW((void)encode(Request{std::vector<std::string>(16, std::string(128 * 1024, 'a')), "/", false}));
}

// ---- socket path -----------------------------------------------------------------------------------

TEST_CASE("serve socket path: $CUCONV_SOCKET, then $XDG_RUNTIME_DIR, then /tmp/cuconv-$UID") {
  const char* saved_socket = std::getenv("CUCONV_SOCKET");
  const char* saved_runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string old_socket = saved_socket ? saved_socket : "", old_runtime = saved_runtime ? saved_runtime : "";
  ::setenv("CUCONV_SOCKET", "/somewhere/s", 1);
  ::setenv("XDG_RUNTIME_DIR", "/run/user/1234", 1);
  CHECK(default_socket_path().path == "/somewhere/s");
  CHECK(default_socket_path().from_environment);
  ::unsetenv("CUCONV_SOCKET");
  CHECK(default_socket_path().path == "/run/user/1234/cuconv/socket");
  CHECK(default_socket_path().folder == "/run/user/1234/cuconv");
  CHECK_FALSE(default_socket_path().from_environment);
  ::unsetenv("XDG_RUNTIME_DIR");
  CHECK(default_socket_path().path == "/tmp/cuconv-" + std::to_string(::getuid()) + "/socket");
  if (saved_socket) ::setenv("CUCONV_SOCKET", old_socket.c_str(), 1);
  if (saved_runtime) ::setenv("XDG_RUNTIME_DIR", old_runtime.c_str(), 1);
}

TEST_CASE("serve socket path: the folder is made 0700, an open or foreign one is refused") {
  Folder folder;
  const std::string mine = folder / "mine";
  CHECK(prepare_private_folder(mine) == "");
  struct stat st {};
  REQUIRE(::stat(mine.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  const std::string open_folder = folder / "open";
  REQUIRE(::mkdir(open_folder.c_str(), 0755) == 0);
  ::chmod(open_folder.c_str(), 0755);
  CHECK(prepare_private_folder(open_folder).find("lets other users in") != std::string::npos);
  CHECK(check_private_folder(open_folder).find("0755") != std::string::npos);

  const std::string link = folder / "link";
  REQUIRE(::symlink(mine.c_str(), link.c_str()) == 0);
  CHECK(check_private_folder(link).find("not a directory") != std::string::npos);

  if (have_root()) {
    const std::string foreign = folder / "foreign";
    REQUIRE(::mkdir(foreign.c_str(), 0700) == 0);
    REQUIRE(::chown(foreign.c_str(), 65534, 65534) == 0);
    CHECK(check_private_folder(foreign).find("owned by uid 65534") != std::string::npos);
  } else {
    MESSAGE("skipped the foreign-owner check: it needs root to chown a folder");
  }

  // run_server refuses to start in such a folder, and says why.
  const char* saved = std::getenv("XDG_RUNTIME_DIR");
  const std::string old = saved ? saved : "";
  ::setenv("XDG_RUNTIME_DIR", folder.path().c_str(), 1);
  const std::string runtime_cuconv = folder / "cuconv";
  REQUIRE(::mkdir(runtime_cuconv.c_str(), 0777) == 0);
  ::chmod(runtime_cuconv.c_str(), 0777);
  const char* saved_socket = std::getenv("CUCONV_SOCKET");
  const std::string old_socket = saved_socket ? saved_socket : "";
  ::unsetenv("CUCONV_SOCKET");
  const std::string log = folder / "log";
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT, 0600);
  ServerOptions options;
  options.handle_signals = false;
  options.log_fd = log_fd;
  CHECK(run_server(options, ServerThread::copy_handler()) == static_cast<int>(cuconv::ExitCode::not_started));
  ::close(log_fd);
  CHECK(read_file(log).find("lets other users in") != std::string::npos);
  // ... and the client does not connect there.
  ServerPolicy always;
  always.mode = ServerMode::always;
  const char* argv[] = {"cuconv", "--version"};
  CHECK(run_served(2, argv, always) == kServerFailedExit);
  if (saved) ::setenv("XDG_RUNTIME_DIR", old.c_str(), 1);
  else ::unsetenv("XDG_RUNTIME_DIR");
  if (saved_socket) ::setenv("CUCONV_SOCKET", old_socket.c_str(), 1);
}

// ---- policy and no server ------------------------------------------------------------------------

TEST_CASE("serve client: the policy comes from --server, then CUCONV_SERVER") {
  ::unsetenv("CUCONV_SERVER");
  const char* plain[] = {"cuconv", "a.png", "b.png"};
  CHECK(read_server_policy(3, plain).mode == ServerMode::automatic);
  const char* never[] = {"cuconv", "--server", "never", "a.png"};
  CHECK(read_server_policy(4, never).mode == ServerMode::never);
  const char* always[] = {"cuconv", "--server=always"};
  CHECK(read_server_policy(2, always).mode == ServerMode::always);
  const char* after_dashes[] = {"cuconv", "--", "--server=always"};
  CHECK(read_server_policy(3, after_dashes).mode == ServerMode::automatic);
  const char* bad[] = {"cuconv", "--server", "sometimes"};
  CHECK_FALSE(read_server_policy(3, bad).error.empty());
  ::setenv("CUCONV_SERVER", "spawn", 1);
  CHECK(read_server_policy(3, plain).spawn);
  CHECK(read_server_policy(4, never).mode == ServerMode::never);
  ::setenv("CUCONV_SERVER", "never", 1);
  CHECK(read_server_policy(3, plain).mode == ServerMode::never);
  ::unsetenv("CUCONV_SERVER");
}

TEST_CASE("serve client: without a server auto runs in-process, always fails with exit 5") {
  Folder folder;
  ClientOptions options;
  options.socket_path = folder / "nobody-listens";
  const char* argv[] = {"cuconv", "--version"};
  ServerPolicy policy;
  CHECK_FALSE(run_served(2, argv, policy, options).has_value());
  policy.mode = ServerMode::always;
  CHECK(run_served(2, argv, policy, options) == kServerFailedExit);

  // The front end: --server always prints the reason; otherwise it becomes the engine beside it.
  fs::copy_file(kFront, folder.path() / "cuconv");
  write_file(folder.path() / "cuconv-engine", "#!/bin/sh\necho \"engine $*\"\n");
  ::chmod((folder / "cuconv-engine").c_str(), 0755);
  const std::string copy = folder / "cuconv";
  Child always = spawn({copy, "--server", "always", "--version"}, folder.path(), "always",
                       SpawnOptions{{"CUCONV_SOCKET=" + options.socket_path}});
  CHECK(always.wait() == 5);
  CHECK(always.stderr_text().find("--server always: no server runs") != std::string::npos);
  Child fallback = spawn({copy, "in.png", "out.png"}, folder.path(), "auto", SpawnOptions{{"CUCONV_SOCKET=" + options.socket_path}});
  CHECK(fallback.wait() == 0);
  CHECK(fallback.stdout_text() == "engine in.png out.png\n");
  Child serve = spawn({copy, "serve", "--idle-exit", "5"}, folder.path(), "serve", SpawnOptions{{"CUCONV_SOCKET=" + options.socket_path}});
  CHECK(serve.wait() == 0);
  CHECK(serve.stdout_text() == "engine serve --idle-exit 5\n");

  // An installed prefix: bin/cuconv finds the engine in libexec/cuconv/.
  const fs::path prefix = folder.path() / "prefix";
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "libexec" / "cuconv");
  fs::copy_file(kFront, prefix / "bin" / "cuconv");
  fs::copy_file(folder.path() / "cuconv-engine", prefix / "libexec" / "cuconv" / "cuconv-engine");
  Child installed = spawn({(prefix / "bin" / "cuconv").string(), "a.png", "b.png"}, folder.path(), "installed",
                          SpawnOptions{{"CUCONV_SOCKET=" + options.socket_path}});
  CHECK(installed.wait() == 0);
  CHECK(installed.stdout_text() == "engine a.png b.png\n");
}

TEST_CASE("serve client: CUCONV_SERVER=spawn starts a detached server when none answers") {
  Folder folder;
  fs::copy_file(kFront, folder.path() / "cuconv");
  // The engine beside the front end: `serve` becomes the test server (on $CUCONV_SOCKET).
  write_file(folder.path() / "cuconv-engine",
             "#!/bin/sh\n[ \"$1\" = serve ] && exec " + std::string(kTestServer) + " --idle 2\necho \"engine $*\"\n");
  ::chmod((folder / "cuconv-engine").c_str(), 0755);
  const std::string socket = folder / "socket";
  Child first = spawn({folder / "cuconv", "--version"}, folder.path(), "spawn",
                      SpawnOptions{{"CUCONV_SOCKET=" + socket, "CUCONV_SERVER=spawn"}});
  CHECK(first.wait() == 0);
  CHECK(first.stdout_text() == "cuconv test server\n");  // served, not run by the engine
  CHECK(read_file(folder / "serve.log").find("listening on " + socket) != std::string::npos);
  // The detached server exits by itself when idle, and removes its socket.
  CHECK(wait_for([&] { return !fs::exists(socket); }, 15s));
}

// ---- a served request --------------------------------------------------------------------------------

TEST_CASE("serve: a request round trip (files through the client, exit code, stdin, listing)") {
  Folder folder;
  const std::string socket = folder / "socket";
  ServerThread server(socket);
  const std::string input = folder / "in.bin";
  std::string data(300'000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 251);
  write_file(input, data);

  Child copy = spawn(front({"copy", input, folder / "out.bin"}), folder.path(), "copy", served_by(socket));
  CHECK(copy.wait() == 0);
  CHECK(copy.stderr_text() == "copied " + input + "\n");
  CHECK(read_file(folder / "out.bin") == data);
  struct stat st {};
  REQUIRE(::stat((folder / "out.bin").c_str(), &st) == 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));  // as any new file of the user's, not mkstemp's 0600
  CHECK(temporaries_in(folder.path()).empty());

  // No overwrite: the existing output stays, the temporary file goes, the handler's code returns.
  write_file(folder / "taken.bin", "old");
  Child taken = spawn(front({"copy", input, folder / "taken.bin"}), folder.path(), "taken", served_by(socket));
  CHECK(taken.wait() == 4);
  CHECK(read_file(folder / "taken.bin") == "old");
  CHECK(temporaries_in(folder.path()).empty());

  // A missing input: the handler's Error reaches the client's stderr as the engine would print it.
  Child missing = spawn(front({"copy", folder / "missing", folder / "x"}), folder.path(), "missing", served_by(socket));
  CHECK(missing.wait() != 0);
  CHECK_FALSE(fs::exists(folder / "x"));

  Child code = spawn(front({"exit", "7"}), folder.path(), "exit", served_by(socket));
  CHECK(code.wait() == 7);
  CHECK(wait_for([&] { return server.log().find("exit 7 -> exit 7") != std::string::npos; }, 5s));
}

TEST_CASE("serve: the test server process answers --version, cat (stdin) and list") {
  Folder folder;
  const std::string socket = folder / "socket";
  Child server = spawn({kTestServer, "--socket", socket, "--idle", "0"}, folder.path(), "server");
  REQUIRE(wait_for([&] { return fs::exists(socket); }));
  Child version = spawn(front({"--version"}), folder.path(), "version", served_by(socket));
  CHECK(version.wait() == 0);
  CHECK(version.stdout_text() == "cuconv test server\n");
  write_file(folder / "stdin.txt", "through the client's stdin\n");
  SpawnOptions cat_options = served_by(socket);
  cat_options.stdin_path = folder / "stdin.txt";
  Child cat = spawn(front({"cat"}), folder.path(), "cat", cat_options);
  CHECK(cat.wait() == 0);
  CHECK(cat.stdout_text() == "through the client's stdin\n");
  fs::create_directory(folder.path() / "dir");
  for (int i = 0; i < 3; ++i) write_file(folder.path() / "dir" / ("f" + std::to_string(i)), "");
  Child list = spawn(front({"list", folder / "dir"}), folder.path(), "list", served_by(socket));
  CHECK(list.wait() == 0);
  CHECK(list.stdout_text() == "f0\nf1\nf2\n");
  ::kill(server.pid, SIGTERM);
  CHECK(server.wait() == 0);
  CHECK(server.stderr_text().find("-> exit 0") != std::string::npos);  // one log line per request
  CHECK_FALSE(fs::exists(socket));  // a server that bound its socket removes it
}

TEST_CASE("serve: another uid is refused (by the server, and by the client's own check)") {
  if (!have_root() || ::access("/usr/bin/setpriv", X_OK) != 0) {
    MESSAGE("skipped: running a client as another uid needs root and setpriv");
    return;
  }
  // A folder and socket that let others in on purpose: SO_PEERCRED is the check under test.
  Folder folder;
  ::chmod(folder.path().c_str(), 0755);
  const std::string socket = folder / "socket";
  ServerThread server(socket);
  ::chmod(socket.c_str(), 0666);
  const std::vector<std::string> as_nobody{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};

  std::vector<std::string> probe = as_nobody;
  probe.insert(probe.end(), {kTestServer, "--probe", socket});
  Child refused = spawn(probe, folder.path(), "probe");
  CHECK(refused.wait() == 0);
  CHECK(refused.stdout_text().find("refused: cuconv serve: this server belongs to uid 0; uid 65534 may not use it") !=
        std::string::npos);
  CHECK(wait_for([&] { return server.log().find("uid 65534 is not the server's user") != std::string::npos; }, 5s));

  std::vector<std::string> client = as_nobody;
  client.insert(client.end(), {kFront, "exit", "0"});
  Child front_as_nobody = spawn(client, folder.path(), "nobody", served_by(socket));
  CHECK(front_as_nobody.wait() == 5);
  // The client's own check: the socket's folder is not its user's (before it would even connect).
  CHECK(front_as_nobody.stderr_text().find("owned by uid 0, not by this user") != std::string::npos);
}

TEST_CASE("serve: a server killed mid-request leaves no output and no temporary file, the client exits 5") {
  Folder folder;
  const std::string socket = folder / "socket";
  Child server = spawn({kTestServer, "--socket", socket, "--idle", "0"}, folder.path(), "server");
  REQUIRE(wait_for([&] { return fs::exists(socket); }));
  write_file(folder / "in", std::string(100'000, 'x'));
  Child client = spawn(front({"copy", folder / "in", folder / "out", "--slow-ms", "20000"}), folder.path(), "client",
                       served_by(socket));
  REQUIRE(wait_for([&] { return client.stderr_text().find("temp written") != std::string::npos; }));
  // The temporary file exists before the kill: anonymous (O_TMPFILE), held by the server.
  const auto held = [&] {
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(server.pid) + "/fd", ec)) {
      const std::string target = fs::read_symlink(fd.path(), ec).string();
      if (target.starts_with(folder.path().string() + "/") && target.ends_with(" (deleted)")) return true;
    }
    return false;
  };
  CHECK((held() || temporaries_in(folder.path()).size() == 1));
  ::kill(server.pid, SIGKILL);
  CHECK(server.wait() == 128 + SIGKILL);
  CHECK(client.wait(10s) == 5);
  CHECK(client.stderr_text().find("stopped before finishing this command") != std::string::npos);
  CHECK_FALSE(fs::exists(folder / "out"));
  CHECK(temporaries_in(folder.path()).empty());
}

TEST_CASE("serve: a stopped server (no Ping for 6 intervals) fails its client with exit 5, a slow one does not") {
  Folder folder;
  const std::string socket = folder / "socket";
  Child server = spawn({kTestServer, "--socket", socket, "--idle", "0", "--ping-ms", "100"}, folder.path(), "server");
  REQUIRE(wait_for([&] { return fs::exists(socket); }));
  write_file(folder / "in", "data");
  // 1.5 s of work with 0.6 s of allowed silence: the pings keep the client waiting.
  Child slow = spawn(front({"copy", folder / "in", folder / "slow", "--slow-ms", "1500"}), folder.path(), "slow",
                     served_by(socket));
  CHECK(slow.wait() == 0);
  CHECK(read_file(folder / "slow") == "data");

  Child client = spawn(front({"copy", folder / "in", folder / "out", "--slow-ms", "20000"}), folder.path(), "client",
                       served_by(socket));
  REQUIRE(wait_for([&] { return client.stderr_text().find("temp written") != std::string::npos; }));
  ::kill(server.pid, SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  CHECK(client.wait(10s) == 5);
  CHECK(std::chrono::steady_clock::now() - stopped < 5s);
  CHECK(client.stderr_text().find("stopped answering (silent for 600 ms)") != std::string::npos);
  CHECK(temporaries_in(folder.path()).empty());
  CHECK_FALSE(fs::exists(folder / "out"));
  ::kill(server.pid, SIGKILL);
  ::kill(server.pid, SIGCONT);
  server.wait();
}

TEST_CASE("serve: a queued client waits while the server pings it") {
  Folder folder;
  const std::string socket = folder / "socket";
  Child server = spawn({kTestServer, "--socket", socket, "--idle", "0", "--ping-ms", "100", "--max-clients", "1"},
                       folder.path(), "server");
  REQUIRE(wait_for([&] { return fs::exists(socket); }));
  write_file(folder / "in", "data");
  Child first = spawn(front({"copy", folder / "in", folder / "out", "--slow-ms", "1500"}), folder.path(), "first",
                      served_by(socket));
  REQUIRE(wait_for([&] { return first.stderr_text().find("temp written") != std::string::npos; }));
  // Queued behind 1.5 s of work with 0.6 s of allowed silence.
  Child second = spawn(front({"--version"}), folder.path(), "second", served_by(socket));
  CHECK(second.wait() == 0);
  CHECK(second.stdout_text() == "cuconv test server\n");
  CHECK(first.wait() == 0);
  ::kill(server.pid, SIGTERM);
  CHECK(server.wait() == 0);
}

TEST_CASE("serve: a client's SIGINT reaches its command, which stops and answers with its exit code") {
  Folder folder;
  Child server_process = spawn({kTestServer, "--socket", folder / "slow", "--idle", "0"}, folder.path(), "server");
  REQUIRE(wait_for([&] { return fs::exists(folder / "slow"); }));
  write_file(folder / "in", "data");
  Child client = spawn(front({"copy", folder / "in", folder / "out", "--slow-ms", "20000", "--stoppable"}),
                       folder.path(), "client", served_by(folder / "slow"));
  REQUIRE(wait_for([&] { return client.stderr_text().find("temp written") != std::string::npos; }));
  const auto sent = std::chrono::steady_clock::now();
  ::kill(client.pid, SIGINT);
  CHECK(client.wait() == 128 + SIGINT);
  CHECK(std::chrono::steady_clock::now() - sent < std::chrono::milliseconds(kInterruptGraceMs / 2));
  // The command's own words, not the client's: the signal went through, and back came its code.
  CHECK(client.stderr_text().find("stopped by signal " + std::to_string(SIGINT)) != std::string::npos);
  CHECK(client.stderr_text().find("outputs the server had not finished were removed") == std::string::npos);
  CHECK(temporaries_in(folder.path()).empty());
  CHECK_FALSE(fs::exists(folder / "out"));
  ::kill(server_process.pid, SIGTERM);
  CHECK(server_process.wait() == 0);
  CHECK(server_process.stderr_text().find("-> exit " + std::to_string(128 + SIGINT)) != std::string::npos);
}

TEST_CASE("serve: a second signal ends a client whose command does not stop, removing its temporary file") {
  Folder folder;
  Child server_process = spawn({kTestServer, "--socket", folder / "slow", "--idle", "0"}, folder.path(), "server");
  REQUIRE(wait_for([&] { return fs::exists(folder / "slow"); }));
  write_file(folder / "in", "data");
  // Without --stoppable the command sleeps through the forwarded signal.
  Child client = spawn(front({"copy", folder / "in", folder / "out", "--slow-ms", "20000"}), folder.path(), "client",
                       served_by(folder / "slow"));
  REQUIRE(wait_for([&] { return client.stderr_text().find("temp written") != std::string::npos; }));
  ::kill(client.pid, SIGINT);
  std::this_thread::sleep_for(200ms);
  const auto second = std::chrono::steady_clock::now();
  ::kill(client.pid, SIGINT);
  CHECK(client.wait() == 128 + SIGINT);
  CHECK(std::chrono::steady_clock::now() - second < 2s);
  CHECK(client.stderr_text().find("outputs the server had not finished were removed") != std::string::npos);
  CHECK(temporaries_in(folder.path()).empty());
  CHECK_FALSE(fs::exists(folder / "out"));
  ::kill(server_process.pid, SIGKILL);
  server_process.wait();
}

TEST_CASE("serve: SIGTERM finishes the request in flight, then the server exits 0") {
  Folder folder;
  const std::string socket = folder / "socket";
  Child server = spawn({kTestServer, "--socket", socket, "--idle", "0"}, folder.path(), "server");
  REQUIRE(wait_for([&] { return fs::exists(socket); }));
  write_file(folder / "in", "kept");
  Child client = spawn(front({"copy", folder / "in", folder / "out", "--slow-ms", "1500"}), folder.path(), "client",
                       served_by(socket));
  REQUIRE(wait_for([&] { return client.stderr_text().find("temp written") != std::string::npos; }));
  ::kill(server.pid, SIGTERM);
  // It stops accepting at once: the socket goes while the request still runs.
  CHECK(wait_for([&] { return !fs::exists(socket); }, 1000ms));
  CHECK(client.wait() == 0);
  CHECK(read_file(folder / "out") == "kept");
  CHECK(server.wait() == 0);
  CHECK(server.stderr_text().find("stopping (SIGTERM); 1 request(s) in flight") != std::string::npos);
}

TEST_CASE("serve: idle exit") {
  Folder folder;
  const std::string socket = folder / "socket";
  const auto start = std::chrono::steady_clock::now();
  Child server = spawn({kTestServer, "--socket", socket, "--idle", "1"}, folder.path(), "server");
  REQUIRE(wait_for([&] { return fs::exists(socket); }));
  Child client = spawn(front({"--version"}), folder.path(), "client", served_by(socket));
  CHECK(client.wait() == 0);
  CHECK(server.wait(10s) == 0);
  const auto lived = std::chrono::steady_clock::now() - start;
  CHECK(lived >= 1s);
  CHECK(server.stderr_text().find("stopping (idle for 1 s)") != std::string::npos);
  CHECK_FALSE(fs::exists(socket));
}

TEST_CASE("serve: socket activation through a hand-made LISTEN_FDS") {
  Folder folder;
  const std::string socket = folder / "activated";
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM, 0));  // no CLOEXEC: the child inherits it
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket.c_str(), sizeof address.sun_path - 1);
  REQUIRE(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(listener.get(), 16) == 0);
  SpawnOptions options;
  options.env = {"LISTEN_FDS=1"};
  options.listen_pid_self = true;
  options.fd3 = listener.get();
  // No --socket: a server that ignored LISTEN_FDS would bind the default path, not this socket.
  Child server = spawn({kTestServer, "--idle", "0"}, folder.path(), "server", options);
  Child client = spawn(front({"--version"}), folder.path(), "client", served_by(socket));
  CHECK(client.wait() == 0);
  CHECK(client.stdout_text() == "cuconv test server\n");
  // A server started by hand on the same path leaves systemd's socket alone.
  Child by_hand = spawn({kTestServer, "--socket", socket, "--idle", "0"}, folder.path(), "by-hand");
  CHECK(by_hand.wait() == static_cast<int>(cuconv::ExitCode::not_started));
  CHECK(by_hand.stderr_text().find("something already listens there") != std::string::npos);
  ::kill(server.pid, SIGTERM);
  CHECK(server.wait() == 0);
  CHECK(server.stderr_text().find("listening on 1 socket(s) from systemd") != std::string::npos);
  CHECK(fs::exists(socket));  // the socket is systemd's: the server leaves it

  // LISTEN_PID of another process: the descriptors are not ours, and the variables are cleared.
  ::setenv("LISTEN_PID", "1", 1);
  ::setenv("LISTEN_FDS", "1", 1);
  CHECK(systemd_listen_fds().empty());
  CHECK(std::getenv("LISTEN_FDS") == nullptr);
}

TEST_CASE("serve: 100 concurrent clients (8 served at once, the rest queued)") {
  Folder folder;
  const std::string socket = folder / "socket";
  ServerThread server(socket, 8);
  std::vector<Child> clients;
  for (int i = 0; i < 100; ++i) {
    const std::string name = std::to_string(i);
    write_file(folder / ("in" + name), std::string(1000 + i, static_cast<char>('a' + i % 26)));
    clients.push_back(spawn(front({"copy", folder / ("in" + name), folder / ("out" + name)}), folder.path(), "c",
                            served_by(socket)));
  }
  int failed = 0;
  for (int i = 0; i < 100; ++i) {
    const int code = clients[i].wait(60s);
    if (code != 0 || read_file(folder / ("out" + std::to_string(i))) != read_file(folder / ("in" + std::to_string(i)))) {
      ++failed;
      MESSAGE("client " << i << " exited " << code << ": " << clients[i].stderr_text());
    }
  }
  CHECK(failed == 0);
  // One log line per request; a line is written just after its client got the exit code.
  std::size_t lines = 0;
  wait_for([&] {
    const std::string log = server.log();
    lines = 0;
    for (std::size_t at = log.find("-> exit 0"); at != std::string::npos; at = log.find("-> exit 0", at + 1)) ++lines;
    return lines == 100;
  }, 5s);
  CHECK(lines == 100);
}

TEST_CASE("serve: max_clients: handlers run at most the limit at once and reach it, a client past it is told it waits") {
  Folder folder;
  const std::string socket = folder / "socket";
  constexpr int kLimit = 8;
  std::mutex mutex;
  std::condition_variable changed;
  int running = 0;
  int peak = 0;
  bool hold = false;  // while true, handlers wait for the release (the queue's part below)
  const Handler copy = ServerThread::copy_handler();
  const Handler counting = [&](const ClientRequest& request, ClientSession& session) {
    {
      std::unique_lock lock(mutex);
      peak = std::max(peak, ++running);
      changed.notify_all();
      // Each handler lasts 300 ms (or until released, below): the clients in line fill every
      // place meanwhile, so the peak is the limit, and a place too many is seen.
      if (hold) {
        changed.wait_for(lock, 20s, [&] { return !hold; });
      } else {
        changed.wait_for(lock, 300ms, [&] { return running > kLimit; });
      }
    }
    const int code = copy(request, session);
    std::lock_guard lock(mutex);
    --running;
    changed.notify_all();
    return code;
  };
  ServerThread server(socket, kLimit, counting);
  std::vector<Child> clients;
  for (int i = 0; i < 40; ++i) {
    write_file(folder / ("in" + std::to_string(i)), "data " + std::to_string(i));
    clients.push_back(spawn(front({"copy", folder / ("in" + std::to_string(i)), folder / ("out" + std::to_string(i))}),
                            folder.path(), "c", served_by(socket)));
  }
  for (auto& client : clients) CHECK(client.wait(60s) == 0);
  {
    std::lock_guard lock(mutex);
    CHECK(peak == kLimit);
    peak = 0;
    hold = true;
  }
  // kLimit clients held in their handlers; one more connection is told it waits, first in line.
  clients.clear();
  for (int i = 0; i < kLimit; ++i)
    clients.push_back(spawn(front({"copy", folder / "in0", folder / ("held" + std::to_string(i))}), folder.path(), "h",
                            served_by(socket)));
  {
    std::unique_lock lock(mutex);
    REQUIRE(changed.wait_for(lock, 30s, [&] { return running == kLimit; }));
  }
  Channel channel(connect_raw(socket));
  REQUIRE(channel.send(Hello{}));
  const Received answer = channel.receive(5000);
  REQUIRE(answer.status == Received::Status::message);
  REQUIRE(std::holds_alternative<Queued>(answer.message));
  CHECK(std::get<Queued>(answer.message).ahead == 0);
  {
    std::lock_guard lock(mutex);
    hold = false;
    changed.notify_all();
  }
  // Once a place is free the waiting connection is welcomed (pings may come first).
  Received next = channel.receive(10000);
  while (next.status == Received::Status::message && std::holds_alternative<Ping>(next.message)) next = channel.receive(10000);
  REQUIRE(next.status == Received::Status::message);
  CHECK(std::holds_alternative<Welcome>(next.message));
  for (auto& client : clients) CHECK(client.wait(60s) == 0);
  std::lock_guard lock(mutex);
  CHECK(peak == kLimit);
}

TEST_CASE("serve: oversized and malformed messages are refused with a message") {
  Folder folder;
  const std::string socket = folder / "socket";
  ServerThread server(socket);

  {  // a frame header over the bound, after a proper Hello
    Channel channel(connect_raw(socket));
    REQUIRE(channel.send(Hello{}));
    REQUIRE(std::holds_alternative<Welcome>(channel.receive(5000).message));
    const std::uint32_t size = kMaxPayload + 1;
    const std::uint8_t header[5] = {static_cast<std::uint8_t>(size), static_cast<std::uint8_t>(size >> 8),
                                    static_cast<std::uint8_t>(size >> 16), static_cast<std::uint8_t>(size >> 24),
                                    static_cast<std::uint8_t>(MessageType::request)};
    REQUIRE(::send(channel.fd(), header, sizeof header, MSG_NOSIGNAL) == 5);
    const Received answer = channel.receive(5000);
    REQUIRE(answer.status == Received::Status::message);
    REQUIRE(std::holds_alternative<Refused>(answer.message));
    CHECK(std::get<Refused>(answer.message).message.find("over the bound") != std::string::npos);
    CHECK(channel.receive(5000).status == Received::Status::closed);
  }
  {  // a client speaking another protocol version
    Channel channel(connect_raw(socket));
    REQUIRE(channel.send(Hello{kProtocolMagic, 99}));
    const Received answer = channel.receive(5000);
    REQUIRE(std::holds_alternative<Refused>(answer.message));
    CHECK(std::get<Refused>(answer.message).reason == RefusalReason::version);
  }
  {  // a request without its three descriptors
    Channel channel(connect_raw(socket));
    REQUIRE(channel.send(Hello{}));
    REQUIRE(std::holds_alternative<Welcome>(channel.receive(5000).message));
    REQUIRE(channel.send(Request{{"cuconv", "exit", "0"}, "/", false}));
    const Received answer = channel.receive(5000);
    REQUIRE(std::holds_alternative<Refused>(answer.message));
    CHECK(std::get<Refused>(answer.message).message.find("descriptors 0, 1 and 2") != std::string::npos);
  }
  {  // the client side never sends what the bounds refuse
    Channel channel(connect_raw(socket));
    CHECK_FALSE(channel.send(OpenInput{std::string(kMaxString + 1, 'x')}));
    CHECK(errno == EMSGSIZE);
  }
  // The server still serves after all that.
  Child client = spawn(front({"exit", "3"}), folder.path(), "after", served_by(socket));
  CHECK(client.wait() == 3);
}
