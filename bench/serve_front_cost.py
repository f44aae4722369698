#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The thin front end's own cost (issue 47 item 5): `cuconv_front --version` served by the test
server (tests/support/serve_test_server.cpp: the real transport, no engine), against /bin/true, in
interleaved rounds. Wall time per call (median, p10, p90) and the CPU time of the child process.

  python3 bench/serve_front_cost.py build/ci/src/serve/cuconv_front build/ci/tests/cuconv_serve_test_server
"""
import os
import resource
import subprocess
import sys
import tempfile
import time


def measure(command, calls, env):
    walls = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(calls):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, env=env, check=True)
        walls.append(time.perf_counter() - start)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    walls.sort()
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / calls
    return walls[calls // 2], walls[calls // 10], walls[9 * calls // 10], cpu


def main():
    front, server, rounds, calls = sys.argv[1], sys.argv[2], 3, 200
    with tempfile.TemporaryDirectory() as folder:
        socket = os.path.join(folder, "socket")
        process = subprocess.Popen([server, "--socket", socket, "--idle", "0"], stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(socket):
                time.sleep(0.01)
            env = dict(os.environ, CUCONV_SOCKET=socket, CUCONV_SERVER="always")
            for round_number in range(1, rounds + 1):
                for command in (["/bin/true"], [front, "--version"]):
                    median, p10, p90, cpu = measure(command, calls, env)
                    print(f"round {round_number} {' '.join(os.path.basename(c) for c in command):24s} "
                          f"wall median {median * 1e3:.2f} ms (p10 {p10 * 1e3:.2f}, p90 {p90 * 1e3:.2f}), "
                          f"cpu {cpu * 1e3:.2f} ms per call")
        finally:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    main()
