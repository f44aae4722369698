// SPDX-License-Identifier: Apache-2.0
// Encoding and decoding of the serve protocol's frames (see protocol.hpp for the format).
#include "serve/protocol.hpp"

#include <array>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace cuconv::serve {

namespace {

// ---- writing ----------------------------------------------------------------------------------
class Writer {
 public:
  bool operator()(std::uint8_t v) {
    bytes_.push_back(v);
    return true;
  }
  bool operator()(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return true;
  }
  bool operator()(std::int32_t v) { return (*this)(static_cast<std::uint32_t>(v)); }
  bool operator()(std::uint64_t v) {
    return (*this)(static_cast<std::uint32_t>(v)) && (*this)(static_cast<std::uint32_t>(v >> 32));
  }
  bool operator()(bool v) { return (*this)(static_cast<std::uint8_t>(v ? 1 : 0)); }
  bool operator()(const std::string& s) {
    if (s.size() > kMaxString)
      throw std::length_error("cuconv serve: a string of " + std::to_string(s.size()) +
                              " bytes is over the protocol's bound");
    (*this)(static_cast<std::uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return true;
  }
  bool operator()(const std::vector<std::string>& list) {
    if (list.size() > kMaxStrings) throw std::length_error("cuconv serve: too many strings for one message");
    (*this)(static_cast<std::uint32_t>(list.size()));
    for (const auto& s : list) (*this)(s);
    return true;
  }
  /// An enumeration travels as one byte; the writer trusts its own values.
  template <class E>
  bool enumerated(E v, std::uint8_t, const char*) {
    return (*this)(static_cast<std::uint8_t>(v));
  }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

// ---- reading: every read checks what is left, so a short or lying payload fails cleanly -------
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool operator()(std::uint8_t& v) {
    if (!need(1)) return false;
    v = bytes_[at_++];
    return true;
  }
  bool operator()(std::uint32_t& v) {
    if (!need(4)) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{bytes_[at_ + i]} << (8 * i);
    at_ += 4;
    return true;
  }
  bool operator()(std::uint64_t& v) {
    std::uint32_t low = 0, high = 0;
    if (!(*this)(low) || !(*this)(high)) return false;
    v = std::uint64_t{high} << 32 | low;
    return true;
  }
  bool operator()(std::int32_t& v) {
    std::uint32_t u = 0;
    if (!(*this)(u)) return false;
    v = static_cast<std::int32_t>(u);
    return true;
  }
  bool operator()(bool& v) {
    std::uint8_t b = 0;
    if (!(*this)(b)) return false;
    if (b > 1) return fail("a boolean is neither 0 nor 1");
    v = b == 1;
    return true;
  }
  bool operator()(std::string& s) {
    std::uint32_t size = 0;
    if (!(*this)(size)) return false;
    if (size > kMaxString) return fail("a string of " + std::to_string(size) + " bytes is over the bound");
    if (!need(size)) return false;
    s.assign(reinterpret_cast<const char*>(bytes_.data() + at_), size);
    at_ += size;
    return true;
  }
  bool operator()(std::vector<std::string>& list) {
    std::uint32_t count = 0;
    if (!(*this)(count)) return false;
    // Each string takes at least its 4-byte length: a count the payload cannot hold is a lie.
    if (count > kMaxStrings || count > (bytes_.size() - at_) / 4)
      return fail("a list of " + std::to_string(count) + " strings is over the bound");
    list.resize(count);
    for (auto& s : list) {
      if (!(*this)(s)) return false;
    }
    return true;
  }
  /// An enumeration's byte must name one of its values, 1..last.
  template <class E>
  bool enumerated(E& v, std::uint8_t last, const char* what) {
    std::uint8_t byte = 0;
    if (!(*this)(byte)) return false;
    if (byte < 1 || byte > last) return fail(std::string("unknown ") + what + " " + std::to_string(byte));
    v = static_cast<E>(byte);
    return true;
  }
  bool finish() {
    if (at_ != bytes_.size()) return fail(std::to_string(bytes_.size() - at_) + " bytes after the message");
    return true;
  }
  std::string error;

 private:
  bool need(std::size_t n) {
    if (bytes_.size() - at_ < n) return fail("the message is truncated");
    return true;
  }
  bool fail(std::string why) {
    if (error.empty()) error = std::move(why);
    return false;
  }
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
};

template <class M, class T>
constexpr bool is = std::is_same_v<std::remove_const_t<M>, T>;

// Each message's fields in wire order, written once for both directions: `io` is the Writer (M
// const) or the Reader (M mutable); every call returns false once a read has failed.
template <class IO, class M>
bool fields(IO& io, M& m) {
  if constexpr (is<M, Hello>) {
    if (!io(m.magic) || !io(m.version)) return false;
    // Another version's Hello ends here (what every version sends): the server answers it with a
    // version refusal the older client can read.
    if (m.version != kProtocolVersion) return true;
    return io.enumerated(m.purpose, 4, "hello purpose") && io(m.build) && io(m.engine_identity);
  } else if constexpr (is<M, Request>) {
    return io(m.err_is_terminal) && io(m.cwd) && io(m.argv) && io(m.environment) && io(m.file_size_limit);
  } else if constexpr (is<M, Reply>) {
    return io(m.error) && io(m.message) && io(m.value) && io(m.name) && io(m.names) && io(m.more);
  } else if constexpr (is<M, Welcome>) {
    return io(m.version) && io(m.server_pid) && io(m.ping_interval_ms) && io(m.build);
  } else if constexpr (is<M, Status>) {
    return io(m.pid) && io(m.build) && io(m.executable) && io(m.socket) && io(m.uptime_ms) && io(m.requests_served) &&
           io(m.clients_now) && io(m.clients_waiting) && io(m.devices) && io(m.gpu_memory_held) &&
           io(m.executable_replaced);
  } else if constexpr (is<M, Queued>) {
    return io(m.ahead) && io(m.ping_interval_ms);
  } else if constexpr (is<M, Refused>) {
    return io.enumerated(m.reason, kLastRefusalReason, "refusal reason") && io(m.message);
  } else if constexpr (is<M, KindQuery>) {
    return io(m.path) && io(m.follow_links);
  } else if constexpr (is<M, SameFile>) {
    return io(m.a) && io(m.b);
  } else if constexpr (is<M, Publish>) {
    return io(m.temp_name) && io(m.output) && io(m.overwrite);
  } else if constexpr (is<M, OpenInput> || is<M, ListDirectory> || is<M, MakeDirectories> || is<M, RemoveFile>) {
    return io(m.path);
  } else if constexpr (is<M, CreateTemp>) {
    return io(m.output);
  } else if constexpr (is<M, CreateScratch>) {
    return io(m.folder);
  } else if constexpr (is<M, Discard>) {
    return io(m.temp_name);
  } else if constexpr (is<M, Exit>) {
    return io(m.code);
  } else if constexpr (is<M, Interrupt>) {
    return io(m.signal);
  } else {
    static_assert(is<M, Ping>, "a message without its fields here");
    return true;
  }
}

// The one list of message kinds: the wire type and name of each alternative of Message, in the
// variant's order.
struct Kind {
  MessageType type;
  const char* name;
};
constexpr std::array<Kind, std::variant_size_v<Message>> kKinds{{
    {MessageType::hello, "hello"},
    {MessageType::request, "request"},
    {MessageType::reply, "reply"},
    {MessageType::welcome, "welcome"},
    {MessageType::queued, "queued"},
    {MessageType::refused, "refused"},
    {MessageType::open_input, "open_input"},
    {MessageType::kind, "kind"},
    {MessageType::same_file, "same_file"},
    {MessageType::list_directory, "list_directory"},
    {MessageType::create_temp, "create_temp"},
    {MessageType::publish, "publish"},
    {MessageType::discard, "discard"},
    {MessageType::exit, "exit"},
    {MessageType::ping, "ping"},
    {MessageType::make_directories, "make_directories"},
    {MessageType::remove_file, "remove_file"},
    {MessageType::interrupt, "interrupt"},
    {MessageType::status, "status"},
    {MessageType::create_scratch, "create_scratch"},
}};

template <std::size_t I>
std::optional<Message> decode_as(std::span<const std::uint8_t> payload, std::string& error) {
  Reader reader(payload);
  std::variant_alternative_t<I, Message> message;
  if (!fields(reader, message) || !reader.finish()) {
    error = std::string(kKinds[I].name) + ": " + reader.error;
    return std::nullopt;
  }
  return Message{std::in_place_index<I>, std::move(message)};
}

// The alternative whose wire type is `type`, decoded; nullopt with `found` false for an unknown type.
template <std::size_t... I>
std::optional<Message> decode_type(std::uint8_t type, std::span<const std::uint8_t> payload, std::string& error,
                                   bool& found, std::index_sequence<I...>) {
  std::optional<Message> out;
  const auto decode_if = [&](std::size_t index, auto decode) {
    if (static_cast<std::uint8_t>(kKinds[index].type) != type) return false;
    found = true;
    out = decode(payload, error);
    return true;
  };
  static_cast<void>((decode_if(I, decode_as<I>) || ...));
  return out;
}

}  // namespace

std::size_t fds_carried(const Message& message) {
  if (std::holds_alternative<Request>(message)) return 3;
  return 0;  // a Reply's descriptor depends on the operation it answers: the channel's caller knows
}

std::vector<std::uint8_t> encode(const Message& message) {
  Writer w;
  for (std::size_t i = 0; i < kHeaderSize; ++i) w(std::uint8_t{0});
  std::visit([&](const auto& m) { fields(w, m); }, message);
  auto& bytes = w.bytes();
  const std::size_t payload = bytes.size() - kHeaderSize;
  if (payload > kMaxPayload)
    throw std::length_error("cuconv serve: a message of " + std::to_string(payload) +
                            " bytes is over the protocol's bound");
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::uint8_t>(payload >> (8 * i));
  bytes[4] = static_cast<std::uint8_t>(kKinds[message.index()].type);
  return std::move(bytes);
}

std::optional<FrameHeader> parse_header(std::span<const std::uint8_t> bytes, std::string& error) {
  if (bytes.size() < kHeaderSize) {
    error = "a frame header is 5 bytes";
    return std::nullopt;
  }
  std::size_t size = 0;
  for (int i = 0; i < 4; ++i) size |= std::size_t{bytes[i]} << (8 * i);
  if (size > kMaxPayload) {
    error = "a message of " + std::to_string(size) + " bytes is over the bound of " + std::to_string(kMaxPayload);
    return std::nullopt;
  }
  return FrameHeader{size, bytes[4]};
}

std::optional<Message> decode(std::uint8_t type, std::span<const std::uint8_t> payload, std::string& error) noexcept {
  try {
    if (payload.size() > kMaxPayload) {
      error = "a message over the bound";
      return std::nullopt;
    }
    bool found = false;
    auto message = decode_type(type, payload, error, found, std::make_index_sequence<kKinds.size()>{});
    if (found) return message;
    error = "unknown message type " + std::to_string(type);
  } catch (const std::bad_alloc&) {
    error = "out of memory decoding a message";
  }
  return std::nullopt;
}

const char* type_name(std::uint8_t type) noexcept {
  for (const auto& kind : kKinds) {
    if (static_cast<std::uint8_t>(kind.type) == type) return kind.name;
  }
  return "unknown";
}

bool forwarded_variable(std::string_view name) noexcept {
  return name.starts_with("CUCONV_") || name.starts_with("SLURM_") || name.starts_with("OPENCV_") ||
         name.starts_with("LC_") || name == "LANG" || name == "TMPDIR" || name == "TMP" || name == "TEMP" ||
         name == "TEMPDIR";
}

}  // namespace cuconv::serve
