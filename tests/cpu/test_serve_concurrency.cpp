// SPDX-License-Identifier: Apache-2.0
// Many clients of one server: a queued client kept waiting by pings, 100 concurrent clients, and
// max_clients' limit reached but never passed.
#include "serve_support.hpp"

#include "serve/channel.hpp"
#include "serve/protocol.hpp"
#include "serve/server.hpp"

#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <string>
#include <vector>

using namespace cuconv::test;
using namespace cuconv::serve;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

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

TEST_CASE("serve: 100 concurrent clients (8 served at once, the rest queued)") {
  Folder folder;
  const std::string socket = folder / "socket";
  ServerThread server(socket, 8);
  std::vector<Child> clients;
  for (int i = 0; i < 100; ++i) {
    const std::string name = std::to_string(i);
    write_file(folder / ("in" + name), std::string(1000 + i, static_cast<char>('a' + i % 26)));
    clients.push_back(
        spawn(front({"copy", folder / ("in" + name), folder / ("out" + name)}), folder.path(), "c", served_by(socket)));
  }
  int failed = 0;
  for (int i = 0; i < 100; ++i) {
    const int code = clients[i].wait(60s);
    if (code != 0 ||
        read_file(folder / ("out" + std::to_string(i))) != read_file(folder / ("in" + std::to_string(i)))) {
      ++failed;
      MESSAGE("client " << i << " exited " << code << ": " << clients[i].stderr_text());
    }
  }
  CHECK(failed == 0);
  // One log line per request; a line is written just after its client got the exit code.
  std::size_t lines = 0;
  wait_for(
      [&] {
        const std::string log = server.log();
        lines = 0;
        for (std::size_t at = log.find("-> exit 0"); at != std::string::npos; at = log.find("-> exit 0", at + 1))
          ++lines;
        return lines == 100;
      },
      5s);
  CHECK(lines == 100);
}

TEST_CASE(
    "serve: max_clients: handlers run at most the limit at once and reach it, a client past it is told it waits") {
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
  while (next.status == Received::Status::message && std::holds_alternative<Ping>(next.message))
    next = channel.receive(10000);
  REQUIRE(next.status == Received::Status::message);
  CHECK(std::holds_alternative<Welcome>(next.message));
  for (auto& client : clients) CHECK(client.wait(60s) == 0);
  std::lock_guard lock(mutex);
  CHECK(peak == kLimit);
}
