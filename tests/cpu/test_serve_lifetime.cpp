// SPDX-License-Identifier: Apache-2.0
// How a server's life ends and begins: SIGTERM draining the request in flight, idle exit, and socket
// activation through LISTEN_FDS.
#include "serve_support.hpp"

#include "serve/channel.hpp"
#include "serve/server.hpp"

#include <cuconv/error.hpp>

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace cuconv::test;
using namespace cuconv::serve;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

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
