// SPDX-License-Identifier: Apache-2.0
#pragma once
// The wire protocol between `cuconv` (client) and `cuconv serve` over a SOCK_STREAM unix socket.
//
// A frame is a 4-byte little-endian payload length, a 1-byte message type, then the payload.
// Integers are little-endian; a string is a u32 length and its bytes; a list of strings is a u32
// count and the strings. Descriptors travel as SCM_RIGHTS attached to their message's first byte.
// Bounds (a frame over them is refused before anything is allocated):
//   payload <= kMaxPayload (4 MiB: more than Linux's whole argv, ARG_MAX = 2 MiB by default),
//   one string <= kMaxString (128 KiB, Linux's MAX_ARG_STRLEN), strings in a list <= kMaxStrings,
//   descriptors per message <= kMaxFds.
//
// A conversation (docs/serve.md):
//   client: Hello                     server: Welcome | Queued.. Welcome | Refused (then closes)
//   (Hello's purpose status, stop or stop_when_idle: the server answers Status instead of
//   Welcome; after stop it drains and closes the connection when it has stopped)
//   client: Request + fds 0,1,2       server: file operations, each answered by one Reply,
//                                             then Exit (then closes)
//   client: Interrupt, at any time after Request: the command stops at its next step, as a
//   process of its own does on that signal, and still ends with Exit.
// While a request runs the server also sends Ping every Welcome::ping_interval_ms, so a client
// can tell a stopped server (no Ping) from a busy one; Ping needs no answer.
// File operations come from the server; the client performs them with its own rights and answers
// (OpenInput and CreateTemp with a descriptor), so the server never opens a path a client named.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cuconv::serve {

inline constexpr std::uint32_t kProtocolMagic = 0x43564355;  // "UCVC" on the wire: "cuconv"'s tag
inline constexpr std::uint32_t kProtocolVersion = 4;
inline constexpr std::size_t kHeaderSize = 5;
inline constexpr std::size_t kMaxPayload = std::size_t{4} << 20;
inline constexpr std::size_t kMaxString = std::size_t{128} << 10;
inline constexpr std::size_t kMaxStrings = std::size_t{1} << 18;
inline constexpr std::size_t kMaxFds = 3;
/// Names per directory-listing Reply; a longer listing comes as several (more = true).
inline constexpr std::size_t kListChunkBytes = std::size_t{1} << 20;

enum class MessageType : std::uint8_t {
  // client -> server
  hello = 1,
  request = 2,
  reply = 3,
  interrupt = 4,
  // server -> client
  welcome = 20,
  queued = 21,
  refused = 22,
  open_input = 23,
  kind = 24,
  same_file = 25,
  list_directory = 26,
  create_temp = 27,
  publish = 28,
  discard = 29,
  exit = 30,
  ping = 31,
  make_directories = 32,
  remove_file = 33,
  status = 34,
  create_scratch = 35,
};

/// Why a client connects: to run a command, to ask how the server is, to stop it (drain and
/// exit, as SIGTERM), or to have it exit once its last request has ended (a client of another
/// build found it).
enum class HelloPurpose : std::uint8_t { command = 1, status = 2, stop = 3, stop_when_idle = 4 };
/// A Hello of another protocol version is encoded as magic and version only (what every version
/// sends first), so that a server of any version can refuse it in words.
struct Hello {
  std::uint32_t magic = kProtocolMagic;
  std::uint32_t version = kProtocolVersion;
  HelloPurpose purpose = HelloPurpose::command;
  /// The client's build, for messages: "cuconv VERSION, commit C, BUILDTYPE build, CUDA X.Y".
  std::string build;
  /// The engine binary the client would exec ("dev:inode:size:mtime_ns", file_identity()); a
  /// server whose own executable differs refuses a command (RefusalReason::build). Empty: unchecked.
  std::string engine_identity;
  bool operator==(const Hello&) const = default;
};
/// The command: argv (argv[0] the program name), the client's working folder (for logs; the
/// client resolves relative paths itself), whether its stderr is a terminal, and the client's
/// environment variables that cuconv reads (forwarded_variable(): "NAME=value"). Carries 3 fds.
struct Request {
  std::vector<std::string> argv;
  std::string cwd;
  bool err_is_terminal = false;
  std::vector<std::string> environment;
  /// The client's RLIMIT_FSIZE in bytes (`ulimit -f`); 0: none. Its outputs are held to it.
  std::uint64_t file_size_limit = 0;
  bool operator==(const Request&) const = default;
};
/// The answer to one file operation. `error` is 0 or an errno value, `message` the client's text
/// for it. `value`: a FileKind for kind, 0/1 for same_file and publish. `name`: the temporary file
/// create_temp made. `names` and `more`: one chunk of a directory listing. Carries 1 fd when it
/// answers open_input or create_temp with error == 0.
struct Reply {
  std::int32_t error = 0;
  std::string message;
  std::uint32_t value = 0;
  std::string name;
  std::vector<std::string> names;
  bool more = false;
  bool operator==(const Reply&) const = default;
};
struct Welcome {
  std::uint32_t version = kProtocolVersion;
  std::uint32_t server_pid = 0;
  std::uint32_t ping_interval_ms = 0;  ///< 0: the server sends no Ping
  std::string build;                   ///< the server's build (Hello::build's form)
  bool operator==(const Welcome&) const = default;
};
/// The server is at its client limit; a Welcome follows when a place frees.
struct Queued {
  std::uint32_t ahead = 0;             ///< clients waiting before this one
  std::uint32_t ping_interval_ms = 0;  ///< waiting clients are pinged too; 0: no Ping
  bool operator==(const Queued&) const = default;
};
/// build: the server runs another cuconv build than the client's engine; environment: the command
/// needs something of the caller's the server cannot reproduce (the client runs it in-process).
enum class RefusalReason : std::uint8_t {
  other_user = 1,
  version = 2,
  busy = 3,
  shutting_down = 4,
  bad_message = 5,
  build = 6,
  environment = 7,
};
inline constexpr std::uint8_t kLastRefusalReason = 7;
struct Refused {
  RefusalReason reason = RefusalReason::bad_message;
  std::string message;
  bool operator==(const Refused&) const = default;
};
/// The server's answer to a Hello of purpose status, stop or stop_when_idle.
struct Status {
  std::uint32_t pid = 0;
  std::string build;
  std::string executable;  ///< the server's executable (as it was at start)
  std::string socket;      ///< what it listens on ("N socket(s) from systemd" when activated)
  std::uint64_t uptime_ms = 0;
  std::uint64_t requests_served = 0;
  std::uint32_t clients_now = 0;      ///< requests running
  std::uint32_t clients_waiting = 0;  ///< clients queued for a place
  std::string devices;                ///< the GPUs it serves on, in words
  std::uint64_t gpu_memory_held = 0;  ///< bytes of device memory it holds
  bool executable_replaced = false;   ///< its executable was replaced (an upgrade) since it started
  bool operator==(const Status&) const = default;
};
struct OpenInput {
  std::string path;
  bool operator==(const OpenInput&) const = default;
};
struct KindQuery {
  std::string path;
  bool follow_links = false;
  bool operator==(const KindQuery&) const = default;
};
struct SameFile {
  std::string a, b;
  bool operator==(const SameFile&) const = default;
};
struct ListDirectory {
  std::string path;
  bool operator==(const ListDirectory&) const = default;
};
struct CreateTemp {
  std::string output;
  bool operator==(const CreateTemp&) const = default;
};
/// A scratch file in the client's `folder` (answered by a Reply carrying one descriptor).
struct CreateScratch {
  std::string folder;
  bool operator==(const CreateScratch&) const = default;
};
struct Publish {
  std::string temp_name, output;
  bool overwrite = false;
  bool operator==(const Publish&) const = default;
};
struct Discard {
  std::string temp_name;
  bool operator==(const Discard&) const = default;
};
struct MakeDirectories {
  std::string path;
  bool operator==(const MakeDirectories&) const = default;
};
struct RemoveFile {
  std::string path;
  bool operator==(const RemoveFile&) const = default;
};
struct Exit {
  std::int32_t code = 0;
  bool operator==(const Exit&) const = default;
};
struct Ping {
  bool operator==(const Ping&) const = default;
};
/// The client got `signal` (SIGINT, SIGTERM, SIGHUP) while its command ran.
struct Interrupt {
  std::int32_t signal = 0;
  bool operator==(const Interrupt&) const = default;
};

using Message = std::variant<Hello, Request, Reply, Welcome, Queued, Refused, OpenInput, KindQuery, SameFile,
                             ListDirectory, CreateTemp, Publish, Discard, Exit, Ping, MakeDirectories, RemoveFile,
                             Interrupt, Status, CreateScratch>;

/// How many descriptors travel with `message` (0, 1 or 3).
[[nodiscard]] std::size_t fds_carried(const Message& message);

/// The whole frame (header and payload) for `message`; throws std::length_error past the bounds.
[[nodiscard]] std::vector<std::uint8_t> encode(const Message& message);

/// What a frame header says, or why it is refused.
struct FrameHeader {
  std::size_t payload_size = 0;
  std::uint8_t type = 0;
};
/// Reads a header from at least kHeaderSize bytes; an empty optional when the declared payload is
/// over kMaxPayload (`error` says so).
[[nodiscard]] std::optional<FrameHeader> parse_header(std::span<const std::uint8_t> bytes, std::string& error);

/// Decodes one payload of message type `type`. Pure: no allocation beyond the bounds, never throws;
/// an empty optional with `error` set for an unknown type, a truncated or over-long payload, a
/// bound exceeded or an out-of-range enum. This is what tests/fuzz/fuzz_serve_protocol.cpp drives.
[[nodiscard]] std::optional<Message> decode(std::uint8_t type, std::span<const std::uint8_t> payload,
                                            std::string& error) noexcept;

/// The name of a message type, for logs and errors.
[[nodiscard]] const char* type_name(std::uint8_t type) noexcept;

/// Whether a served command sees the client's value of environment variable `name` (the client
/// sends its whole environment): the ones the product and its libraries read (CUCONV_*, Slurm's
/// SLURM_*, OpenCV's OPENCV_*, the temporary folder's TMPDIR, TMP, TEMP and TEMPDIR, the locale's
/// LANG and LC_*), so a served command sees the caller's, not the server's.
[[nodiscard]] bool forwarded_variable(std::string_view name) noexcept;

}  // namespace cuconv::serve
