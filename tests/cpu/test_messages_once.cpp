// SPDX-License-Identifier: Apache-2.0
// Issue 62, Deliver 5: the no-GPU warning comes once per terminal session (a marker in the user's
// private runtime folder, src/cli/warnings.hpp) and once per server and client session when
// served. Each case runs the binary in sessions of its own (setsid), with XDG_RUNTIME_DIR in a
// temporary folder, so neither the test runner's session nor the user's folder is involved.
#include "test_support.hpp"

#include <cuconv/convolve.hpp>

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <string>

using cuconv::test::read_file;
using cuconv::test::sample;
using cuconv::test::shell_quote;
using cuconv::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr const char* kWarning = "no GPU (";

/// Runs `script` with /bin/sh in a new session (setsid) and waits; its exit code.
int run_in_new_session(const std::string& script) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::setsid();
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/// A runtime folder and the calls of one session each writing its messages to dir/NAME.err.
class Calls {
 public:
  Calls() {
    fs::create_directories(runtime());
    fs::permissions(runtime(), fs::perms::owner_all);
  }
  [[nodiscard]] fs::path runtime() const { return dir_.path() / "runtime"; }
  [[nodiscard]] fs::path markers() const { return runtime() / "cuconv"; }
  /// One call filtering camera.png, its messages in NAME.err, `extra` before it on its line.
  [[nodiscard]] std::string call(const std::string& name, const std::string& extra = "",
                                 const std::string& options = "") const {
    return extra + shell_quote(cuconv::test::cuconv_binary()) + " " + shell_quote(sample("camera.png")) + " " +
           shell_quote(dir_.file(name + ".png")) + " -f gauss5 --overwrite " + options + " 2>" +
           shell_quote(dir_.file(name + ".err")) + "\n";
  }
  /// Runs `calls` in one new session, without a server unless `setup` says otherwise.
  void session(const std::string& calls, const std::string& setup = "export CUCONV_SERVER=never") const {
    REQUIRE(run_in_new_session("export XDG_RUNTIME_DIR=" + shell_quote(runtime().string()) + "\n" + setup + "\n" +
                               calls) == 0);
  }
  /// How many no-GPU warnings call NAME printed.
  [[nodiscard]] int warnings(const std::string& name) const {
    const std::string err = read_file(dir_.file(name + ".err"));
    INFO(name, ": ", err);
    CHECK(err.find("internal error") == std::string::npos);
    int count = 0;
    for (std::size_t at = err.find(kWarning); at != std::string::npos; at = err.find(kWarning, at + 1)) ++count;
    return count;
  }
  [[nodiscard]] int marker_count() const {
    int count = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(markers(), ec))
      count += entry.path().filename().string().starts_with("no-gpu-warned-") ? 1 : 0;
    return count;
  }
  [[nodiscard]] const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
};

}  // namespace

TEST_CASE("the no-GPU warning comes once per terminal session, and again in a new one") {
  if (cuconv::cuda_device_available()) {
    MESSAGE("skipped: a CUDA device is usable here, so there is no no-GPU warning to count");
    return;
  }
  Calls calls;
  calls.session(calls.call("a1") + calls.call("a2") + calls.call("a3", "", "-v"));
  CHECK(calls.warnings("a1") == 1);
  CHECK(calls.warnings("a2") == 0);
  CHECK(calls.warnings("a3") == 0);
  // The marker's folder is private (0700), as the server's socket folder.
  struct stat st {};
  REQUIRE(::stat(calls.markers().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  // A new session warns again, once; the ended session's marker is gone with it.
  calls.session(calls.call("b1") + calls.call("b2"));
  CHECK(calls.warnings("b1") == 1);
  CHECK(calls.warnings("b2") == 0);
  CHECK(calls.marker_count() == 1);
  // CUCONV_NO_GPU_WARNING=1 silences it and leaves no marker: a later call of the session warns.
  calls.session(calls.call("c1", "CUCONV_NO_GPU_WARNING=1 ") + calls.call("c2") + calls.call("c3"));
  CHECK(calls.warnings("c1") == 0);
  CHECK(calls.warnings("c2") == 1);
  CHECK(calls.warnings("c3") == 0);
}

TEST_CASE("the no-GPU warning: a runtime folder others may enter is not used, and every call warns") {
  if (cuconv::cuda_device_available()) {
    MESSAGE("skipped: a CUDA device is usable here, so there is no no-GPU warning to count");
    return;
  }
  Calls calls;
  fs::create_directories(calls.markers());
  fs::permissions(calls.markers(), fs::perms::owner_all | fs::perms::group_all | fs::perms::others_all);
  calls.session(calls.call("o1") + calls.call("o2"));
  CHECK(calls.warnings("o1") == 1);
  CHECK(calls.warnings("o2") == 1);
  CHECK(calls.marker_count() == 0);
}

TEST_CASE("a served no-GPU warning comes once per server and client session") {
  if (cuconv::cuda_device_available()) {
    MESSAGE("skipped: a CUDA device is usable here, so there is no no-GPU warning to count");
    return;
  }
  Calls calls;
  TempDir server_dir;
  cuconv::test::Server server(server_dir);
  const std::string served = server.setup() + "\nexport CUCONV_SERVER=always";
  calls.session(calls.call("s1") + calls.call("s2"), served);
  CHECK(calls.warnings("s1") == 1);
  CHECK(calls.warnings("s2") == 0);
  calls.session(calls.call("t1") + calls.call("t2"), served);
  CHECK(calls.warnings("t1") == 1);
  CHECK(calls.warnings("t2") == 0);
}
