// The CLI through a `cuconv serve` and in-process: the same commands give the same exit codes,
// messages, standard output and output bytes (issue 47: the server runs the same per-image code).
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using cuconv::test::run_cuconv;
using cuconv::test::sample;
using cuconv::test::TempDir;
namespace fs = std::filesystem;

namespace {

/// A `cuconv serve` on a private socket for the life of the object.
class Server {
 public:
  explicit Server(const TempDir& dir) : socket_(dir.file("socket")), pid_file_(dir.file("server.pid")) {
    const std::string command = "CUCONV_SOCKET=" + socket_ + " " + cuconv::test::cuconv_binary() +
                                " serve --idle-exit 120 >" + dir.file("server.log") + " 2>&1 & echo $! >" + pid_file_;
    REQUIRE(std::system(command.c_str()) == 0);
    for (int i = 0; i < 100; ++i) {
      if (run_cuconv({"--server", "always", "--version"}, "", setup()).exit_code == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL("cuconv serve did not answer");
  }
  ~Server() {
    const std::string pid = cuconv::test::read_file(pid_file_);
    if (!pid.empty()) ::kill(std::stoi(pid), SIGTERM);
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  [[nodiscard]] std::string setup() const { return "export CUCONV_SOCKET=" + socket_; }

 private:
  std::string socket_;
  std::string pid_file_;
};

/// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST_CASE("served cli: the same commands through cuconv serve and in-process give the same results") {
  TempDir dir;
  const Server server(dir);
  fs::create_directories(dir.file("local"));
  fs::create_directories(dir.file("served"));
  fs::copy_file(sample("camera.png"), dir.file("local/exists.png"));
  fs::copy_file(sample("camera.png"), dir.file("served/exists.png"));
  // Each command names its outputs in OUT/, which is local/ in-process and served/ through the server.
  const std::vector<std::vector<std::string>> commands = {
      {sample("camera.png"), "OUT/blur.png", "--filter", "gauss5"},
      {sample("coffee.png"), "OUT/sharp.tif", "--filter", "sharpen", "--depth", "16u"},
      {sample("coffee.png"), "OUT/box.jpg", "--filter", "box:9", "--quality", "90"},
      {sample("camera.png"), "OUT/exists.png", "--filter", "gauss5"},                 // exit 4
      {sample("camera.png"), "OUT/exists.png", "--filter", "gauss5", "--skip-existing"},
      {dir.file("missing.png"), "OUT/x.png", "--filter", "gauss5"},                    // exit 3
      {sample("camera.png"), "OUT/x.png", "--filter", "nosuchfilter"},
      {sample("camera.png"), "OUT/y.png", "--filter", "gauss5", "--variant", "tensor"},  // exit 5 without a GPU
      {"--out-dir", "OUT/batch", "--filter", "gauss3", "--json", "-", sample("camera.png"), sample("coffee.png")},
      {"--list-filters"},
      {"--show-filter", "gaussian:2,1.5"},
  };
  for (const auto& command : commands) {
    std::vector<std::string> local, served;
    for (const std::string& arg : command) {
      local.push_back(replaced(arg, "OUT/", dir.file("local") + "/"));
      served.push_back(replaced(arg, "OUT/", dir.file("served") + "/"));
    }
    local.insert(local.begin(), {"--server", "never"});
    served.insert(served.begin(), {"--server", "always"});
    const auto a = run_cuconv(local, "", server.setup());
    const auto b = run_cuconv(served, "", server.setup());
    const std::string shown = command.size() > 1 ? command[0] + " ... " + command[1] : command[0];
    INFO(shown, "\nin-process: ", a.err, "\nserved: ", b.err);
    CHECK(a.exit_code == b.exit_code);
    const auto same_text = [&](const std::string& x, const std::string& y) {
      return replaced(x, dir.file("local"), "OUT") == replaced(y, dir.file("served"), "OUT");
    };
    CHECK(same_text(a.err, b.err));
    // The batch summary holds times; the rest of standard output must match byte for byte.
    if (command[0] != "--out-dir") CHECK(same_text(a.out, b.out));
  }
  // Every output written in-process was written the same through the server.
  for (const auto& entry : fs::recursive_directory_iterator(dir.file("local"))) {
    if (!entry.is_regular_file()) continue;
    const fs::path twin = fs::path(dir.file("served")) / fs::relative(entry.path(), dir.file("local"));
    INFO(entry.path().string());
    REQUIRE(fs::exists(twin));
    CHECK(cuconv::test::read_file(entry.path()) == cuconv::test::read_file(twin));
  }
}
