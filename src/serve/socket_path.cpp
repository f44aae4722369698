// SPDX-License-Identifier: Apache-2.0
// Default socket path and the checks on its folder (see socket_path.hpp).
#include "serve/socket_path.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cuconv::serve {

namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string octal(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode & 07777u);
  return text;
}

/// `path` made absolute from the working folder (unchanged when it cannot be read).
std::string absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace

SocketPath default_socket_path() {
  if (const char* env = std::getenv("CUCONV_SOCKET"); env != nullptr && *env != '\0') {
    return explicit_socket_path(env);
  }
  std::string folder;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && runtime[0] == '/') {
    folder = std::string(runtime) + "/cuconv";
  } else {
    folder = "/tmp/cuconv-" + std::to_string(::getuid());
  }
  return SocketPath{folder + "/socket", folder, false};
}

SocketPath explicit_socket_path(const std::string& path) {
  const std::string full = absolute(path);
  return SocketPath{full, folder_of(full), true};
}

namespace {

/// A real directory (not a link), owned by this uid, without any of the `forbidden` mode bits
/// (`rule` says which are wanted); an empty string when so, else why not.
std::string check_folder(const std::string& folder, unsigned forbidden, const char* rule) {
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) return folder + ": " + std::strerror(errno);
  if (S_ISLNK(st.st_mode))
    return folder + ": not a directory but a symbolic link; the socket's folder must be a real one";
  if (!S_ISDIR(st.st_mode)) return folder + ": not a directory (a private folder for the socket is needed)";
  if (st.st_uid != ::getuid()) {
    return folder + ": owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(::getuid()) + "); refusing to use it for the socket";
  }
  if ((st.st_mode & forbidden) != 0) return folder + ": mode " + octal(st.st_mode) + rule;
  return {};
}

}  // namespace

std::string check_socket_folder(const std::string& folder) {
  return check_folder(folder, 022,
                      " lets other users put files in it; the socket's folder must not be group- or world-writable");
}

std::string check_private_folder(const std::string& folder) {
  return check_folder(folder, 077,
                      " lets other users in; the socket's folder must be 0700 (chmod 700 it or remove it)");
}

std::string prepare_private_folder(const std::string& folder) {
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    return folder + ": cannot create the socket's folder: " + std::strerror(errno);
  }
  return check_private_folder(folder);
}

}  // namespace cuconv::serve
