// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the serve protocol (src/serve/protocol.cpp): the input is a byte stream as
// a server or client would read it from the socket, cut into frames by parse_header and decoded by
// decode, exactly as serve::Channel does. A frame either is refused (over the bounds, unknown type,
// truncated, trailing bytes, bad enum) or decodes to a message that encodes back to the same bytes.
// Anything else (a crash, a sanitizer report, a round trip that differs) is a bug.
#include "serve/protocol.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cuconv::serve;
  std::span<const std::uint8_t> rest(data, size);
  while (rest.size() >= kHeaderSize) {
    std::string error;
    const auto header = parse_header(rest, error);
    if (!header) return 0;                                           // refused: the connection would close here
    if (rest.size() - kHeaderSize < header->payload_size) return 0;  // waits for more bytes
    const auto payload = rest.subspan(kHeaderSize, header->payload_size);
    if (const auto message = decode(header->type, payload, error)) {
      const std::vector<std::uint8_t> again = encode(*message);
      const std::span<const std::uint8_t> frame = rest.first(kHeaderSize + header->payload_size);
      if (again.size() != frame.size() || !std::equal(again.begin(), again.end(), frame.begin())) std::abort();
    } else if (error.empty()) {
      std::abort();  // every refusal says why
    }
    rest = rest.subspan(kHeaderSize + header->payload_size);
  }
  return 0;
}
