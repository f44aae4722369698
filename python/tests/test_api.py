# SPDX-License-Identifier: Apache-2.0
"""The package's contract beyond cv2 parity: out=, batches, strided inputs, bad inputs (an
exception, nothing written), reference counts, threads, the GIL, the no-GPU warning, the CLI's
filter specs and results, and CUDA arrays (PyTorch, a bare __cuda_array_interface__ object)."""
import gc
import os
import subprocess
import sys
import threading
import time

import cv2
import numpy as np
import pytest

import cuconv
from conftest import GPU_AVAILABLE, NO_GPU_REASON, needs_gpu, random_image

KERNEL = np.array([[1, 2, 1], [0, 3, -1], [-2, 1, 1]], dtype=np.float32) / 4


def test_out_is_written_and_returned():
    src = random_image((20, 30, 3), np.uint8)
    out = np.zeros((20, 30, 3), np.int16)
    result = cuconv.filter2D(src, cv2.CV_16S, KERNEL, dst=out)
    assert result is out
    np.testing.assert_array_equal(out, cv2.filter2D(src, cv2.CV_16S, KERNEL))


def test_out_strided_view_of_a_larger_array():
    src = random_image((20, 30), np.float32)
    big = np.full((40, 70), -1.0, np.float32)
    view = big[::2, 5:35]
    cuconv.filter2D(src, -1, KERNEL, dst=view)
    np.testing.assert_allclose(view, cv2.filter2D(src, -1, KERNEL), rtol=1e-6, atol=1e-5)
    untouched = np.ones_like(big, bool)
    untouched[::2, 5:35] = False
    assert (big[untouched] == -1).all()


@pytest.mark.parametrize("channels", [None, 1, 3, 4])
def test_batch_equals_image_by_image(channels):
    shape = (5, 17, 23) if channels is None else (5, 17, 23, channels)
    src = random_image(shape, np.uint16)
    batch = cuconv.convolve(src, "gauss5", batch=channels is None)
    for i in range(5):
        np.testing.assert_array_equal(batch[i], cuconv.convolve(src[i][..., None] if channels is None else src[i],
                                                                "gauss5").reshape(batch[i].shape))
    assert batch.shape == shape


def test_non_contiguous_inputs():
    base = random_image((40, 60, 4), np.uint8)
    views = [base[::2, ::3, :3], base[5:30, 7:50], base[::-1], base[..., 1], base.transpose(1, 0, 2),
             np.asfortranarray(base[..., 0])]
    for view in views:
        expected = cv2.filter2D(np.ascontiguousarray(view), -1, KERNEL)
        np.testing.assert_array_equal(cuconv.filter2D(view, -1, KERNEL), expected)


BAD_CALLS = [
    (lambda src, out: cuconv.filter2D(src.astype(np.int32), -1, KERNEL, dst=out), TypeError, "unsupported dtype int32"),
    (lambda src, out: cuconv.filter2D(src.astype(np.float64), -1, KERNEL, dst=out), TypeError, "float64"),
    (lambda src, out: cuconv.filter2D(src.astype(np.int16), -1, KERNEL, dst=out), TypeError, "int16"),
    (lambda src, out: cuconv.filter2D(np.zeros((4, 5, 5), np.uint8), -1, KERNEL, dst=out), ValueError,
     "unsupported channel count 5 (supported: 1, 3, 4)"),
    (lambda src, out: cuconv.filter2D(np.zeros((2, 3, 4, 5, 1), np.uint8), -1, KERNEL, dst=out), ValueError,
     "got shape"),
    (lambda src, out: cuconv.filter2D(src, -1, np.full((3, 3), np.nan), dst=out), ValueError,
     "kernel weight nan at row 0, column 0 is not a finite float"),
    (lambda src, out: cuconv.filter2D(src, -1, np.full((3, 3), 1e39), dst=out), ValueError, "not a finite float"),
    (lambda src, out: cuconv.filter2D(src, -1, np.ones((128, 3)), dst=out), ValueError,
     "kernel is 3x128, the maximum side is 127"),
    (lambda src, out: cuconv.filter2D(src, -1, KERNEL, dst=out, anchor=(3, 0)), ValueError,
     "anchor (3,0) is outside the 3x3 filter"),
    (lambda src, out: cuconv.filter2D(src, -1, KERNEL, dst=out, delta=float("nan")), ValueError,
     "must be finite numbers"),
    (lambda src, out: cuconv.filter2D(src.astype(np.float32), cv2.CV_8U, KERNEL, dst=out.astype(np.uint8)),
     ValueError, "output depth 8U is not available for 32F input"),
    (lambda src, out: cuconv.filter2D(src, cv2.CV_64F, KERNEL, dst=out), ValueError, "ddepth 6 is not available"),
    (lambda src, out: cuconv.filter2D(src, -1, KERNEL, dst=out, borderType=7), ValueError, "borderType 7"),
    (lambda src, out: cuconv.filter2D(src, -1, KERNEL, dst=out[:5]), ValueError, "dst: expected shape"),
    (lambda src, out: cuconv.filter2D(src, -1, KERNEL, dst=out.astype(np.uint16)), ValueError, "dst: expected"),
    (lambda src, out: cuconv.filter2D(src.tolist(), -1, KERNEL, dst=out), TypeError, "expected a NumPy array"),
    (lambda src, out: cuconv.convolve(src, "no-such-filter", out=out), ValueError, "no-such-filter"),
    (lambda src, out: cuconv.convolve(src, "gauss5", variant="bogus", out=out), ValueError, "unknown variant 'bogus'"),
    (lambda src, out: cuconv.convolve(src, "gauss5", border="mirror", out=out), ValueError, "unknown border 'mirror'"),
    (lambda src, out: cuconv.convolve(src, "gauss5", variant="fast", out=out), cuconv.Error if not GPU_AVAILABLE
     else type(None), "needs a CUDA device"),
]


@pytest.mark.parametrize("call,error,message", BAD_CALLS, ids=[m[:30] for _, _, m in BAD_CALLS])
def test_bad_inputs_raise_and_write_nothing(call, error, message):
    if error is type(None):
        pytest.skip("a GPU variant runs on this machine")
    src = random_image((12, 14), np.uint8)
    out = np.full((12, 14), 77, np.uint8)
    with pytest.raises(error) as info:
        call(src, out)
    assert message in str(info.value)
    assert (out == 77).all()


def test_error_hierarchy():
    assert issubclass(cuconv.Error, RuntimeError)
    assert cuconv.Error.__module__ == "cuconv"


def test_every_cli_filter_spec(tmp_path):
    src = random_image((25, 26, 3), np.uint8)
    matrix = tmp_path / "edge.txt"
    matrix.write_text("# a file as the CLI reads it\n0 -1 0\n-1 4 -1\n0 -1 0\n")
    specs = {"gauss5": None, "GAUSSIAN:2,1.1": None, "box:3": np.ones((3, 3)) / 9,
             "3x3:0,-1,0,-1,4,-1,0,-1,0": np.array([[0, -1, 0], [-1, 4, -1], [0, -1, 0]]),
             str(matrix): np.array([[0, -1, 0], [-1, 4, -1], [0, -1, 0]])}
    for spec, weights in specs.items():
        result = cuconv.convolve(src, spec, variant="opencv")
        filt = cuconv.load_filter(spec)
        kernel = np.array(filt.weights).reshape(filt.height, filt.width)
        if weights is not None:
            np.testing.assert_allclose(kernel, weights)
        np.testing.assert_array_equal(result, cv2.filter2D(src, -1, kernel.astype(np.float32)), err_msg=spec)
    assert "gauss5" in cuconv.preset_names()
    normalized = cuconv.load_filter("3x1:1,1,2", normalize=True)
    np.testing.assert_allclose(normalized.weights, [0.25, 0.25, 0.5])


def test_same_result_as_the_cli(tmp_path):
    """The CLI binary (ctest passes its path) and cuconv.convolve on the same image and filter."""
    cli = os.environ.get("CUCONV_TEST_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("CUCONV_TEST_CLI (the cuconv binary, set by ctest) is not set")
    src = random_image((33, 47, 3), np.uint8)
    cv2.imwrite(str(tmp_path / "in.png"), src)
    for spec, border in [("gauss5", "reflect101"), ("sharpen", "replicate"), ("gaussian:4,2", "constant")]:
        subprocess.run([cli, str(tmp_path / "in.png"), str(tmp_path / "out.png"), "--filter", spec, "--border",
                        border, "--variant", "opencv", "--overwrite", "-q"], check=True)
        np.testing.assert_array_equal(cuconv.convolve(src, spec, border=border), cv2.imread(str(tmp_path / "out.png")),
                                      err_msg=spec)


def test_reference_counts_do_not_grow():
    src = random_image((8, 9, 3), np.uint8)
    out = np.empty((8, 9, 3), np.uint8)
    kernel = KERNEL.copy()
    filt = cuconv.load_filter("gauss5")
    before = (sys.getrefcount(src), sys.getrefcount(out), sys.getrefcount(kernel), sys.getrefcount(filt))
    for _ in range(10_000):
        cuconv.filter2D(src, -1, kernel, dst=out)
        cuconv.convolve(src, filt, out=out)
    gc.collect()
    objects = len(gc.get_objects())
    for _ in range(1000):
        cuconv.filter2D(src, -1, kernel, dst=out)
    gc.collect()
    assert (sys.getrefcount(src), sys.getrefcount(out), sys.getrefcount(kernel), sys.getrefcount(filt)) == before
    assert len(gc.get_objects()) - objects < 10


def test_threads_get_the_serial_results():
    images = [random_image((60, 50, 3), np.uint8, seed=i) for i in range(8)]
    expected = [cuconv.convolve(image, "gaussian:3,1.5") for image in images]
    results = [[] for _ in images]

    def work(i):
        for _ in range(20):
            results[i].append(cuconv.convolve(images[i], "gaussian:3,1.5"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(images))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, runs in enumerate(results):
        assert len(runs) == 20
        for r in runs:
            np.testing.assert_array_equal(r, expected[i])


def test_the_gil_is_released_while_filtering():
    """Another Python thread runs while one large CPU filter works."""
    src = random_image((2000, 2000), np.float32)
    kernel = np.random.default_rng(1).normal(size=(41, 41)).astype(np.float32)
    done = threading.Event()
    ticks = 0

    def filter_for_a_while():
        begin = time.perf_counter()
        while time.perf_counter() - begin < 0.3:
            cuconv.filter2D(src, -1, kernel, variant="opencv")
        done.set()

    worker = threading.Thread(target=filter_for_a_while)
    start = time.perf_counter()
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    elapsed = time.perf_counter() - start
    assert ticks >= 50, f"the main thread ran {ticks} times in {elapsed:.3f} s"


def test_no_gpu_warning_once_per_process(tmp_path):
    if GPU_AVAILABLE:
        pytest.skip("a CUDA device is present: no warning to see")
    code = ("import numpy as np, cuconv\n"
            "a = np.zeros((8, 8), np.uint8)\n"
            "for _ in range(3): cuconv.convolve(a, 'gauss5')\n"
            "cuconv.filter2D(a, -1, np.ones((3, 3)))\n"
            "cuconv.convolve(a, 'gauss5', variant='opencv')\n")
    env = {k: v for k, v in os.environ.items() if k != "CUCONV_NO_GPU_WARNING"}
    # -W always: Python's own once-per-place filter must not be what keeps it to one.
    run = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, env=env, check=True)
    assert run.stderr.count("no GPU (") == 1, run.stderr
    assert "CPU used; CUCONV_NO_GPU_WARNING=1 hides this" in run.stderr
    cli = os.environ.get("CUCONV_TEST_CLI")
    if cli:  # the same words as the CLI's warning (where the CLI did not shorten the reason to fit)
        (tmp_path / "in.pgm").write_bytes(b"P5\n4 4\n255\n" + bytes(range(16)))
        said = subprocess.run([cli, "--server", "never", str(tmp_path / "in.pgm"), str(tmp_path / "out.pgm"),
                               "--filter", "gauss3"], capture_output=True, text=True, env=env,
                              start_new_session=True)  # the CLI warns once per terminal session
        cli_line = next((line for line in said.stderr.splitlines() if "no GPU (" in line), None)
        assert cli_line is not None, said.stderr
        if "..." not in cli_line:
            assert cli_line.split("warning: ", 1)[1] in run.stderr, (cli_line, run.stderr)
    env["CUCONV_NO_GPU_WARNING"] = "1"
    quiet = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "no GPU (" not in quiet.stderr


class CaiArray:
    """A bare CUDA array: only __cuda_array_interface__ (as Numba's or a custom allocator's)."""

    def __init__(self, ptr, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3, "stream": None}
        self.shape = shape


@needs_gpu
def test_cuda_array_interface_object_and_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    src = random_image((64, 80, 3), np.uint8)
    expected = cuconv.filter2D(src, -1, KERNEL)
    device_src = torch.from_numpy(src).cuda()
    # torch in -> torch out, on the device, on torch's current stream.
    out = cuconv.filter2D(device_src, -1, KERNEL)
    assert isinstance(out, torch.Tensor) and out.is_cuda
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    # A bare __cuda_array_interface__ object, written into out=.
    target = torch.zeros_like(device_src)
    cuconv.filter2D(CaiArray(device_src.data_ptr(), (64, 80, 3), "|u1"), -1, KERNEL,
                    dst=CaiArray(target.data_ptr(), (64, 80, 3), "|u1"))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(target.cpu().numpy(), expected)
    # A strided view (every other row) without a copy, and a batch.
    batch = torch.stack([device_src, device_src.flip(0)])
    result = cuconv.convolve(batch[:, ::2], KERNEL)
    np.testing.assert_array_equal(result[0].cpu().numpy(), cuconv.filter2D(src[::2], -1, KERNEL))


@needs_gpu
def test_work_on_the_callers_stream_is_ordered():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    stream = torch.cuda.Stream()
    src = torch.zeros((2048, 2048), dtype=torch.float32, device="cuda")
    with torch.cuda.stream(stream):
        torch.cuda._sleep(10_000_000)  # keeps the stream busy: an unordered filter would read zeros
        src.fill_(1.0)
        out = cuconv.filter2D(src, -1, np.ones((3, 3), np.float32))  # torch's current stream: `stream`
        total = out.sum()
    stream.synchronize()
    assert total.item() == 9.0 * 2048 * 2048


@needs_gpu
def test_device_memory_does_not_grow():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    src = torch.rand((64, 64), device="cuda")
    out = torch.empty_like(src)
    cuconv.filter2D(src, -1, KERNEL, dst=out)
    torch.cuda.synchronize()
    before = (torch.cuda.memory_allocated(), cuconv._cuconv.thread_workspace_bytes())
    for _ in range(10_000):
        cuconv.filter2D(src, -1, KERNEL, dst=out)
    torch.cuda.synchronize()
    assert (torch.cuda.memory_allocated(), cuconv._cuconv.thread_workspace_bytes()) == before


def test_gpu_reason_is_visible():
    """Without a device, the GPU cases above skip with this reason (pytest -rs)."""
    assert GPU_AVAILABLE or NO_GPU_REASON


def test_cuda_plumbing_without_a_device(monkeypatch):
    """The CUDA path up to the engine, on host memory posing as device memory: each image's pointer
    and row pitch (strided views need no copy), the depths, the device and the caller's stream."""
    calls = []
    monkeypatch.setattr(cuconv._cuconv, "convolve_device", lambda *args: calls.append(args) or "fast")
    src = np.zeros((4, 10, 12, 3), np.uint8)
    dst = np.zeros((4, 10, 12, 3), np.int16)
    result = cuconv.filter2D(CaiArray(src.ctypes.data + 12 * 3 * 10, (3, 5, 12, 3), "|u1", (360, 72, 3, 1)),
                             cuconv.CV_16S, KERNEL, dst=CaiArray(dst.ctypes.data, (3, 5, 12, 3), "<i2",
                                                                 (720, 144, 6, 2)), stream=12345)
    assert isinstance(result, CaiArray)
    assert len(calls) == 3
    for i, args in enumerate(calls):
        src_ptr, src_pitch, dst_ptr, dst_pitch, height, width, channels, in_depth, out_depth, device = args[:10]
        assert (src_ptr, src_pitch) == (src.ctypes.data + 360 * (i + 1), 72)
        assert (dst_ptr, dst_pitch) == (dst.ctypes.data + 720 * i, 144)
        assert (height, width, channels, in_depth, out_depth, device) == (5, 12, 3, cuconv.CV_8U, cuconv.CV_16S, -1)
        assert args[-2] == cuconv.CV_16S and args[-1] == 12345
    # A 3-D batch of gray images (batch=True): one call per image, each at its own offset.
    calls.clear()
    gray, gray_out = np.zeros((3, 8, 16), np.float32), np.zeros((3, 8, 16), np.float32)
    cuconv.convolve(CaiArray(gray.ctypes.data, (3, 8, 16), "<f4"), KERNEL, batch=True,
                    out=CaiArray(gray_out.ctypes.data, (3, 8, 16), "<f4"))
    assert [args[:7] for args in calls] == [(gray.ctypes.data + 512 * i, 64, gray_out.ctypes.data + 512 * i, 64, 8,
                                             16, 1) for i in range(3)]
    # A bare array whose pixels are not packed cannot be copied by cuconv: a clear error, no call.
    calls.clear()
    with pytest.raises(ValueError, match="not packed"):
        cuconv.filter2D(CaiArray(src.ctypes.data, (10, 12), "|u1", (36, 6)), -1, KERNEL,
                        dst=CaiArray(dst.ctypes.data, (10, 12), "|u1"))
    with pytest.raises(TypeError, match="pass out="):
        cuconv.filter2D(CaiArray(src.ctypes.data, (10, 12), "|u1"), -1, KERNEL)
    # In place (cv2 allows it): the engine must not read what it writes, so cuconv needs a copy.
    with pytest.raises(ValueError, match="src and dst overlap"):
        cuconv.filter2D(CaiArray(src.ctypes.data, (10, 12), "|u1"), -1, KERNEL,
                        dst=CaiArray(src.ctypes.data + 36, (10, 12), "|u1"))
    assert calls == []


def test_in_place_as_cv2():
    image = random_image((30, 31, 3), np.uint8)
    expected = cv2.filter2D(image, -1, KERNEL)
    assert cuconv.filter2D(image, -1, KERNEL, dst=image) is image
    np.testing.assert_array_equal(image, expected)


def test_broadcast_rows_are_read_as_rows():
    """Rows 0 bytes apart (np.broadcast_to) are copied, not wrapped: a cv::Mat step of 0 would mean
    'packed' and read past the one row the array holds."""
    row = random_image((1, 40, 3), np.uint8)
    src = np.broadcast_to(row, (30, 40, 3))
    expected = cv2.filter2D(np.ascontiguousarray(src), -1, KERNEL)
    np.testing.assert_array_equal(cuconv.filter2D(src, -1, KERNEL), expected)
    overlapping = np.lib.stride_tricks.as_strided(random_image((64,), np.float32), (20, 8), (8, 4))  # rows 2 apart
    np.testing.assert_array_equal(cuconv.filter2D(overlapping, -1, KERNEL),
                                  cv2.filter2D(np.ascontiguousarray(overlapping), -1, KERNEL))


def test_out_of_host_memory_is_a_memory_error():
    """The engine's 'not enough memory' becomes MemoryError, dst untouched. The seam: a child
    process whose address space (RLIMIT_AS) leaves too little room for the padded copy of a
    64 MiB image that a wrap border needs."""
    code = """if True:
        import resource
        import numpy as np
        import cuconv
        src = np.ones((4096, 4096), np.float32)
        out = np.full_like(src, 7)
        kernel = np.ones((3, 3), np.float32)
        # Warm-up at full size without the limit: OpenCV's threads and buffers exist before it.
        cuconv.filter2D(src, -1, kernel, dst=out, borderType=cuconv.BORDER_WRAP, variant="opencv")
        out[...] = 7
        with open("/proc/self/status") as status:
            vm = next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (16 << 20), resource.getrlimit(resource.RLIMIT_AS)[1]))
        try:
            cuconv.filter2D(src, -1, kernel, dst=out, borderType=cuconv.BORDER_WRAP, variant="opencv")
            print("no error")
        except MemoryError as e:
            print("MemoryError:", e)
        print("untouched:", out.min() == 7 == out.max())
    """
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "MemoryError: not enough memory to filter a 4096x4096 image of 1 channel(s) on the CPU" in run.stdout, (
        run.stdout + run.stderr)
    assert "untouched: True" in run.stdout


def test_a_cuda_array_interface_that_raises_falls_back_to_dlpack(monkeypatch):
    """PyTorch raises in __cuda_array_interface__ for element types it has no code for there: the
    array is then read through DLPack (dlpack_array stands in for the device here)."""
    class Tensor:
        def __init__(self, host):
            self.host = host

        @property
        def __cuda_array_interface__(self):
            raise TypeError("dtype not supported by __cuda_array_interface__")

        def __dlpack_device__(self):
            return (2, 0)

    src, dst = Tensor(np.zeros((5, 6), np.uint16)), Tensor(np.zeros((5, 6), np.uint16))
    monkeypatch.setattr(cuconv._cuconv, "dlpack_array",
                        lambda a: (a.host.ctypes.data, [5, 6], [6, 1], 1, 16, 0))
    calls = []
    monkeypatch.setattr(cuconv._cuconv, "convolve_device", lambda *args: calls.append(args) or "fast")
    assert cuconv.filter2D(src, -1, KERNEL, dst=dst) is dst
    assert [args[:9] for args in calls] == [(src.host.ctypes.data, 12, dst.host.ctypes.data, 12, 5, 6, 1,
                                              cuconv.CV_16U, cuconv.CV_16U)]
