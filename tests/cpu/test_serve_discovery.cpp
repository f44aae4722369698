// SPDX-License-Identifier: Apache-2.0
// How a client finds a server: the socket path, its private folder's checks, the --server and
// CUCONV_SERVER policy, and what the front end does when no server answers or one must be spawned.
#include "serve_support.hpp"

#include "serve/client.hpp"
#include "serve/server.hpp"
#include "serve/socket_path.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

using namespace cuconv::test;
using namespace cuconv::serve;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

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
  if (saved)
    ::setenv("XDG_RUNTIME_DIR", old.c_str(), 1);
  else
    ::unsetenv("XDG_RUNTIME_DIR");
  if (saved_socket) ::setenv("CUCONV_SOCKET", old_socket.c_str(), 1);
}

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
  Child fallback =
      spawn({copy, "in.png", "out.png"}, folder.path(), "auto", SpawnOptions{{"CUCONV_SOCKET=" + options.socket_path}});
  CHECK(fallback.wait() == 0);
  CHECK(fallback.stdout_text() == "engine in.png out.png\n");
  Child serve = spawn({copy, "serve", "--idle-exit", "5"}, folder.path(), "serve",
                      SpawnOptions{{"CUCONV_SOCKET=" + options.socket_path}});
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
