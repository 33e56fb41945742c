"""A private kernel cache per test: $EMBER_CACHE_DIR and config.cache_dir point into tmp_path, the
in-process tables and counters start empty, so no test reads or writes ~/.cache/ember.

    from kernel_cache_env import private_cache, run_child   # noqa: F401  (pytest fixture)

A test that damages an entry first builds it in another process (`build_in_child`): a library this
process has dlopened stays mapped, and glibc's dlopen answers a second load of the same path with
that old mapping, so damage to a file this process loaded would be a test artifact.
"""
import json
import os
import subprocess
import sys

import pytest

from ember._inductor import codecache, config, machine

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("EMBER_CACHE_DIR", str(cache))
    monkeypatch.setattr(config, "cache_dir", str(cache))
    monkeypatch.setattr(config, "strict", False)
    codecache.clear_memory_cache()
    codecache.reset_counters()
    machine.probe()      # writes this machine's facts into the new dir (probed once per test session)
    yield cache
    codecache.clear_memory_cache()


def add_kernel_source(tag: str) -> str:
    """A kernel out[i] = x[i] * ints[1] + floats[0]; `tag` makes the source (and key) new."""
    return f"""#include <stdint.h>
/* {tag} */
void scale_add(void *const *bufs, const int64_t *ints, const double *floats) {{
    double *out = (double *)bufs[0];
    const double *x = (const double *)bufs[1];
    for (int64_t i = 0; i < ints[0]; i++) out[i] = x[i] * (double)ints[1] + floats[0];
}}
"""


def run_child(code: str, cache_dir, timeout=120) -> dict:
    """Run `code` in a new Python with the cache at `cache_dir`; it must print one JSON line last."""
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def build_in_child(cache_dir, *tags) -> dict:
    """Compile add_kernel_source(tag) for each tag into `cache_dir` in a new process; its counters."""
    code = f"""
import json, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from ember._inductor import codecache
from kernel_cache_env import add_kernel_source
for tag in {list(tags)!r}:
    codecache.load_c(add_kernel_source(tag))
print(json.dumps(codecache.counters))
"""
    return run_child(code, cache_dir)
