#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where one small Python call's time goes (issue 63's per-call targets): the parts of
``cuconv.filter2D`` on a 64x64 float32 CUDA tensor and on a 512x512 NumPy image, beside the floors
they cannot go under on this machine (a PyTorch launch and synchronisation, a 1 MiB host copy, a
pinned transfer).

    python3 bench/python_call_parts.py [--reps N] [--profile]

Each line is a median over N timed calls after warm-up, in microseconds; "host" lines time the
host's side alone (the device idle before the call, no synchronisation timed). --profile adds
cProfile's 25 largest own-time entries over N calls of each path, --trace the CUDA API calls.
Needs a GPU and PyTorch.
"""
import argparse
import cProfile
import io
import pstats

import numpy as np

import python_bench  # bench/: its timers


def median_us(call, reps, sync=None):
    """Median microseconds of one call (and `sync` after it, timed with it)."""
    return python_bench.median_time(call, sync or (lambda: None), reps) * 1e6


def host_us(call, reps, sync):
    """Median microseconds the host spends in one call on an idle device."""
    return python_bench.host_time(call, sync, reps) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--trace", action="store_true", help="the CUDA API calls of 50 calls of each path "
                        "(torch.profiler, which sees every library's CUDA calls in the process)")
    args = parser.parse_args()
    import torch

    import cuconv
    from cuconv import _arrays, _cuconv

    reps = args.reps
    sync = torch.cuda.synchronize
    rows = []

    def line(name, value):
        rows.append((name, value))
        print(f"{value:10.1f} us  {name}", flush=True)

    kernel = (cuconv.getGaussianKernel(5, 0) @ cuconv.getGaussianKernel(5, 0).T).astype(np.float32)
    small = np.random.default_rng(0).random((64, 64)).astype(np.float32)
    dev = torch.from_numpy(small).cuda()
    out = torch.empty_like(dev)
    line("torch.cuda.synchronize() on an idle device", median_us(sync, reps))
    line("torch x.add_(0) + synchronize (64x64 float32)", median_us(lambda: dev.add_(0), reps, sync))
    line("torch x.add_(0), host", host_us(lambda: dev.add_(0), reps, sync))
    line("torch.empty_like (64x64 float32), host", host_us(lambda: torch.empty_like(dev), reps, sync))
    line("cuconv.filter2D(dev, -1, k, dst=out) + synchronize", median_us(
        lambda: cuconv.filter2D(dev, -1, kernel, dst=out), reps, sync))
    line("cuconv.filter2D(dev, -1, k, dst=out), host", host_us(
        lambda: cuconv.filter2D(dev, -1, kernel, dst=out), reps, sync))
    line("cuconv.filter2D(dev, -1, k) (new output) + synchronize", median_us(
        lambda: cuconv.filter2D(dev, -1, kernel), reps, sync))
    line("cuconv.filter2D(dev, -1, k) (new output), host", host_us(
        lambda: cuconv.filter2D(dev, -1, kernel), reps, sync))
    filt = cuconv._kernel_filter(kernel)
    stream = int(torch.cuda.current_stream().cuda_stream)
    ptr_in, ptr_out = dev.data_ptr(), out.data_ptr()
    direct = lambda: _cuconv.convolve_device(ptr_in, 256, ptr_out, 256, 64, 64, 1, 5, 5, 0, filt, "auto",  # noqa: E731
                                             "reflect101", 0.0, -1, -1, 0.0, -1, stream)
    line("_cuconv.convolve_device (engine alone) + synchronize", median_us(direct, reps, sync))
    line("_cuconv.convolve_device (engine alone), host", host_us(direct, reps, sync))
    line("  Python: _kernel_filter(kernel)", median_us(lambda: cuconv._kernel_filter(kernel), reps))
    line("  Python: _arrays.cuda_array(tensor)", median_us(lambda: _arrays.cuda_array(dev, "src"), reps))
    array = _arrays.cuda_array(dev, "src")
    line("  Python: _arrays.current_stream", median_us(lambda: _arrays.current_stream(array), reps))
    line("  Python: _check_out", median_us(lambda: cuconv._check_out(out, (64, 64), np.dtype(np.float32), True), reps))

    big = np.random.default_rng(1).random((512, 512)).astype(np.float32)
    big_out = np.empty_like(big)
    line("numpy 512x512: _cuconv.convolve_host (engine alone)", median_us(
        lambda: _cuconv.convolve_host(big[:, :, None], big_out[:, :, None], filt, "auto", "reflect101", 0.0, -1, -1,
                                      0.0, -1), reps // 4))
    line("numpy 512x512: cuconv.filter2D(host, -1, k)", median_us(lambda: cuconv.filter2D(big, -1, kernel), reps // 4))
    line("numpy 512x512: cuconv.filter2D(host, -1, k, dst=out)", median_us(
        lambda: cuconv.filter2D(big, -1, kernel, dst=big_out), reps // 4))
    line("numpy 512x512: np.empty_like + fill (page faults)", median_us(
        lambda: np.empty_like(big).fill(0), reps // 4))
    line("numpy 512x512: np.copyto (1 MiB host copy)", median_us(lambda: np.copyto(big_out, big), reps // 4))
    pinned = torch.empty(big.shape, dtype=torch.float32, pin_memory=True)
    gpu = torch.empty(big.shape, dtype=torch.float32, device="cuda")
    line("torch: 1 MiB pinned -> device + synchronize", median_us(
        lambda: gpu.copy_(pinned, non_blocking=True), reps // 4, sync))
    line("torch: 1 MiB device -> pinned + synchronize", median_us(
        lambda: pinned.copy_(gpu, non_blocking=True), reps // 4, sync))
    line("torch: 1 MiB pageable numpy -> device (from_numpy().cuda())", median_us(
        lambda: torch.from_numpy(big).cuda(), reps // 4, sync))
    line("torch: 1 MiB device -> pageable (.cpu())", median_us(lambda: gpu.cpu(), reps // 4, sync))

    # Auto's choice beside fast and tensor on the bench's float 9x9 Gaussian (float32 weights, so
    # not exactly rank 1), and the link from a pinned buffer the host has just written (what the
    # staged upload sends) against one it has not, whole and in 2, 4 and 8 chunks.
    kernel9 = (cuconv.getGaussianKernel(9, 0) @ cuconv.getGaussianKernel(9, 0).T).astype(np.float32)
    for side in (64, 512):
        image = torch.from_numpy(np.random.default_rng(2).random((side, side)).astype(np.float32)).cuda()
        target = torch.empty_like(image)
        for variant in ("auto", "fast", "tensor"):
            line(f"{side}x{side} 9x9 variant={variant} + synchronize", median_us(
                lambda: cuconv.filter2D(image, -1, kernel9, dst=target, variant=variant), reps // 4, sync))
    staged = torch.empty(big.shape, dtype=torch.float32, pin_memory=True)
    staged_numpy = staged.numpy()
    for chunks in (1, 2, 4, 8):
        chunk_rows = big.shape[0] // chunks

        def upload(written):
            for c in range(chunks):
                if written:
                    np.copyto(staged_numpy[c * chunk_rows:(c + 1) * chunk_rows], big[c * chunk_rows:(c + 1) * chunk_rows])
                gpu[c * chunk_rows:(c + 1) * chunk_rows].copy_(staged[c * chunk_rows:(c + 1) * chunk_rows], non_blocking=True)
        line(f"1 MiB upload in {chunks} chunk(s), host copy into pinned then link + synchronize", median_us(
            lambda: upload(True), reps // 4, sync))
        line(f"1 MiB upload in {chunks} chunk(s), link alone (pinned not rewritten) + synchronize", median_us(
            lambda: upload(False), reps // 4, sync))

    if args.profile:
        for name, call in (("cuda tensor, dst=out", lambda: cuconv.filter2D(dev, -1, kernel, dst=out)),
                           ("numpy 512x512", lambda: cuconv.filter2D(big, -1, kernel))):
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(reps // 4):
                call()
            profile.disable()
            sync()
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
            print(f"== cProfile, {name}, {reps // 4} calls\n{text.getvalue()}")

    if args.trace:
        from torch.profiler import ProfilerActivity, profile as torch_profile
        for name, call in (("cuda tensor, dst=out", lambda: cuconv.filter2D(dev, -1, kernel, dst=out)),
                           ("numpy 512x512", lambda: cuconv.filter2D(big, -1, kernel))):
            with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
                for _ in range(50):
                    call()
                sync()
            print(f"== torch.profiler, {name}, 50 calls")
            print(trace.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


if __name__ == "__main__":
    main()
