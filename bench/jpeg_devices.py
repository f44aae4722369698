#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GPU JPEG batch on one GPU and on every GPU of the host, whole processes as the shell times them.

    python3 bench/jpeg_devices.py --bin BIN_DIR --out RESULT.json [--rounds 3] [--photos 200] [--served]

BIN_DIR: an unpacked bundle's bin/ (cuconv, cuconv_make_corpus, cuconv_nvjpeg_floor). Makes the
corpus of scripts/make-batch-corpus.sh (PHOTOS JPEGs of about 2000x2000 at quality 90), and the
same photos 5 and 10 times over under other names (hard links): three sizes, so the start-up and
the steady rate separate. In the same call: nvJPEG's own decode of the files (cuconv_nvjpeg_floor,
the pipeline's batch size and stream priority, the corpus 5 times over), then ROUNDS interleaved
rounds of `cuconv --out-dir OUT CORPUS -f gauss5 --codec gpu --devices D --json` for D = 0 and
all, each size. Per run: the shell's wall time, the summary's own times (start-up, set-up, first
and last result), the steady rate (files between the first and last result over that time) and
how many files each device took. --served: each round also runs the same commands through a warm
`cuconv-engine serve` started here (`--server always`; devices "served-0" and "served-all"),
whose GPU codec pipelines are set up before the first command. Also the set-up's phases in three
processes of their own (cuconv_nvjpeg_floor --setup-probe). Writes every run and the medians as
JSON.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_batch(cuconv, corpus, devices, out_dir, summary, env, served=False):
    subprocess.run(["rm", "-rf", out_dir], check=True)
    os.makedirs(out_dir)
    start = time.perf_counter()
    done = subprocess.run([cuconv] + (["--server", "always"] if served else []) +
                          ["--out-dir", out_dir, corpus, "-f", "gauss5", "--codec", "gpu", "--devices", devices,
                           "--json", summary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    shell_s = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"cuconv failed ({done.returncode}) on {corpus}: {done.stderr.decode(errors='replace')}")
    with open(summary) as f:
        d = json.load(f)
    totals, jpeg = d["totals"], d["totals"]["gpu_codec"]
    span_ms = jpeg["last_result_ms"] - jpeg["first_result_ms"]
    per_device = collections.Counter(str(item["device"]) for item in d["files"])
    return {"shell_s": shell_s, "ok": totals["ok"], "wall_ms": totals["wall_ms"], "startup_ms": totals["startup_ms"],
            # the process outside the summary's clocks: loading before main, the summary, exit
            "outside_ms": shell_s * 1e3 - totals["wall_ms"] - totals["startup_ms"],
            "setup_ms": jpeg["setup_ms"], "first_result_ms": jpeg["first_result_ms"],
            "last_result_ms": jpeg["last_result_ms"],
            "steady_images_per_s": (jpeg["files"] - 1) / (span_ms / 1e3) if span_ms > 0 else None,
            "per_device": dict(per_device), "gpu_codec": jpeg}


def median_of(runs, key):
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--photos", type=int, default=200)
    parser.add_argument("--served", action="store_true")
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin)
    cuconv = os.path.join(bin_dir, "cuconv")
    env = dict(os.environ, CUCONV_SERVER="never")
    work = tempfile.mkdtemp(prefix="cuconv-jpeg-devices-")
    corpus = os.path.join(work, f"corpus-{args.photos}")
    subprocess.run(["bash", os.path.join(HERE, "..", "scripts", "make-batch-corpus.sh"), str(args.photos), corpus, bin_dir],
                   env=dict(env, EXT=".jpg", QUALITY="90"), check=True, stdout=subprocess.DEVNULL)
    photos = sorted(p for p in os.listdir(corpus) if p.endswith(".jpg"))
    corpora = {args.photos: corpus}
    for times in (5, 10):
        folder = f"{corpus}-x{times}"
        os.makedirs(folder)
        for copy in range(times):
            for p in photos:
                os.link(os.path.join(corpus, p), os.path.join(folder, f"c{copy}_{p}"))
        corpora[args.photos * times] = folder
    gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip().splitlines()
    floor = json.loads(subprocess.run([os.path.join(bin_dir, "cuconv_nvjpeg_floor"), corpus, "--batch", "128",
                                       "--high-priority", "--repeat", "5"], env=env, capture_output=True, text=True,
                                      check=True).stdout)
    # The set-up's phases, each in a process of its own (cuconv_nvjpeg_floor --setup-probe), and
    # that process as the shell times it: what is left is loading before main and exit.
    setup_phases = []
    for _ in range(3):
        start = time.perf_counter()
        probe = json.loads(subprocess.run([os.path.join(bin_dir, "cuconv_nvjpeg_floor"), corpus, "--setup-probe"],
                                          env=env, capture_output=True, text=True, check=True).stdout)
        probe["shell_ms"] = (time.perf_counter() - start) * 1e3
        setup_phases.append(probe)
    modes = [("0", False), ("all", False)]
    server = None
    served_env = dict(env, CUCONV_SERVER="always", CUCONV_SOCKET=os.path.join(work, "socket", "cuconv.sock"))
    if args.served:
        os.makedirs(os.path.dirname(served_env["CUCONV_SOCKET"]), mode=0o700)
        server = subprocess.Popen([os.path.join(bin_dir, "cuconv-engine"), "serve", "--idle-exit", "0"], env=served_env,
                                  stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "server.log"), "w"))
        while not os.path.exists(served_env["CUCONV_SOCKET"]):
            time.sleep(0.05)
        # The first GPU command waits for the server's set-up; the runs measure a warm server.
        subprocess.run([cuconv, os.path.join(corpus, photos[0]), os.path.join(work, "warm.jpg"), "-f", "gauss5",
                        "--codec", "gpu"], env=served_env, check=True, stdout=subprocess.DEVNULL)
        modes += [("0", True), ("all", True)]
    runs = []
    for round_ in range(args.rounds):
        for devices, served in modes:
            for size, folder in corpora.items():
                r = run_batch(cuconv, folder, devices, os.path.join(work, "out"), os.path.join(work, "summary.json"),
                              served_env if served else env, served)
                devices_label = ("served-" if served else "") + devices
                r.update(round=round_, devices=devices_label, photos=size)
                runs.append(r)
                print(f"{size:5d} photos --devices {devices_label:10s}: {r['shell_s']:.3f} s, set-up {r['setup_ms']:.0f} ms, "
                      f"steady {r['steady_images_per_s'] or 0:.0f}/s, per device {r['per_device']}", flush=True)
    if server is not None:
        server.terminate()
        server.wait()
    medians = {}
    for devices in [("served-" if served else "") + d for d, served in modes]:
        for size in corpora:
            group = [r for r in runs if r["devices"] == devices and r["photos"] == size]
            medians[f"{size}-{devices}"] = {k: median_of(group, k) for k in
                                            ("shell_s", "wall_ms", "startup_ms", "outside_ms", "setup_ms",
                                             "first_result_ms", "steady_images_per_s")}
    big = max(corpora)
    one, two = medians[f"{big}-0"], medians[f"{big}-all"]
    thousand = args.photos * 5
    result = {
        "gpus": gpus, "cores": os.cpu_count(), "photos": args.photos, "rounds": args.rounds,
        "nvjpeg_floor": floor, "setup_phases": setup_phases, "runs": runs, "medians": medians,
        "targets": {
            "one_gpu_steady_images_per_s": one["steady_images_per_s"],
            "floor_decode_over_one_gpu_steady": floor["decode_images_per_s"] / one["steady_images_per_s"],
            "one_gpu_1000_shell_s": medians[f"{thousand}-0"]["shell_s"],
            "two_gpu_steady_over_one": two["steady_images_per_s"] / one["steady_images_per_s"],
            "two_gpu_1000_shell_s": medians[f"{thousand}-all"]["shell_s"],
            "setup_two_over_one": medians[f"{thousand}-all"]["setup_ms"] / medians[f"{thousand}-0"]["setup_ms"],
            "one_gpu_1000_served_shell_s": medians[f"{thousand}-served-0"]["shell_s"] if args.served else None,
            "two_gpu_1000_served_shell_s": medians[f"{thousand}-served-all"]["shell_s"] if args.served else None,
        },
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["targets"], indent=1))


if __name__ == "__main__":
    main()
