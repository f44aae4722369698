# SPDX-License-Identifier: Apache-2.0
"""python/cuconv/_cuconv.pyi is what nanobind's stubgen makes of the built module: a changed
binding without a regenerated stub fails here (regenerate: the command in the skip below)."""
import os
import pathlib
import subprocess
import sys

import pytest

import cuconv

STUB = pathlib.Path(__file__).resolve().parents[1] / "cuconv" / "_cuconv.pyi"


def test_stub_matches_the_module(tmp_path):
    pytest.importorskip("nanobind.stubgen", reason="nanobind is not installed")
    generated = tmp_path / "_cuconv.pyi"
    package_parent = pathlib.Path(cuconv.__file__).absolute().parents[1]  # the cuconv this suite imported
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "cuconv._cuconv", "-o", str(generated)],
                   check=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(package_parent)})
    assert generated.read_text() == STUB.read_text(), (
        "regenerate: python3 -m nanobind.stubgen -m cuconv._cuconv -o python/cuconv/_cuconv.pyi")
