# SPDX-License-Identifier: Apache-2.0
"""docs/python.md's examples run as written: every ```python block, in order; a block whose first
line is "# needs: a CUDA device and PyTorch" only where both are there."""
import pathlib
import re

import pytest

from conftest import GPU_AVAILABLE, NO_GPU_REASON

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


def test_the_guide_has_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index):
    code = BLOCKS[index]
    if code.startswith("# needs: a CUDA device and PyTorch"):
        if not GPU_AVAILABLE:
            pytest.skip(f"needs a CUDA device: {NO_GPU_REASON}")
        pytest.importorskip("torch", reason="PyTorch is not installed")
    exec(compile(code, f"{DOC}:block{index}", "exec"), {})
