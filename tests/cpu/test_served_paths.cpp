// SPDX-License-Identifier: Apache-2.0
// A served command's paths are its caller's: every case runs twice from a fresh work folder, once
// in-process and once through a server started in another, empty folder (so a path resolved in
// the server's folder would name nothing, or something else), and compares exit codes, messages
// and outputs (docs/serve.md, "Served or in-process: the rule").
#include "test_support.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <sstream>

using namespace cuconv::test;

namespace {

/// One mode's run of a case: what cuconv said and did, and the work folder it left.
struct Outcome {
  CommandResult result;
  std::map<std::string, std::string> files;  ///< every regular file under the work folder: bytes
};

/// Every regular file under `root` by its relative path, with its bytes.
std::map<std::string, std::string> files_under(const fs::path& root) {
  std::map<std::string, std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
    if (it->is_symlink(ec) == false && it->is_regular_file(ec))
      found[fs::relative(it->path(), root).string()] = read_file(it->path());
  return found;
}

/// A command line for a work folder (some name it by its absolute path, as "$PWD/..." would).
using ArgsFor = std::function<std::vector<std::string>(const fs::path& work)>;

/// The command run in a fresh work folder made by `prepare`, in-process and then served by a
/// server started in a folder of its own (Server starts it in an empty one); both outcomes.
std::pair<Outcome, Outcome> run_both(const std::function<void(const fs::path&)>& prepare, const ArgsFor& args,
                                     const std::string& stdin_name = "") {
  TempDir dir;
  const Server server(dir);
  Outcome outcomes[2];
  for (int served = 0; served < 2; ++served) {
    TempDir work;
    prepare(work.path());
    const std::string setup =
        "cd " + shell_quote(work.path().string()) + " && " +
        (served ? server.setup() + " && export CUCONV_SERVER=always" : "export CUCONV_SERVER=never");
    const std::string stdin_file = stdin_name.empty() ? "" : (work.path() / stdin_name).string();
    outcomes[served].result = run_cuconv(args(work.path()), stdin_file, setup + " && export CUCONV_NO_GPU_WARNING=1");
    outcomes[served].files = files_under(work.path());
  }
  return {outcomes[0], outcomes[1]};
}
std::pair<Outcome, Outcome> run_both(const std::function<void(const fs::path&)>& prepare,
                                     const std::vector<std::string>& args, const std::string& stdin_name = "") {
  return run_both(
      prepare, [&args](const fs::path&) { return args; }, stdin_name);
}

/// `err` without -v's line that says where the command ran (the one line that differs on purpose).
std::string without_where(const std::string& err) {
  std::string kept;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    if (line.find("info: running in this process") == std::string::npos &&
        line.find("info: served by cuconv serve") == std::string::npos)
      kept += line + "\n";
  return kept;
}

/// The same exit code, messages and files both ways.
void check_same(const Outcome& in_process, const Outcome& served) {
  INFO("in-process stderr: " << in_process.result.err);
  INFO("served stderr: " << served.result.err);
  CHECK(served.result.exit_code == in_process.result.exit_code);
  CHECK(without_where(served.result.err) == without_where(in_process.result.err));
  CHECK(served.result.out == in_process.result.out);
  CHECK(served.files == in_process.files);
}

void copy_sample(const std::string& name, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(sample(name), to);
}

}  // namespace

TEST_CASE("served paths: a relative output folder is the caller's (single image)") {
  const auto [in_process, served] = run_both(
      [](const fs::path& work) {
        copy_sample("camera_crop_40x48.png", work / "in.png");
        fs::create_directories(work / "sub");
      },
      {"in.png", "sub/o.png", "-f", "gauss5"});
  CHECK(in_process.result.exit_code == 0);
  CHECK(in_process.files.count("sub/o.png") == 1);
  check_same(in_process, served);
}

TEST_CASE("served paths: a missing output folder is said as in-process") {
  const auto [in_process, served] =
      run_both([](const fs::path& work) { copy_sample("camera_crop_40x48.png", work / "in.png"); },
               {"in.png", "nowhere/o.png", "-f", "gauss5"});
  CHECK(in_process.result.exit_code == 4);
  CHECK(in_process.result.err.find("folder nowhere does not exist") != std::string::npos);
  check_same(in_process, served);
}

TEST_CASE("served paths: a batch's relative --out-dir is the caller's") {
  const auto [in_process, served] = run_both(
      [](const fs::path& work) {
        copy_sample("camera_crop_40x48.png", work / "in.png");
        copy_sample("camera_crop_40x48.png", work / "photo.png");
      },
      {"--out-dir", "out", "in.png", "photo.png", "-f", "gauss5", "--jobs", "1"});
  CHECK(in_process.result.exit_code == 0);
  CHECK(in_process.files.count("out/in.png") == 1);
  CHECK(in_process.files.count("out/photo.png") == 1);
  check_same(in_process, served);
}

TEST_CASE("served paths: a batch whose output is another of its inputs is refused (absolute or linked --out-dir)") {
  const auto prepare = [](const fs::path& work) {
    copy_sample("camera_crop_40x48.png", work / "d6" / "a.png");
    copy_sample("coffee.png", work / "d6" / "a_b.png");
    fs::create_directory_symlink("d6", work / "link");
  };
  // --out-dir "$PWD/d6" (the absolute path the shell gives) or a link to d6, beside the relative
  // input folder d6/: d6/a.png's output d6/a_b.png is the input a_b.png, which must stay.
  for (const bool linked : {false, true}) {
    CAPTURE(linked);
    const auto [in_process, served] = run_both(prepare, [linked](const fs::path& work) {
      return std::vector<std::string>{"--out-dir",   linked ? "link" : (work / "d6").string(),
                                      "--name",      "%s_b",
                                      "--overwrite", "--jobs",
                                      "1",           "-f",
                                      "box:3",       "d6/"};
    });
    CHECK(in_process.result.exit_code == 2);
    CHECK(in_process.files.at("d6/a_b.png") == read_file(sample("coffee.png")));
    CHECK(served.result.exit_code == 2);
    CHECK(served.files.at("d6/a_b.png") == read_file(sample("coffee.png")));
    CHECK(served.files == in_process.files);
  }
}

TEST_CASE("served paths: a symbolic link loop named in a batch is said as in-process") {
  const auto [in_process, served] = run_both(
      [](const fs::path& work) {
        fs::create_symlink("l2", work / "l1");
        fs::create_symlink("l1", work / "l2");
      },
      {"--out-dir", "o", "l1", "-f", "gauss5"});
  CHECK(in_process.result.exit_code == 3);
  CHECK(in_process.result.err.find("input 'l1' is a symbolic link loop") != std::string::npos);
  check_same(in_process, served);
}

TEST_CASE("served paths: a FIFO as the filter file is not a regular file, as in-process") {
  const auto [in_process, served] = run_both(
      [](const fs::path& work) {
        copy_sample("camera_crop_40x48.png", work / "in.png");
        REQUIRE(::mkfifo((work / "f.txt").c_str(), 0600) == 0);
      },
      {"in.png", "o.png", "-f", "f.txt"});
  CHECK(in_process.result.exit_code == 3);
  CHECK(in_process.result.err.find("filter file 'f.txt' is not a regular file") != std::string::npos);
  check_same(in_process, served);
}

TEST_CASE("served paths: the image libraries' own lines name the file the user gave, not a descriptor") {
  // OpenCV's note on a truncated BMP quotes the path it opened (imread_('...')): served, that is
  // the client's descriptor, /proc/self/fd/N; for standard input, the copy's.
  const auto truncated_bmp = [](const fs::path& work) {
    std::vector<unsigned char> bytes;
    cv::imencode(".bmp", cv::Mat(16, 16, CV_8UC3, cv::Scalar(10, 20, 30)), bytes);
    std::ofstream(work / "t.bmp", std::ios::binary)
        << std::string(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() * 2 / 3));
  };
  for (const bool from_stdin : {false, true}) {
    CAPTURE(from_stdin);
    const auto [in_process, served] =
        run_both(truncated_bmp, {"-v", from_stdin ? "-" : "t.bmp", "o.png", "-f", "gauss5"}, from_stdin ? "t.bmp" : "");
    CHECK(in_process.result.exit_code == 3);
    CHECK(in_process.result.err.find(from_stdin ? "imread_('standard input')" : "imread_('t.bmp')") !=
          std::string::npos);
    CHECK(served.result.err.find("/proc/self/fd") == std::string::npos);
    check_same(in_process, served);
  }
}

TEST_CASE("served paths: -v and --json say whether the command was served, and by which server") {
  const auto [in_process, served] =
      run_both([](const fs::path& work) { copy_sample("camera_crop_40x48.png", work / "in.png"); },
               {"-v", "--out-dir", "out", "in.png", "-f", "gauss5", "--json", "s.json"});
  REQUIRE(in_process.result.exit_code == 0);
  REQUIRE(served.result.exit_code == 0);
  CHECK(in_process.result.err.find("info: running in this process (pid ") != std::string::npos);
  CHECK(served.result.err.find("info: served by cuconv serve: pid ") != std::string::npos);
  const nlohmann::json alone = nlohmann::json::parse(in_process.files.at("s.json"));
  const nlohmann::json by_server = nlohmann::json::parse(served.files.at("s.json"));
  CHECK(alone["served"] == false);
  CHECK(alone["server"].is_null());
  CHECK(by_server["served"] == true);
  CHECK(by_server["server"].get<std::string>().find("pid ") != std::string::npos);
  // Both name the libraries that decoded and encoded each file.
  CHECK(alone["files"][0]["decoder"] == "opencv");
  CHECK(by_server["files"][0]["encoder"] == "opencv");
  CHECK(served.files.at("out/in.png") == in_process.files.at("out/in.png"));
}

TEST_CASE("served paths: an output name the file system refuses is said as in-process") {
  // 252 + 4 bytes: the temporary file's name is cut to fit, the output's own is too long.
  const auto [in_process, served] =
      run_both([](const fs::path& work) { copy_sample("camera_crop_40x48.png", work / "in.png"); },
               {"in.png", std::string(252, 'a') + ".png", "-f", "gauss5"});
  CHECK(in_process.result.exit_code == 4);
  CHECK(in_process.result.err.find(": cannot move the finished file into place: File name too long") !=
        std::string::npos);
  check_same(in_process, served);
}

TEST_CASE("served paths: a socket as the input is not a regular file, as in-process, and is never opened") {
  const auto [in_process, served] = run_both(
      [](const fs::path& work) {
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        const std::string path = (work / "in.png").string();
        REQUIRE(path.size() < sizeof address.sun_path);
        std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        REQUIRE(fd >= 0);
        REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
        ::close(fd);  // the socket file stays, with nobody listening
      },
      {"in.png", "o.png", "-f", "gauss5"});
  CHECK(in_process.result.exit_code == 3);
  CHECK(in_process.result.err.find("in.png: not a regular file") != std::string::npos);
  check_same(in_process, served);
}

TEST_CASE("served paths: FORMAT:- writes standard output whatever the caller's folder holds") {
  // The format's stand-in file name is no path: a folder of that name changes nothing.
  const auto [in_process, served] = run_both(
      [](const fs::path& work) {
        copy_sample("camera_crop_40x48.png", work / "in.png");
        fs::create_directories(work / "cuconv-stdout.png");
      },
      {"in.png", "png:-", "-f", "gauss5"});
  CHECK(in_process.result.exit_code == 0);
  CHECK(in_process.result.out.starts_with("\x89PNG"));
  check_same(in_process, served);
}
