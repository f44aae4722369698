// SPDX-License-Identifier: Apache-2.0
#pragma once
// Asking a running server about itself or to stop, through the protocol (Hello's purpose), so it
// works the same for a server the user started and one systemd's socket activation started:
// `cuconv serve --status`, `cuconv serve --stop`, and a client of another build asking a server
// to exit once idle.
#include "serve/channel.hpp"
#include "serve/protocol.hpp"

#include <optional>
#include <string>

namespace cuconv::serve {

struct ServerAnswer {
  Connect connected = Connect::absent;  ///< absent: no server listens there
  std::optional<Status> status;         ///< the server's Status when it answered
  std::string why;                      ///< why there is no Status
  bool ended = false;                   ///< purpose stop: the server closed the connection as it stopped
};

/// Connects to `socket_path`, says Hello with `purpose` (status, stop or stop_when_idle) and
/// reads the Status, waiting up to `timeout_ms` for each. With purpose stop it then waits up to
/// `stop_wait_ms` (-1: no limit) for the server to stop: its end of the connection closes once it
/// has drained, and then its process ends (ended is true once both have happened, within 10 s).
[[nodiscard]] ServerAnswer ask_server(const std::string& socket_path, HelloPurpose purpose, int timeout_ms,
                                      int stop_wait_ms = -1);

/// A Status in words, one "name: value" a line (`cuconv serve --status`).
[[nodiscard]] std::string describe_status(const Status& status);

}  // namespace cuconv::serve
