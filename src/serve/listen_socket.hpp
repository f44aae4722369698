// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where `cuconv serve` listens: its own socket, bound safely at a path, or the ones systemd passes.
#include "serve/channel.hpp"
#include "serve/socket_path.hpp"

#include <string>
#include <vector>

namespace cuconv::serve {

/// Binds and listens on `where`; the lock file beside it keeps a second server off the socket.
/// Only a stale socket of this user is ever replaced there: a file, a link, a folder, another
/// user's socket or a socket that answers is left alone and named in `error`. Returns the
/// listening socket or an empty UniqueFd with `error` set.
[[nodiscard]] UniqueFd bind_socket(const SocketPath& where, UniqueFd& lock, std::string& error);

/// The listening sockets systemd passed (sd_listen_fds(3): LISTEN_PID is this process, LISTEN_FDS
/// descriptors from 3), marked close-on-exec; the three variables are removed from the environment.
[[nodiscard]] std::vector<int> systemd_listen_fds();

}  // namespace cuconv::serve
