// SPDX-License-Identifier: Apache-2.0
// A served request from the front end: the round trip, another uid refused, a server killed or
// stopped mid-request, and a client's signals forwarded to its command.
#include "serve_support.hpp"

#include "serve/client.hpp"
#include "serve/server.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

using namespace cuconv::test;
using namespace cuconv::serve;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

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
  CHECK_FALSE(fs::exists(socket));                                     // a server that bound its socket removes it
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
