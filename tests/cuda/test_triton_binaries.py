"""Compiled Triton kernels kept as cubins next to their source (triton_launch.KernelBinary): a warm
process launches them through CuPy without importing Triton; a tampered or missing binary, or a
pointer that is not 16-byte aligned, goes back through Triton's JIT; results equal eager's."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

if os.environ.get("TRITON_INTERPRET") == "1":
    pytest.skip("TRITON_INTERPRET=1: Triton's interpreter, not the GPU", allow_module_level=True)
pytest.importorskip("triton", reason="triton is not installed (pip install ember[gpu])")

import ember  # noqa: E402
from ember._functorch import make_fx  # noqa: E402
from ember._inductor import diskstore, triton_launch  # noqa: E402
from ember._inductor.compile_fx import compile_fx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = """
import json, sys
import numpy as np
import ember
x = ember.from_numpy(np.linspace(-3, 3, 4099, dtype=np.float32)).cuda()
f = ember.compile(lambda t: ((t * 1.75 + 0.5).tanh() * t).softmax(0))
got = f(x)
want = ((x * 1.75 + 0.5).tanh() * x).softmax(0)
print(json.dumps({"close": bool(np.allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-5, atol=1e-7)),
                  "triton_imported": "triton" in sys.modules}))
"""


def _child(env):
    run = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=ROOT, **env))
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_warm_process_launches_stored_binaries_without_triton(tmp_path):
    env = {"EMBER_CACHE_DIR": str(tmp_path / "ember"), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    cold = _child(env)
    assert cold == {"close": True, "triton_imported": True}
    stored = [n for n in os.listdir(tmp_path / "ember" / "triton") if n.endswith(".cubin")]
    assert stored, "no cubin stored next to the kernel source"
    assert _child(env) == {"close": True, "triton_imported": False}


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    diskstore.forget_roots()
    triton_launch._modules.clear()
    yield tmp_path
    diskstore.forget_roots()


def _compiled(fn, x):
    compiled = compile_fx(make_fx(fn)(x), [x])
    calls = [n.target for n in compiled.current.graph.nodes if isinstance(n.target, triton_launch.KernelCall)]
    assert calls
    return compiled, calls


def _as_in_a_warm_process(calls, jit=None):
    """Each call as a warm process makes it: its binary read back from disk, Triton not loaded."""
    def no_triton():
        raise AssertionError("the stored binary was not used")
    for call in calls:
        call._fn, call.compiled = jit.get(call.__name__) if jit else no_triton, None
        call.binary = triton_launch._load_binary(call.tune_path, call.__name__, call.options)
        assert call.binary is not None


def test_stored_binaries_compute_what_the_jit_did(fresh_cache):
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((37, 129)).astype(np.float32)).cuda()
    fn = lambda t: ((t * 3 - 1).sigmoid() + t.amax(1, keepdim=True), t.softmax(-1), (t * t).sum())  # noqa: E731
    compiled, calls = _compiled(fn, x)
    first = [t.cpu().numpy() for t in compiled(x)]
    _as_in_a_warm_process(calls)
    for got, jit, want in zip(compiled(x), first, fn(x)):
        np.testing.assert_array_equal(got.cpu().numpy(), jit)
        np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_tampered_binary_is_not_loaded_and_unaligned_pointers_take_the_jit(fresh_cache):
    x = ember.from_numpy(np.arange(4097, dtype=np.float32)).cuda()
    shifted = ember.from_numpy(np.arange(4098, dtype=np.float32)).cuda()[1:]   # 4 bytes past an aligned start
    fn = lambda t: t * 2 + 1                                             # noqa: E731
    compiled, (call,) = _compiled(fn, x)
    compiled(x)
    jit_fn = call.fn
    _as_in_a_warm_process([call], jit={call.__name__: lambda: jit_fn})
    np.testing.assert_array_equal(compiled(shifted).cpu().numpy(), fn(shifted).cpu().numpy())
    assert call.compiled is not None                     # the unaligned launch went through the JIT
    cubin, _ = triton_launch._binary_paths(call.tune_path, call.__name__, call.options)
    data = bytearray(open(cubin, "rb").read())
    data[len(data) // 2] ^= 0xFF
    diskstore.write_atomic(cubin, bytes(data))
    assert triton_launch._load_binary(call.tune_path, call.__name__, call.options) is None
    os.remove(cubin)
    assert triton_launch._load_binary(call.tune_path, call.__name__, call.options) is None
