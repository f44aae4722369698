// SPDX-License-Identifier: Apache-2.0
// The caller's side of a served command (src/serve/client.cpp and what the command does with the
// caller's descriptors, signals, temporary files and environment), each case run served (a server
// started in a folder of its own, on a private socket) and in-process, which must agree: closed
// standard descriptors, ignored signals and SIGHUP, no temporary file left by a kill at any moment,
// a client that removes only what it made, standard input copied in the caller's temporary folder,
// the environment and memory limits.
#include "serve/protocol.hpp"
#include "serve/server.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using cuconv::test::CommandResult;
using cuconv::test::CuconvProcess;
using cuconv::test::read_file;
using cuconv::test::run_cuconv;
using cuconv::test::Server;
using cuconv::test::shell_quote;
using cuconv::test::TempDir;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kModes[] = {"never", "always"};

/// The shell line that runs a command from `folder` with `server` (or in-process under never).
std::string from(const fs::path& folder, const Server& server) {
  return server.setup() + "\ncd " + shell_quote(folder.string());
}

/// Runs `script` with /bin/sh in a process group of its own (the script redirects what it needs;
/// its stderr is captured); killed after `limit`, exit_code -1 then.
CommandResult run_script(const std::string& script, std::chrono::seconds limit = 30s) {
  const TempDir capture;
  const std::string err = capture.file("err");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    // A shell's defaults, whatever this process set (a server thread here ignores SIGPIPE).
    for (const int signal : {SIGINT, SIGTERM, SIGPIPE}) std::signal(signal, SIG_DFL);
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = Clock::now() + limit;
  int status = 0;
  CommandResult r;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.err = read_file(err);
      return r;
    }
    std::this_thread::sleep_for(5ms);
  }
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + r.signal;
  r.err = read_file(err);
  return r;
}

/// The names in `folder` that a command must never leave behind: temporary outputs and copies
/// of standard input.
std::vector<std::string> litter_in(const fs::path& folder) {
  std::vector<std::string> names;
  if (!fs::exists(folder)) return names;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".cuconv-tmp-") || name.starts_with("cuconv-stdin-")) names.push_back(entry.path().string());
  }
  return names;
}

/// Waits until `ready` holds or `limit` has passed.
void wait_until(const std::function<bool()>& ready, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!ready() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(300));
}

/// Whether the server logged a finished request `count` times (it has let go of every file then).
std::size_t requests_logged(const TempDir& server_dir) {
  const std::string log = read_file(server_dir.file("server.log"));
  std::size_t count = 0;
  for (std::size_t at = log.find(" -> exit "); at != std::string::npos; at = log.find(" -> exit ", at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("serve client: a closed standard output or input stays closed to the command, served and in-process") {
  TempDir dir;
  const TempDir server_dir;
  const Server server(server_dir);
  const std::string in = cuconv::test::sample("astronaut.png");
  for (const char* mode : kModes) {
    CAPTURE(std::string(mode));
    const std::string run =
        from(dir.path(), server) + "\nexec " + shell_quote(cuconv::test::cuconv_binary()) + " --server " + mode + " ";
    // Not the client's socket, nor any pipe of the command's, in place of standard output.
    CommandResult r = run_script(run + shell_quote(in) + " png:- -f gauss5 >&-");
    INFO(r.err);
    CHECK(r.exit_code == 4);
    CHECK(r.err.find("cannot write to standard output") != std::string::npos);
    // Standard input closed: the command fails at once, reading nothing of its own.
    const auto start = Clock::now();
    r = run_script(run + "- o.png -f gauss5 <&-", 20s);
    INFO(r.err);
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("standard input: cannot read it") != std::string::npos);
    CHECK(Clock::now() - start < 10s);
    CHECK_FALSE(fs::exists(dir.file("o.png")));
  }
  // The server holds no request: a client with a closed standard input left nothing running.
  CHECK(run_cuconv({"--server", "always", "--version"}, "", server.setup()).exit_code == 0);
}

TEST_CASE("serve client: a signal ignored at the start stays ignored, and SIGHUP ends a batch like SIGINT") {
  TempDir dir;
  constexpr std::size_t kImages = 48;
  (void)cuconv::test::write_random_images(dir.path() / "in", kImages, 512);
  const TempDir server_dir;
  const Server server(server_dir);
  for (const char* mode : kModes) {
    for (const bool ignored : {true, false}) {
      CAPTURE(std::string(mode));
      CAPTURE(ignored);
      const std::string out = std::string(mode) + (ignored ? "-nohup" : "-hup");
      // nohup's way: SIGHUP ignored before cuconv starts.
      CuconvProcess process({"--server", mode, "--out-dir", dir.file(out), "-f", "gauss5", "--variant", "opencv",
                             "--jobs", "1", "--json", dir.file(out + ".json"), dir.file("in")},
                            "", from(dir.path(), server) + (ignored ? "\ntrap '' HUP" : ""));
      wait_until([&] { return fs::exists(dir.file(out)) && cuconv::test::file_names(dir.path() / out).size() > 2; },
                 20s);
      ::kill(process.pid(), SIGHUP);
      const CommandResult r = process.wait();
      INFO(r.err);
      // A summary, complete (a process killed by the signal leaves it empty).
      const std::string summary_text = read_file(dir.file(out + ".json"));
      CHECK_FALSE(summary_text.empty());
      const auto summary = nlohmann::json::parse(summary_text.empty() ? "{}" : summary_text);
      const std::size_t written = cuconv::test::file_names(dir.path() / out).size();
      if (ignored) {
        CHECK(r.exit_code == 0);
        CHECK(written == kImages);
        CHECK(summary["exit_code"] == 0);
      } else {
        CHECK(r.exit_code == 128 + SIGHUP);
        CHECK(r.err.find("interrupted by SIGHUP") != std::string::npos);
        CHECK(written < kImages);
        CHECK(summary["exit_code"] == 128 + SIGHUP);
        CHECK(summary["totals"]["ok"] == written);
      }
    }
  }
}

TEST_CASE("serve client: a client or command killed at any moment leaves no temporary file and no partial output") {
  TempDir dir;
  const cv::Mat big = cuconv::test::random_image(2000, 2000, CV_8U, 3, 11);
  REQUIRE(cv::imwrite(dir.file("big.png"), big));
  (void)cuconv::test::write_random_images(dir.path() / "in", 6, 700);
  const TempDir server_dir;
  const Server server(server_dir);
  // The finished output, to compare any output a killed command left with.
  REQUIRE(run_cuconv({"--server", "never", dir.file("big.png"), dir.file("whole.tif"), "-f", "gauss5", "--variant",
                      "opencv", "--compression", "none"})
              .exit_code == 0);
  const std::string whole = read_file(dir.file("whole.tif"));
  std::size_t served_requests = requests_logged(server_dir);
  for (const char* mode : kModes) {
    for (int round = 0; round < 6; ++round) {
      for (const bool batch : {false, true}) {
        CAPTURE(std::string(mode));
        CAPTURE(round);
        CAPTURE(batch);
        const fs::path out = dir.path() / "out";
        fs::create_directories(out);
        std::vector<std::string> args{"--server", mode, "-f", "gauss5", "--variant", "opencv", "--compression", "none"};
        if (batch) {
          args.insert(args.end(), {"--out-dir", out.string(), "--name", "%s.tif", "--jobs", "1", dir.file("in")});
        } else {
          args.insert(args.end(), {dir.file("big.png"), (out / "big.tif").string()});
        }
        CuconvProcess process(args, "", from(dir.path(), server));
        // The moment a temporary file shows (a named one: the defect), else a moment that moves
        // through the command's run from round to round.
        const auto limit = std::chrono::milliseconds(150 + 250 * round);
        wait_until([&] { return !litter_in(out).empty(); }, limit);
        ::kill(process.pid(), SIGKILL);
        (void)process.wait();
        if (std::string(mode) == "always") {
          // The server finishes (or abandons) the request of the killed client, then checks.
          ++served_requests;
          wait_until([&] { return requests_logged(server_dir) >= served_requests; }, 20s);
          served_requests = requests_logged(server_dir);
        }
        CHECK(litter_in(out).empty());
        if (!batch && fs::exists(out / "big.tif")) CHECK(read_file(out / "big.tif") == whole);
        fs::remove_all(out);
      }
    }
  }
}

TEST_CASE("serve client: standard input is copied in the caller's temporary folder, which nothing is left in") {
  TempDir dir;
  const std::string in = cuconv::test::sample("astronaut.png");
  // The server's own temporary folder is gone once it runs: a served copy made there would fail.
  const TempDir server_dir;
  const char* saved = std::getenv("TMPDIR");
  const std::string saved_value = saved != nullptr ? saved : "";
  fs::create_directories(dir.path() / "server-tmp");
  ::setenv("TMPDIR", dir.file("server-tmp").c_str(), 1);
  const Server server(server_dir);
  if (saved != nullptr)
    ::setenv("TMPDIR", saved_value.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  fs::remove_all(dir.path() / "server-tmp");
  fs::create_directories(dir.path() / "tmp");
  for (const char* mode : kModes) {
    CAPTURE(std::string(mode));
    // A relative TMPDIR is the caller's (relative to its folder, not the server's).
    CommandResult r = run_cuconv({"--server", mode, "-", std::string("o-") + mode + ".png", "-f", "gauss5"}, in,
                                 from(dir.path(), server) + "\nexport TMPDIR=tmp");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(fs::exists(dir.file(std::string("o-") + mode + ".png")));
    // A temporary folder that is not there: the in-process words, word for word.
    r = run_cuconv({"--server", mode, "-", "o.png", "-f", "gauss5"}, in,
                   from(dir.path(), server) + "\nunset TMPDIR TEMP TEMPDIR; export TMP=/nonexistent");
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("TMP='/nonexistent': not an existing folder (No such file or directory)") != std::string::npos);
    r = run_cuconv({"--server", mode, "-", "o.png", "-f", "gauss5"}, in,
                   from(dir.path(), server) + "\nexport TMPDIR=" + shell_quote(in));
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("not an existing folder (Not a directory)") != std::string::npos);
    // The caller's file size limit holds for the copy, as in-process.
    r = run_cuconv({"--server", mode, "-", "o.png", "-f", "gauss5"}, in,
                   from(dir.path(), server) + "\nexport TMPDIR=tmp; ulimit -f 100");
    CHECK(r.exit_code == 3);
    CHECK(r.err.find("File too large") != std::string::npos);
    // And for an image written to standard output when that is a file (run_cuconv's capture).
    r = run_cuconv({"--server", mode, in, "tif:-", "-f", "gauss5", "--compression", "none"}, "",
                   from(dir.path(), server) + "\nulimit -f 50");
    CHECK(r.exit_code == 4);
    CHECK(r.err.find("cannot write to standard output") != std::string::npos);
    CHECK(r.out.size() == 50 * 512);  // what fits: sh counts ulimit -f in 512-byte blocks

    // Killed while it copies (its input is half written and stays open): nothing is left in the
    // caller's temporary folder, nor in the server's.
    const std::string fifo = dir.file(std::string("fifo-") + mode);
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CuconvProcess process({"--server", mode, "-", "k.png", "-f", "gauss5"}, fifo,
                          from(dir.path(), server) + "\nexport TMPDIR=tmp\n(head -c 100000 " + shell_quote(in) +
                              "; sleep 3) >" + shell_quote(fifo) + " &");
    wait_until([&] { return !litter_in(dir.path() / "tmp").empty(); }, 1500ms);
    ::kill(process.pid(), SIGKILL);
    (void)process.wait();
    CHECK(litter_in(dir.path() / "tmp").empty());
  }
  // The server itself killed while it copies: no copy anywhere.
  const std::string fifo = dir.file("fifo-server");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CuconvProcess process({"--server", "always", "-", "k.png", "-f", "gauss5"}, fifo,
                        from(dir.path(), server) + "\nexport TMPDIR=tmp\n(head -c 100000 " + shell_quote(in) +
                            "; sleep 3) >" + shell_quote(fifo) + " &");
  std::this_thread::sleep_for(700ms);
  ::kill(std::stoi(read_file(server_dir.file("server.pid"))), SIGKILL);
  const CommandResult r = process.wait();
  CHECK(r.exit_code == 5);
  CHECK(litter_in(dir.path()).empty());
}

TEST_CASE("serve client: Ctrl-C while a served command copies standard input ends it as interrupted, as in-process") {
  TempDir dir;
  const std::string in = cuconv::test::sample("astronaut.png");
  const TempDir server_dir;
  const Server server(server_dir);
  for (const char* mode : kModes) {
    CAPTURE(std::string(mode));
    // Ctrl-C reaches the whole pipeline: the producer dies (the copy sees its end) as the client
    // is told. The shell traps SIGINT (its children get the default) and records cuconv's code.
    // The producer says when cuconv has taken the first part (more than a pipe holds).
    const std::string started = dir.file(std::string("started-") + mode);
    const std::string script = from(dir.path(), server) + "\ntrap 'true' INT\n(head -c 100000 " + shell_quote(in) +
                               "; touch " + shell_quote(started) + "; sleep 6; tail -c +100001 " + shell_quote(in) +
                               ") | " + shell_quote(cuconv::test::cuconv_binary()) + " --server " + mode +
                               " - o.png -f gauss5 2>err.txt\necho $? >code.txt";
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::setpgid(0, 0);
      std::signal(SIGINT, SIG_DFL);
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    wait_until([&] { return fs::exists(started); }, 20s);
    std::this_thread::sleep_for(100ms);
    ::kill(-pid, SIGINT);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string err = read_file(dir.file("err.txt"));
    INFO(err);
    CHECK(std::stoi(read_file(dir.file("code.txt"))) == 128 + SIGINT);
    CHECK(err.find("interrupted by SIGINT") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.file("o.png")));
  }
}

TEST_CASE("serve client: the environment: variables read once per process, memory limits") {
  TempDir dir;
  const std::string in = cuconv::test::sample("astronaut.png");
  const TempDir server_dir;
  const Server server(server_dir);
  // OpenCV reads its limits once per process: a caller's own value runs in-process under auto
  // (with OpenCV's refusal, as without a server) and is named under always.
  const std::string limited = from(dir.path(), server) + "\nexport OPENCV_IO_MAX_IMAGE_PIXELS=100";
  CommandResult r = run_cuconv({"--server", "never", in, "a.png", "-f", "gauss5"}, "", limited);
  CHECK(r.exit_code == 3);
  const std::string refusal = r.err;
  r = run_cuconv({"--server", "auto", in, "a.png", "-f", "gauss5"}, "", limited);
  CHECK(r.exit_code == 3);
  CHECK(r.err == refusal);
  r = run_cuconv({"--server", "always", in, "a.png", "-f", "gauss5"}, "", limited);
  CHECK(r.exit_code == 5);
  CHECK(r.err.find("OPENCV_IO_MAX_IMAGE_PIXELS") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("a.png")));
  // A memory limit applies to a whole process: such a caller runs in-process without asking. Any
  // finite limit does; this one (100 TiB) leaves room for AddressSanitizer's shadow memory too.
  const std::size_t before = requests_logged(server_dir);
  r = run_cuconv({"--server", "auto", in, "b.png", "-f", "gauss5"}, "",
                 from(dir.path(), server) + "\nulimit -v 107374182400");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir.file("b.png")));
  CHECK(requests_logged(server_dir) == before);
  // The same caller without the limit is served.
  r = run_cuconv({"--server", "auto", in, "c.png", "-f", "gauss5"}, "", from(dir.path(), server));
  CHECK(r.exit_code == 0);
  CHECK(requests_logged(server_dir) == before + 1);
}

namespace {

/// A server (run_server in a thread) whose handler, instead of running the command, asks the
/// client to remove, discard and publish files the command never made.
class GreedyServer {
 public:
  GreedyServer(const std::string& socket, const fs::path& victims) {
    REQUIRE(::pipe2(stop_, O_CLOEXEC) == 0);
    cuconv::serve::ServerOptions options;
    options.socket_path = socket;
    options.idle_exit_seconds = 0;
    options.handle_signals = false;
    options.stop_fd = stop_[0];
    options.log_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    log_ = options.log_fd;
    const std::string victim = (victims / "precious.txt").string();
    thread_ = std::thread([options, victim] {
      (void)cuconv::serve::run_server(
          options, [victim](const cuconv::serve::ClientRequest&, cuconv::serve::ClientSession& session) {
            auto& files = session.files();
            files.remove(victim);
            cuconv::serve::RemoteFiles::TempOutput stranger{
                cuconv::engine::OpenedFile(::open("/dev/null", O_WRONLY), ""), victim};
            files.discard(stranger);
            try {
              (void)files.publish(stranger, victim + ".moved", true);
            } catch (const cuconv::Error&) {  // refused: the expected answer
            }
            return 0;
          });
    });
    wait_until([&] { return fs::exists(socket); }, 10s);
  }
  ~GreedyServer() {
    [[maybe_unused]] const ssize_t n = ::write(stop_[1], "x", 1);
    thread_.join();
    ::close(stop_[0]);
    ::close(stop_[1]);
    ::close(log_);
  }
  GreedyServer(const GreedyServer&) = delete;
  GreedyServer& operator=(const GreedyServer&) = delete;

 private:
  int stop_[2] = {-1, -1};
  int log_ = -1;
  std::thread thread_;
};

}  // namespace

TEST_CASE("serve client: the client removes, discards and renames only files of this command, whatever a server asks") {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0700);
  std::ofstream(dir.file("precious.txt")) << "my notes";
  const GreedyServer greedy(dir.file("socket"), dir.path());
  const CommandResult r = run_cuconv(
      {"--server", "always", cuconv::test::sample("astronaut.png"), "o.png", "-f", "gauss5"}, "",
      "export CUCONV_SOCKET=" + shell_quote(dir.file("socket")) + "\ncd " + shell_quote(dir.path().string()));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(read_file(dir.file("precious.txt")) == "my notes");
  CHECK_FALSE(fs::exists(dir.file("precious.txt.moved")));
}

TEST_CASE("serve client: standard output into a closed pipe ends the command with SIGPIPE, served and in-process") {
  TempDir dir;
  const TempDir server_dir;
  const Server server(server_dir);
  for (const char* mode : kModes) {
    CAPTURE(std::string(mode));
    // The shell reports cuconv's status from inside the pipeline; head reads 10 bytes and leaves.
    const CommandResult r = run_script(from(dir.path(), server) + "\n{ " + shell_quote(cuconv::test::cuconv_binary()) +
                                       " --server " + mode + " " + shell_quote(cuconv::test::sample("astronaut.png")) +
                                       " png:- -f gauss5; echo $? >code.txt; } | head -c 10 >/dev/null");
    CHECK(r.exit_code == 0);
    CHECK(std::stoi(read_file(dir.file("code.txt"))) == 128 + SIGPIPE);
  }
}

TEST_CASE("serve client: a stopped server does not hold the caller's pipes once the client gave up") {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0700);
  const std::string socket = dir.file("socket");
  // The transport's test server pings every 100 ms: its client gives up after 6 silent intervals.
  const pid_t server = ::fork();
  REQUIRE(server >= 0);
  if (server == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(CUCONV_TEST_SERVE_SERVER, CUCONV_TEST_SERVE_SERVER, "--socket", socket.c_str(), "--idle", "0", "--ping-ms",
            "100", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  wait_until([&] { return fs::exists(socket); }, 10s);
  // `cat` copies the client's standard input (a FIFO nobody writes) to its standard output (a
  // pipe this test reads to its end, as a shell's $(...) does).
  const std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t client = ::fork();
  REQUIRE(client >= 0);
  if (client == 0) {
    ::setenv("CUCONV_SOCKET", socket.c_str(), 1);
    ::setenv("CUCONV_SERVER", "always", 1);
    const int in = ::open(fifo.c_str(), O_RDWR);  // open without a writer, never at its end
    ::dup2(in, 0);
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::execl(cuconv::test::cuconv_binary().c_str(), "cuconv", "cat", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::this_thread::sleep_for(500ms);  // the request is running: the server reads the FIFO
  REQUIRE(::kill(server, SIGSTOP) == 0);
  int status = 0;
  const auto start = Clock::now();
  wait_until([&] { return ::waitpid(client, &status, WNOHANG) == client; }, 10s);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 5);
  // The pipe ends with the client, while the server is still stopped.
  pollfd p{out[0], POLLIN, 0};
  const bool ended = ::poll(&p, 1, 3000) == 1;
  CHECK(ended);
  char byte = 0;
  if (ended) CHECK(::read(out[0], &byte, 1) == 0);
  CHECK(Clock::now() - start < 8s);
  ::close(out[0]);
  ::kill(server, SIGKILL);
  ::kill(server, SIGCONT);
  ::waitpid(server, &status, 0);
}

TEST_CASE("serve client: the server is asked once, and -v says why a command runs in this process") {
  TempDir dir;
  const std::string in = cuconv::test::sample("astronaut.png");
  // A socket that listens but never answers: the front end waits its 2 s and runs the command
  // in-process; the engine it execs must not ask (and wait) a second time.
  const TempDir socket_dir;
  ::chmod(socket_dir.path().c_str(), 0700);
  const std::string socket = socket_dir.file("socket");
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(socket.size() < sizeof address.sun_path);
  std::memcpy(address.sun_path, socket.c_str(), socket.size() + 1);
  REQUIRE(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(listener, 16) == 0);
  const std::string setup = "export CUCONV_SOCKET=" + shell_quote(socket) + "\ncd " + shell_quote(dir.path().string());
  const auto start = Clock::now();
  CommandResult r = run_cuconv({"--server", "auto", "-v", in, "a.png", "-f", "gauss5"}, "", setup);
  const auto took = Clock::now() - start;
  ::close(listener);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::size_t asked = 0;
  for (std::size_t at = r.err.find("not using the server"); at != std::string::npos;
       at = r.err.find("not using the server", at + 1))
    ++asked;
  CHECK(asked == 1);
  CHECK(took < 3900ms);  // one 2 s wait, not two
  CHECK(r.err.find("running in this process (pid ") != std::string::npos);
  CHECK(r.err.find("the server did not answer within 2000 ms") !=
        r.err.rfind("the server did not answer within 2000 ms"));
  // No server at all, and --server never: -v names the reason too.
  r = run_cuconv(
      {"--server", "auto", "-v", in, "b.png", "-f", "gauss5"}, "",
      "export CUCONV_SOCKET=" + shell_quote(socket_dir.file("none")) + "\ncd " + shell_quote(dir.path().string()));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("running in this process (pid ") != std::string::npos);
  CHECK(r.err.find("): no server runs (") != std::string::npos);
  r = run_cuconv({"--server", "never", "-v", in, "c.png", "-f", "gauss5"}, "",
                 "cd " + shell_quote(dir.path().string()));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("): --server never") != std::string::npos);
}
