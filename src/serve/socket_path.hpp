// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where a user's `cuconv serve` listens: $CUCONV_SOCKET, else $XDG_RUNTIME_DIR/cuconv/socket, else
// /tmp/cuconv-$UID/socket. A default path's folder belongs to the user alone (0700, owned by the
// user): the server creates it so, and both sides refuse one that another user could have made or
// can enter, so no one else can listen in the user's place or reach the user's server.
#include <string>

namespace cuconv::serve {

struct SocketPath {
  std::string path;       ///< the socket's path
  std::string folder;     ///< the folder that holds it
  bool from_environment;  ///< named by $CUCONV_SOCKET or --socket: its folder is the user's choice
};

/// The socket this user's server listens on and clients connect to (reads the environment).
[[nodiscard]] SocketPath default_socket_path();

/// A socket path given by the user (`--socket PATH`); same shape as default_socket_path(). A
/// relative path (here and in $CUCONV_SOCKET) is made absolute from the working folder.
[[nodiscard]] SocketPath explicit_socket_path(const std::string& path);

/// The checks on a folder the user chose for a socket (--socket, $CUCONV_SOCKET), as ssh-agent's
/// and emacs's: a real directory (not a symbolic link), owned by this uid, that neither group nor
/// others may write to (so no one else can put a socket or a link in it). An empty string when
/// fit, else why not; creates nothing, never throws.
[[nodiscard]] std::string check_socket_folder(const std::string& folder);

/// Makes `folder` (one level, mode 0700) when it does not exist. Returns an empty string when the
/// folder is fit for a private socket (a real directory, owned by this uid, no group or other
/// permission bits), else a message saying why not; never throws.
[[nodiscard]] std::string prepare_private_folder(const std::string& folder);

/// The same checks without creating anything (clients); an empty string when fit.
[[nodiscard]] std::string check_private_folder(const std::string& folder);

}  // namespace cuconv::serve
