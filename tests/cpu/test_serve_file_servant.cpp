// SPDX-License-Identifier: Apache-2.0
// The served client's file checks (src/serve/file_servant.hpp), asked directly over a socket pair
// as a server would ask: a relative output's temporary file is made in the caller's folder, and a
// server may publish, discard and remove only this command's own temporary files and outputs;
// anything else is refused and the file stays.
#include "test_support.hpp"

#include "serve/channel.hpp"
#include "serve/file_servant.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

using namespace cuconv::serve;
using cuconv::test::TempDir;

namespace {

/// The servant's answer to `message`, as the server end receives it (its descriptor, if any, in `fd`).
Reply ask(FileServant& servant, Channel& client, Channel& server, const Message& message, UniqueFd* fd = nullptr) {
  REQUIRE(servant.answer(client, message));
  Received r = server.receive(5000);
  REQUIRE(r.status == Received::Status::message);
  REQUIRE(std::holds_alternative<Reply>(r.message));
  if (fd != nullptr) *fd = server.take_fd();
  server.drop_fds();
  return std::get<Reply>(r.message);
}

/// Runs in `dir` as the working folder until it goes (the servant resolves relative paths there).
struct InFolder {
  explicit InFolder(const std::string& dir) : old(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InFolder() { std::filesystem::current_path(old); }
  std::filesystem::path old;
};

}  // namespace

TEST_CASE(
    "serve file servant: relative outputs are the caller's, and a server may touch only this command's temporaries and "
    "outputs") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  Channel client{UniqueFd(fds[0])};
  Channel server{UniqueFd(fds[1])};
  TempDir dir;
  const InFolder here(dir.path().string());
  FileServant servant;

  // A relative output: its temporary file is made in the caller's folder ("."), and published
  // there under the name given.
  UniqueFd temp_fd;
  const Reply made = ask(servant, client, server, CreateTemp{"out.bin"}, &temp_fd);
  REQUIRE(made.error == 0);
  REQUIRE(temp_fd);
  CHECK(made.name.rfind("./", 0) == 0);
  REQUIRE(::write(temp_fd.get(), "abc", 3) == 3);
  const Reply published = ask(servant, client, server, Publish{made.name, "out.bin", false});
  CHECK(published.error == 0);
  CHECK(published.value == 1);
  CHECK(cuconv::test::read_file(dir.file("out.bin")) == "abc");

  // Files of the caller's that this command did not make: refused, left as they are.
  std::ofstream(dir.file("mine.txt")) << "keep";
  for (const Message& m :
       {Message{RemoveFile{"mine.txt"}}, Message{RemoveFile{dir.file("mine.txt")}}, Message{Discard{"mine.txt"}},
        Message{Publish{"mine.txt", "elsewhere.txt", true}}, Message{Publish{made.name, "again.bin", true}}}) {
    const Reply refused = ask(servant, client, server, m);
    CHECK(refused.error == EPERM);
    CHECK_FALSE(refused.message.empty());
  }
  CHECK(cuconv::test::read_file(dir.file("mine.txt")) == "keep");
  CHECK_FALSE(std::filesystem::exists(dir.file("elsewhere.txt")));
  CHECK_FALSE(std::filesystem::exists(dir.file("again.bin")));

  // The output it published may be removed once (a failed batch's summary), and only once.
  CHECK(ask(servant, client, server, RemoveFile{"out.bin"}).error == 0);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.bin")));
  std::ofstream(dir.file("out.bin")) << "the user's again";
  CHECK(ask(servant, client, server, RemoveFile{"out.bin"}).error == EPERM);
  CHECK(cuconv::test::read_file(dir.file("out.bin")) == "the user's again");
}
