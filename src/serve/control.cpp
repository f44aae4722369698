// SPDX-License-Identifier: Apache-2.0
// Status and stop requests to a running server (see control.hpp).
#include "serve/control.hpp"

#include "serve/build_identity.hpp"

#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <thread>

namespace cuconv::serve {

namespace {

/// Whether process `pid` is gone (or a zombie: it has exited) within `limit_ms`.
bool process_ends(std::uint32_t pid, int limit_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
  const std::string stat_path = "/proc/" + std::to_string(pid) + "/stat";
  for (;;) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat(stat_path);
    std::string line;
    std::getline(stat, line);
    const auto paren = line.rfind(')');
    if (!stat || (paren != std::string::npos && line.compare(paren, 3, ") Z") == 0)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

ServerAnswer ask_server(const std::string& socket_path, HelloPurpose purpose, int timeout_ms, int stop_wait_ms) {
  ServerAnswer answer;
  UniqueFd socket;
  answer.connected = connect_socket(socket_path, timeout_ms, socket, answer.why);
  if (answer.connected != Connect::ok) {
    if (answer.connected == Connect::absent) answer.why = "no server listens on " + socket_path;
    return answer;
  }
  if (peer_credentials(socket.get()).uid != static_cast<long>(::getuid())) {
    answer.why = socket_path + " is served by another user";
    return answer;
  }
  Channel channel(std::move(socket));
  if (!channel.send(Hello{kProtocolMagic, kProtocolVersion, purpose, build_description(), ""})) {
    answer.why = socket_path + ": " + std::strerror(errno);
    return answer;
  }
  for (;;) {
    Received received = channel.receive(timeout_ms);
    if (received.status != Received::Status::message) {
      answer.why = socket_path + ": " +
                   (received.status == Received::Status::timeout ? "the server did not answer"
                    : received.error.empty()                     ? "the server closed the connection"
                                                                 : received.error);
      return answer;
    }
    if (std::holds_alternative<Ping>(received.message)) continue;
    if (auto* status = std::get_if<Status>(&received.message)) {
      answer.status = std::move(*status);
      break;
    }
    if (const auto* refused = std::get_if<Refused>(&received.message)) {
      answer.why = refused->message;
      return answer;
    }
    answer.why = socket_path + ": the server answered out of turn";
    return answer;
  }
  if (purpose != HelloPurpose::stop) return answer;
  for (;;) {
    const Received received = channel.receive(stop_wait_ms);
    if (received.status == Received::Status::message) continue;  // a Ping, or whatever: wait for the end
    answer.ended = received.status == Received::Status::closed && process_ends(answer.status->pid, 10'000);
    if (!answer.ended) answer.why = "the server (pid " + std::to_string(answer.status->pid) + ") has not stopped yet";
    return answer;
  }
}

std::string describe_status(const Status& status) {
  const std::uint64_t seconds = status.uptime_ms / 1000;
  std::string up = std::to_string(seconds % 60) + " s";
  if (seconds >= 60) up = std::to_string(seconds / 60 % 60) + " min " + up;
  if (seconds >= 3600) up = std::to_string(seconds / 3600) + " h " + up;
  std::string text;
  text += "running: yes\n";
  text += "pid: " + std::to_string(status.pid) + "\n";
  text += "build: " + status.build + "\n";
  text += "executable: " + status.executable +
          (status.executable_replaced ? " (replaced since it started: exits once idle)" : "") + "\n";
  text += "socket: " + status.socket + "\n";
  text += "uptime: " + up + "\n";
  text += "devices: " + (status.devices.empty() ? std::string("-") : status.devices) + "\n";
  text += "GPU memory held: " + std::to_string(status.gpu_memory_held) + " bytes\n";
  text += "requests served: " + std::to_string(status.requests_served) + "\n";
  text += "clients now: " + std::to_string(status.clients_now) + " running, " + std::to_string(status.clients_waiting) +
          " waiting\n";
  return text;
}

}  // namespace cuconv::serve
