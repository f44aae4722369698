// SPDX-License-Identifier: Apache-2.0
// The serve protocol: every message's encoding, the bounds a decoder and a frame header enforce, and a
// live server refusing oversized, malformed and other-version messages.
#include "serve_support.hpp"

#include "serve/channel.hpp"
#include "serve/protocol.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <string>
#include <vector>

using namespace cuconv::test;
using namespace cuconv::serve;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST_CASE("serve protocol: every message survives encode and decode") {
  const std::vector<Message> messages{
      Hello{},
      Request{{"cuconv", "in.png", "out.png", "-f", "gauss5"},
              "/home/u",
              true,
              {"CUCONV_NO_GPU_WARNING=1", "TMPDIR=/t"},
              (std::uint64_t{1} << 40) + 8192},
      Reply{2, "No such file or directory", 1, ".cuconv-tmp-out.png.abc123", {"a", "b", ""}, true},
      Welcome{1, 4242, 5000},
      Queued{3, 5000},
      Refused{RefusalReason::other_user, "no"},
      OpenInput{"in.png"},
      KindQuery{"out", true},
      SameFile{"a", "b"},
      ListDirectory{"photos"},
      CreateTemp{"out/x.jpg"},
      Publish{".cuconv-tmp-x", "x", true},
      Discard{".cuconv-tmp-x"},
      Exit{-3},
      Ping{},
      MakeDirectories{"out/a"},
      RemoveFile{"out/summary.json"},
      Interrupt{2}};
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
  CHECK_NOTHROW(
      (void)encode(Request{std::vector<std::string>(16, std::string(std::size_t{128} * 1024, 'a')), "/", false}));
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
