// SPDX-License-Identifier: Apache-2.0
// Encoding and decoding of the serve protocol's frames (see protocol.hpp for the format).
#include "serve/protocol.hpp"

#include <stdexcept>
#include <type_traits>

namespace cuconv::serve {

namespace {

// ---- writing ----------------------------------------------------------------------------------
class Writer {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(v); }
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void u64(std::uint64_t v) {
    u32(static_cast<std::uint32_t>(v));
    u32(static_cast<std::uint32_t>(v >> 32));
  }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void string(const std::string& s) {
    if (s.size() > kMaxString)
      throw std::length_error("cuconv serve: a string of " + std::to_string(s.size()) +
                              " bytes is over the protocol's bound");
    u32(static_cast<std::uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void strings(const std::vector<std::string>& list) {
    if (list.size() > kMaxStrings) throw std::length_error("cuconv serve: too many strings for one message");
    u32(static_cast<std::uint32_t>(list.size()));
    for (const auto& s : list) string(s);
  }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

void put(Writer& w, const Hello& m) {
  w.u32(m.magic);
  w.u32(m.version);
  if (m.version != kProtocolVersion) return;  // another version's Hello: what every version sends
  w.u8(static_cast<std::uint8_t>(m.purpose));
  w.string(m.build);
  w.string(m.engine_identity);
}
void put(Writer& w, const Request& m) {
  w.boolean(m.err_is_terminal);
  w.string(m.cwd);
  w.strings(m.argv);
  w.strings(m.environment);
  w.u64(m.file_size_limit);
}
void put(Writer& w, const Reply& m) {
  w.i32(m.error);
  w.string(m.message);
  w.u32(m.value);
  w.string(m.name);
  w.strings(m.names);
  w.boolean(m.more);
}
void put(Writer& w, const Welcome& m) {
  w.u32(m.version);
  w.u32(m.server_pid);
  w.u32(m.ping_interval_ms);
  w.string(m.build);
}
void put(Writer& w, const Status& m) {
  w.u32(m.pid);
  w.string(m.build);
  w.string(m.executable);
  w.string(m.socket);
  w.u64(m.uptime_ms);
  w.u64(m.requests_served);
  w.u32(m.clients_now);
  w.u32(m.clients_waiting);
  w.string(m.devices);
  w.u64(m.gpu_memory_held);
  w.boolean(m.executable_replaced);
}
void put(Writer& w, const CreateScratch& m) { w.string(m.folder); }
void put(Writer& w, const Queued& m) {
  w.u32(m.ahead);
  w.u32(m.ping_interval_ms);
}
void put(Writer& w, const Refused& m) {
  w.u8(static_cast<std::uint8_t>(m.reason));
  w.string(m.message);
}
void put(Writer& w, const OpenInput& m) { w.string(m.path); }
void put(Writer& w, const KindQuery& m) {
  w.string(m.path);
  w.boolean(m.follow_links);
}
void put(Writer& w, const SameFile& m) {
  w.string(m.a);
  w.string(m.b);
}
void put(Writer& w, const ListDirectory& m) { w.string(m.path); }
void put(Writer& w, const CreateTemp& m) { w.string(m.output); }
void put(Writer& w, const Publish& m) {
  w.string(m.temp_name);
  w.string(m.output);
  w.boolean(m.overwrite);
}
void put(Writer& w, const Discard& m) { w.string(m.temp_name); }
void put(Writer& w, const Exit& m) { w.i32(m.code); }
void put(Writer&, const Ping&) {}
void put(Writer& w, const MakeDirectories& m) { w.string(m.path); }
void put(Writer& w, const RemoveFile& m) { w.string(m.path); }
void put(Writer& w, const Interrupt& m) { w.i32(m.signal); }

template <class T>
constexpr MessageType type_of();
template <>
constexpr MessageType type_of<Hello>() {
  return MessageType::hello;
}
template <>
constexpr MessageType type_of<Request>() {
  return MessageType::request;
}
template <>
constexpr MessageType type_of<Reply>() {
  return MessageType::reply;
}
template <>
constexpr MessageType type_of<Welcome>() {
  return MessageType::welcome;
}
template <>
constexpr MessageType type_of<Queued>() {
  return MessageType::queued;
}
template <>
constexpr MessageType type_of<Refused>() {
  return MessageType::refused;
}
template <>
constexpr MessageType type_of<OpenInput>() {
  return MessageType::open_input;
}
template <>
constexpr MessageType type_of<KindQuery>() {
  return MessageType::kind;
}
template <>
constexpr MessageType type_of<SameFile>() {
  return MessageType::same_file;
}
template <>
constexpr MessageType type_of<ListDirectory>() {
  return MessageType::list_directory;
}
template <>
constexpr MessageType type_of<CreateTemp>() {
  return MessageType::create_temp;
}
template <>
constexpr MessageType type_of<Publish>() {
  return MessageType::publish;
}
template <>
constexpr MessageType type_of<Discard>() {
  return MessageType::discard;
}
template <>
constexpr MessageType type_of<Exit>() {
  return MessageType::exit;
}
template <>
constexpr MessageType type_of<Ping>() {
  return MessageType::ping;
}
template <>
constexpr MessageType type_of<MakeDirectories>() {
  return MessageType::make_directories;
}
template <>
constexpr MessageType type_of<RemoveFile>() {
  return MessageType::remove_file;
}
template <>
constexpr MessageType type_of<Interrupt>() {
  return MessageType::interrupt;
}
template <>
constexpr MessageType type_of<Status>() {
  return MessageType::status;
}
template <>
constexpr MessageType type_of<CreateScratch>() {
  return MessageType::create_scratch;
}

// ---- reading: every read checks what is left, so a short or lying payload fails cleanly -------
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool u8(std::uint8_t& v) {
    if (!need(1)) return false;
    v = bytes_[at_++];
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (!need(4)) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{bytes_[at_ + i]} << (8 * i);
    at_ += 4;
    return true;
  }
  bool u64(std::uint64_t& v) {
    std::uint32_t low = 0, high = 0;
    if (!u32(low) || !u32(high)) return false;
    v = std::uint64_t{high} << 32 | low;
    return true;
  }
  bool i32(std::int32_t& v) {
    std::uint32_t u = 0;
    if (!u32(u)) return false;
    v = static_cast<std::int32_t>(u);
    return true;
  }
  bool boolean(bool& v) {
    std::uint8_t b = 0;
    if (!u8(b)) return false;
    if (b > 1) return fail("a boolean is neither 0 nor 1");
    v = b == 1;
    return true;
  }
  bool string(std::string& s) {
    std::uint32_t size = 0;
    if (!u32(size)) return false;
    if (size > kMaxString) return fail("a string of " + std::to_string(size) + " bytes is over the bound");
    if (!need(size)) return false;
    s.assign(reinterpret_cast<const char*>(bytes_.data() + at_), size);
    at_ += size;
    return true;
  }
  bool strings(std::vector<std::string>& list) {
    std::uint32_t count = 0;
    if (!u32(count)) return false;
    // Each string takes at least its 4-byte length: a count the payload cannot hold is a lie.
    if (count > kMaxStrings || count > (bytes_.size() - at_) / 4)
      return fail("a list of " + std::to_string(count) + " strings is over the bound");
    list.resize(count);
    for (auto& s : list) {
      if (!string(s)) return false;
    }
    return true;
  }
  bool refuse(std::string why) { return fail(std::move(why)); }
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

bool get(Reader& r, Hello& m) {
  std::uint8_t purpose = 0;
  if (!r.u32(m.magic) || !r.u32(m.version)) return false;
  // An older client's Hello ends here: the server answers it with a version refusal it can read.
  if (m.version != kProtocolVersion) return true;
  if (!r.u8(purpose)) return false;
  if (purpose < 1 || purpose > 4) return r.refuse("unknown hello purpose " + std::to_string(purpose));
  m.purpose = static_cast<HelloPurpose>(purpose);
  return r.string(m.build) && r.string(m.engine_identity);
}
bool get(Reader& r, Request& m) {
  return r.boolean(m.err_is_terminal) && r.string(m.cwd) && r.strings(m.argv) && r.strings(m.environment) &&
         r.u64(m.file_size_limit);
}
bool get(Reader& r, Reply& m) {
  return r.i32(m.error) && r.string(m.message) && r.u32(m.value) && r.string(m.name) && r.strings(m.names) &&
         r.boolean(m.more);
}
bool get(Reader& r, Welcome& m) {
  return r.u32(m.version) && r.u32(m.server_pid) && r.u32(m.ping_interval_ms) && r.string(m.build);
}
bool get(Reader& r, Status& m) {
  return r.u32(m.pid) && r.string(m.build) && r.string(m.executable) && r.string(m.socket) && r.u64(m.uptime_ms) &&
         r.u64(m.requests_served) && r.u32(m.clients_now) && r.u32(m.clients_waiting) && r.string(m.devices) &&
         r.u64(m.gpu_memory_held) && r.boolean(m.executable_replaced);
}
bool get(Reader& r, CreateScratch& m) { return r.string(m.folder); }
bool get(Reader& r, Queued& m) { return r.u32(m.ahead) && r.u32(m.ping_interval_ms); }
bool get(Reader& r, Refused& m) {
  std::uint8_t reason = 0;
  if (!r.u8(reason)) return false;
  if (reason < 1 || reason > kLastRefusalReason) return r.refuse("unknown refusal reason " + std::to_string(reason));
  m.reason = static_cast<RefusalReason>(reason);
  return r.string(m.message);
}
bool get(Reader& r, OpenInput& m) { return r.string(m.path); }
bool get(Reader& r, KindQuery& m) { return r.string(m.path) && r.boolean(m.follow_links); }
bool get(Reader& r, SameFile& m) { return r.string(m.a) && r.string(m.b); }
bool get(Reader& r, ListDirectory& m) { return r.string(m.path); }
bool get(Reader& r, CreateTemp& m) { return r.string(m.output); }
bool get(Reader& r, Publish& m) { return r.string(m.temp_name) && r.string(m.output) && r.boolean(m.overwrite); }
bool get(Reader& r, Discard& m) { return r.string(m.temp_name); }
bool get(Reader& r, Exit& m) { return r.i32(m.code); }
bool get(Reader&, Ping&) { return true; }
bool get(Reader& r, Interrupt& m) { return r.i32(m.signal); }
bool get(Reader& r, MakeDirectories& m) { return r.string(m.path); }
bool get(Reader& r, RemoveFile& m) { return r.string(m.path); }

template <class T>
std::optional<Message> decode_as(std::span<const std::uint8_t> payload, std::string& error) {
  Reader reader(payload);
  T message;
  if (!get(reader, message) || !reader.finish()) {
    error = std::string(type_name(static_cast<std::uint8_t>(type_of<T>()))) + ": " + reader.error;
    return std::nullopt;
  }
  return Message{std::move(message)};
}

}  // namespace

std::size_t fds_carried(const Message& message) {
  if (std::holds_alternative<Request>(message)) return 3;
  return 0;  // a Reply's descriptor depends on the operation it answers: the channel's caller knows
}

std::vector<std::uint8_t> encode(const Message& message) {
  Writer w;
  for (int i = 0; i < 5; ++i) w.u8(0);
  std::visit([&](const auto& m) { put(w, m); }, message);
  auto& bytes = w.bytes();
  const std::size_t payload = bytes.size() - kHeaderSize;
  if (payload > kMaxPayload)
    throw std::length_error("cuconv serve: a message of " + std::to_string(payload) +
                            " bytes is over the protocol's bound");
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::uint8_t>(payload >> (8 * i));
  bytes[4] = static_cast<std::uint8_t>(
      std::visit([](const auto& m) { return type_of<std::decay_t<decltype(m)>>(); }, message));
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
    switch (static_cast<MessageType>(type)) {
      case MessageType::hello:
        return decode_as<Hello>(payload, error);
      case MessageType::request:
        return decode_as<Request>(payload, error);
      case MessageType::reply:
        return decode_as<Reply>(payload, error);
      case MessageType::welcome:
        return decode_as<Welcome>(payload, error);
      case MessageType::queued:
        return decode_as<Queued>(payload, error);
      case MessageType::refused:
        return decode_as<Refused>(payload, error);
      case MessageType::open_input:
        return decode_as<OpenInput>(payload, error);
      case MessageType::kind:
        return decode_as<KindQuery>(payload, error);
      case MessageType::same_file:
        return decode_as<SameFile>(payload, error);
      case MessageType::list_directory:
        return decode_as<ListDirectory>(payload, error);
      case MessageType::create_temp:
        return decode_as<CreateTemp>(payload, error);
      case MessageType::publish:
        return decode_as<Publish>(payload, error);
      case MessageType::discard:
        return decode_as<Discard>(payload, error);
      case MessageType::exit:
        return decode_as<Exit>(payload, error);
      case MessageType::ping:
        return decode_as<Ping>(payload, error);
      case MessageType::make_directories:
        return decode_as<MakeDirectories>(payload, error);
      case MessageType::remove_file:
        return decode_as<RemoveFile>(payload, error);
      case MessageType::interrupt:
        return decode_as<Interrupt>(payload, error);
      case MessageType::status:
        return decode_as<Status>(payload, error);
      case MessageType::create_scratch:
        return decode_as<CreateScratch>(payload, error);
    }
    error = "unknown message type " + std::to_string(type);
  } catch (const std::bad_alloc&) {
    error = "out of memory decoding a message";
  }
  return std::nullopt;
}

const char* type_name(std::uint8_t type) noexcept {
  switch (static_cast<MessageType>(type)) {
    case MessageType::hello:
      return "hello";
    case MessageType::request:
      return "request";
    case MessageType::reply:
      return "reply";
    case MessageType::welcome:
      return "welcome";
    case MessageType::queued:
      return "queued";
    case MessageType::refused:
      return "refused";
    case MessageType::open_input:
      return "open_input";
    case MessageType::kind:
      return "kind";
    case MessageType::same_file:
      return "same_file";
    case MessageType::list_directory:
      return "list_directory";
    case MessageType::create_temp:
      return "create_temp";
    case MessageType::publish:
      return "publish";
    case MessageType::discard:
      return "discard";
    case MessageType::exit:
      return "exit";
    case MessageType::ping:
      return "ping";
    case MessageType::make_directories:
      return "make_directories";
    case MessageType::remove_file:
      return "remove_file";
    case MessageType::interrupt:
      return "interrupt";
    case MessageType::status:
      return "status";
    case MessageType::create_scratch:
      return "create_scratch";
  }
  return "unknown";
}

bool forwarded_variable(std::string_view name) noexcept {
  return name.starts_with("CUCONV_") || name.starts_with("SLURM_") || name.starts_with("OPENCV_") ||
         name.starts_with("LC_") || name == "LANG" || name == "TMPDIR" || name == "TMP" || name == "TEMP" ||
         name == "TEMPDIR";
}

}  // namespace cuconv::serve
