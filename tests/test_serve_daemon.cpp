// SPDX-License-Identifier: Apache-2.0
// The server as a daemon (issue 59): protocol version 4's messages, build identity, status and
// stop, isolation of clients from each other, deadlines, and the socket's safety checks.
#include "serve/build_identity.hpp"
#include "serve/protocol.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include <string>
#include <vector>

using namespace cuconv::serve;

TEST_CASE("serve protocol 4: Hello, Welcome, Status and CreateScratch survive encode and decode") {
  Status status{4242, "cuconv 0.1.0, commit abc, Release build, CUDA 12.4", "/usr/libexec/cuconv/cuconv-engine",
                "/run/user/1000/cuconv/socket", 123456789012ULL, 77, 3, 2, "0 (NVIDIA H200)", 1ULL << 33, true};
  const std::vector<Message> messages{
      Hello{kProtocolMagic, kProtocolVersion, HelloPurpose::stop_when_idle, "cuconv 0.1.0", "2049:1234:99:1700000000123456789"},
      Hello{kProtocolMagic, kProtocolVersion, HelloPurpose::status, "", ""},
      Hello{kProtocolMagic, 3},  // another version's Hello: magic and version only
      Welcome{kProtocolVersion, 17, 250, "cuconv 0.1.0, commit abc"},
      status,
      Refused{RefusalReason::build, "another build"},
      Refused{RefusalReason::environment, "not here"},
      CreateScratch{"/tmp/x"}};
  for (const Message& message : messages) {
    const auto frame = encode(message);
    std::string error;
    const auto header = parse_header(frame, error);
    REQUIRE(header);
    const auto decoded = decode(header->type, std::span(frame).subspan(kHeaderSize), error);
    REQUIRE_MESSAGE(decoded, type_name(header->type) << ": " << error);
    CHECK(*decoded == message);
  }
  CHECK(encode(Hello{kProtocolMagic, 3}).size() == kHeaderSize + 8);
}

TEST_CASE("serve protocol 4: out-of-range purposes and refusal reasons are refused") {
  auto frame = encode(Hello{kProtocolMagic, kProtocolVersion, HelloPurpose::status, "b", "i"});
  std::string error;
  frame[kHeaderSize + 8] = 5;  // the purpose byte
  CHECK_FALSE(decode(static_cast<std::uint8_t>(MessageType::hello), std::span(frame).subspan(kHeaderSize), error));
  CHECK(error.find("purpose") != std::string::npos);
  frame[kHeaderSize + 8] = 0;
  CHECK_FALSE(decode(static_cast<std::uint8_t>(MessageType::hello), std::span(frame).subspan(kHeaderSize), error));
  auto refused = encode(Refused{RefusalReason::environment, "x"});
  refused[kHeaderSize] = kLastRefusalReason + 1;
  CHECK_FALSE(decode(static_cast<std::uint8_t>(MessageType::refused), std::span(refused).subspan(kHeaderSize), error));
  CHECK(error.find("refusal reason") != std::string::npos);
}

TEST_CASE("build identity: this build in words, a file's identity changes when it is replaced") {
  CHECK(build_description().starts_with("cuconv "));
  CHECK(build_description().find(", commit ") != std::string::npos);
  const std::string self = own_executable();
  REQUIRE_FALSE(self.empty());
  const std::string id = file_identity(self);
  CHECK(std::count(id.begin(), id.end(), ':') == 3);
  CHECK(file_identity(self) == id);
  CHECK(file_identity("/nonexistent/cuconv-engine").empty());
}
