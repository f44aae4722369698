#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a file under src/ touches the file system or reads the environment outside the
places allowed to (docs/serve.md, "Served or in-process: the rule").

A served command runs in the server's process but is its caller's command: every path it names
goes through the command's engine::Files (the client opens it), and its environment is
Session::getenv. So a call such as fs::status(path), ::open, fopen, std::ifstream, cv::imread or
getenv in the engine would look at the server's folder or environment instead of the caller's.
The seam's implementations (src/engine/files.cpp, src/serve/) may; every other use is listed in
ALLOWED below with the reason it is not a caller's path or variable. A use that is not listed
fails the check, and so does an entry that matches nothing any more (the list stays true).

  check_fs_env_uses.py SRC_DIR           check (exit 1 naming each unlisted use)
  check_fs_env_uses.py SRC_DIR --list    print every use, allowed or not (file:line: code)
"""
import pathlib
import re
import sys

# Calls that touch the disk or the process's environment, by name.
FS_FUNCTIONS = (r"status|symlink_status|exists|is_directory|is_regular_file|is_symlink|is_fifo|is_other|absolute|"
                r"canonical|weakly_canonical|relative|proximate|create_directory|create_directories|remove|remove_all|"
                r"rename|directory_iterator|recursive_directory_iterator|temp_directory_path|current_path|file_size|"
                r"equivalent|copy|copy_file|resize_file|permissions|last_write_time|space|read_symlink|create_symlink|"
                r"create_hard_link|hard_link_count")
POSIX_FUNCTIONS = (r"open|openat|creat|stat|lstat|fstatat|statx|access|faccessat|opendir|fopen|freopen|unlink|"
                   r"unlinkat|rename|renameat|renameat2|mkdir|mkdirat|mkstemp|mkostemp|mkdtemp|tmpfile|readlink|"
                   r"readlinkat|realpath|getcwd|get_current_dir_name|chdir|truncate|link|linkat|symlink|rmdir|mkfifo|"
                   r"chmod|chown|utimensat|statfs|statvfs|dlopen|getenv|secure_getenv|setenv|unsetenv|putenv")
PATTERNS = [
    re.compile(r"\b(?:std::filesystem|fs)::(?:" + FS_FUNCTIONS + r")\b"),
    re.compile(r"(?<![\w.>])(?:::|std::)?(?:" + POSIX_FUNCTIONS + r")\s*\("),
    re.compile(r"\bstd::(?:i|o)?fstream\b"),
    re.compile(r"\bcv::(?:imread|imreadmulti|imwrite|haveImageReader|haveImageWriter)\b"),
    re.compile(r"\bImageFactory::open\s*\(|\bTIFFOpen(?:Ext)?\s*\(|\bjpeg_stdio_(?:src|dest)\s*\("),
    re.compile(r"\benviron\b"),
]

# Where the seam itself is implemented: the local file system (engine/files.cpp and its helpers)
# and the transport, whose client side is the caller itself.
ALLOWED_FILES = {
    "engine/files.cpp": "engine::Files of this process (local_files): the seam's local side",
    "engine/opened_file.cpp": "the seam's local scratch file (Files::create_scratch)",
    "common/anonymous_file.hpp": "the seam's anonymous temporary files (O_TMPFILE), used by files.cpp and the client",
    "codec/atomic_write.cpp": "the local side of Files::write_output (and the library's write_image_atomic)",
}
ALLOWED_DIRS = {
    "serve/": "the transport: the client is the caller (it performs the file operations); the server's own socket, lock and log",
}

# Uses elsewhere, each (file, a piece of its line, why it is not a caller's path or variable).
# An entry allows one line: a second line with the same piece is a new use and needs its own.
LOCAL_PATH = ("reads the local path of a file Files::open_input opened: the user's path in a process "
              "of its own, the client's descriptor (/proc/self/fd/N) when served; also the public "
              "library API for programs")
ALLOWED = [
    ("codec/image_io.cpp", "fs::is_regular_file(path, ec)", LOCAL_PATH),
    ("codec/image_io.cpp", "std::ifstream in(path, std::ios::binary)", LOCAL_PATH),
    ("codec/image_io.cpp", "fs::status(path, ec)", LOCAL_PATH),
    ("codec/image_io.cpp", "fs::exists(status)", LOCAL_PATH),
    ("codec/image_io.cpp", "fs::is_directory(status)", LOCAL_PATH),
    ("codec/image_io.cpp", "fs::is_regular_file(status)", LOCAL_PATH),
    ("codec/image_io.cpp", "::access(path.c_str(), R_OK)", LOCAL_PATH),
    ("codec/image_io.cpp", "fs::file_size(path, ec)", LOCAL_PATH),
    ("codec/image_io.cpp", "fs::exists(output, ec) && fs::equivalent(input, output, ec)",
     "check_not_same_file: public library API for programs; commands ask Files::same_file"),
    ("codec/jpeg_decode.cpp", "std::fopen(path.c_str(), \"rb\")", LOCAL_PATH),
    ("codec/jpeg_decode.cpp", "jpeg_stdio_src(&info, file.get())", LOCAL_PATH),
    ("codec/image_header.cpp", "std::fopen(path.c_str(), \"rb\")", LOCAL_PATH),
    ("codec/metadata.cpp", "std::ifstream in(path, std::ios::binary)", LOCAL_PATH),
    ("codec/metadata.cpp", "std::ifstream in(path, std::ios::binary)", LOCAL_PATH + " (its second reader)"),
    ("codec/metadata.cpp", "std::ifstream in(path, std::ios::binary)", LOCAL_PATH + " (its third reader: a PNG's chunks before the image data)"),
    ("codec/metadata.cpp", "ImageFactory::open(path)", LOCAL_PATH),
    ("codec/tiff_codec.cpp", "TIFFOpenExt(path.c_str(), \"rm\", options)", LOCAL_PATH + " (decode_tiff, libtiff's reader)"),
    ("codec/metadata.cpp", "ImageFactory::open(rest.data()", "exiv2 parsing bytes in memory: no file"),
    ("codec/metadata.cpp", "ImageFactory::open(encoded.data()", "exiv2 parsing bytes in memory: no file"),
    ("codec/opencv_codecs.cpp", "cv::imread(path, flags)", LOCAL_PATH),
    ("codec/opencv_codecs.cpp", "cv::haveImageWriter(path)", "looks at the name's extension only, no file"),
    ("codec/opencv_codecs_lazy.cpp", "::readlink(\"/proc/self/exe\"", "the process's own executable, to load the module beside it"),
    ("codec/opencv_codecs_lazy.cpp", "::dlopen(path.c_str()", "the process's own codec module, beside its executable"),
    ("gpu/shared_library.cpp", "std::getenv(\"CUDA_HOME\")",
     "where a CUDA library is loaded from, once per process: the server's own (a caller whose CUDA_* "
     "variables differ from the server's runs in-process)"),
    ("gpu/shared_library.cpp", "dlopen(name.c_str()", "a CUDA library, loaded once per process"),
    ("cli/exit_handoff.cpp", "::opendir(\"/proc/self/fd\")", "the process's own descriptors"),
    ("cli/exit_handoff.cpp", "::readlink(link.c_str()", "the process's own descriptors"),
    ("cli/interrupt.cpp", "::unlink(g_remove_path)",
     "a process of its own removing its own unfinished file from its signal handler (never served)"),
    ("cli/temp_folder.cpp", "std::filesystem::temp_directory_path(ec)",
     "temp_folder() of a process of its own, whose environment is its caller's; served, temp_folder(session) asks the client"),
    ("cli/temp_folder.cpp", "std::getenv(name)",
     "temp_folder() of a process of its own, whose environment is its caller's; served, Session::getenv"),
    ("cli/session.hpp", "const char* getenv(const char* name) const", "Session::getenv, the command's environment"),
    ("cli/run_command.cpp", "Session::getenv(const char* name)", "Session::getenv, the command's environment"),
    ("cli/run_command.cpp", "if (!environment) return std::getenv(name)",
     "Session::getenv in a process of its own: its environment is its caller's"),
    ("cli/main.cpp", "std::getenv(cuconv::serve::kNotServedVariable)",
     "the engine's start: the front end's note why the command was not served (process start, never served)"),
    ("cli/main.cpp", "::unsetenv(cuconv::serve::kNotServedVariable)",
     "the engine's start removes that note at once, so nothing it starts inherits it"),
    ("cli/serve_command.cpp", "for (char** variable = environ;",
     "the server's own variables that its libraries read once per process, compared with a caller's "
     "to refuse what it cannot run as the caller's own process would"),
    ("cli/single_image.cpp", "\"/proc/driver/nvidia/version\"",
     "whether the machine the command runs on has the NVIDIA driver loaded: the machine's, not a caller's path"),
    ("cli/batch_command.cpp", "std::ifstream in(file.local_path())", LOCAL_PATH),
    ("cli/process_start.cpp", "std::ifstream in(\"/proc/\"",
     "a process's start time (the no-GPU warning's session key, -v's start-up; served, the client's pid): the "
     "machine's /proc, not a caller's path"),
    ("filter/filter_load.cpp", "std::fopen(path.c_str(), \"rb\")",
     "load_filter's reader of the local path FilterLoadOptions::files gave (commands open it through Files)"),
    ("filter/filter_load.cpp", "std::filesystem::status(path, error)",
     "FilterLoadOptions::files' default, for programs using the library; commands pass their Files"),
    ("filter/filter_load.cpp", "!std::filesystem::exists(status)", "as above"),
    ("filter/filter_load.cpp", "std::filesystem::is_directory(status)", "as above"),
    ("filter/filter_load.cpp", "std::filesystem::is_regular_file(status)", "as above"),
]


def code_of(line: str) -> str:
    """The line without its // comment (string literals holding // are rare enough here)."""
    stripped = line.strip()
    if stripped.startswith("//") or stripped.startswith("*") or stripped.startswith("/*"):
        return ""
    at = line.find("//")
    return line if at < 0 else line[:at]


def uses(src: pathlib.Path):
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".cpp", ".hpp", ".h", ".cu", ".cuh"} or not path.is_file():
            continue
        relative = path.relative_to(src).as_posix()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            code = code_of(line)
            if any(p.search(code) for p in PATTERNS):
                yield relative, number, line.strip()


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    src = pathlib.Path(sys.argv[1])
    listing = "--list" in sys.argv[2:]
    used_entries = set()
    unlisted = []
    for relative, number, line in uses(src):
        reason = ALLOWED_FILES.get(relative) or next(
            (why for folder, why in ALLOWED_DIRS.items() if relative.startswith(folder)), None)
        if reason is None:
            for index, (file, piece, why) in enumerate(ALLOWED):
                if file == relative and piece in line and index not in used_entries:
                    used_entries.add(index)
                    reason = why
                    break
        if listing:
            print(f"{relative}:{number}: {line}\n    {'ALLOWED: ' + reason if reason else 'NOT ALLOWED'}")
        elif reason is None:
            unlisted.append(f"src/{relative}:{number}: {line}")
    stale = [f"{file}: '{piece}'" for index, (file, piece, _) in enumerate(ALLOWED) if index not in used_entries]
    if listing:
        return 0
    for use in unlisted:
        print(f"{use}\n    touches the file system or the environment outside engine::Files / Session::getenv "
              "(a served command's are its caller's); route it through them, or list it in ALLOWED with the reason")
    for entry in stale:
        print(f"tests/scripts/check_fs_env_uses.py: allowed use no longer found (remove it from ALLOWED): {entry}")
    if unlisted or stale:
        return 1
    print(f"check_fs_env_uses: every file-system and environment use under {src} goes through the seam or is listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
