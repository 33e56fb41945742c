"""Runs test_triton_codegen.py, test_triton_columns.py and test_triton_loss.py (the Triton code generator's kernels under
TRITON_INTERPRET=1, compared with eager ember) in a process of its own: triton.jit picks interpreter or GPU per
decorated function from the environment, so a process whose other tests imported Triton or the
fuser's Triton helpers differently cannot host it."""
import os
import subprocess
import sys

import pytest


# one process per file: the three took 6.5 min as one test on a 2-core machine, the suite's tail
@pytest.mark.parametrize("name", ["test_triton_codegen.py", "test_triton_columns.py", "test_triton_loss.py"])
def test_triton_codegen_under_the_interpreter_in_its_own_process(name):
    pytest.importorskip("triton", reason="triton is not installed (pip install ember[test])")
    pytest.importorskip("torch", reason="Triton's interpreter takes torch tensors")
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, EMBER_TRITON_INTERPRETER_RUN="1", TRITON_INTERPRET="1", OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "-o", "addopts=", os.path.join(here, name)],
                         cwd=os.path.dirname(os.path.dirname(here)), env=env, capture_output=True, text=True,
                         timeout=1800)      # minutes alone; the full suite on a loaded 2-core machine: several times that
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-6000:] + run.stderr[-3000:]
