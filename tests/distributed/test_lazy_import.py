"""``import ember`` loads nothing of ember.distributed, and ember.distributed loads no MPI until a
process group is made."""
import subprocess
import sys

from mpi_jobs import ROOT, env

PROBE = """
import sys
import ember
assert "ember.distributed" not in sys.modules, "import ember imported ember.distributed"
import ember.distributed as dist
assert ember.distributed is dist and "mpi4py" not in sys.modules, "ember.distributed imported mpi4py"
assert not dist.is_initialized()
try:
    dist.get_rank()
except ValueError as e:
    assert "init_process_group" in str(e)
else:
    raise AssertionError("get_rank without a process group must raise")
assert "mpi4py" not in sys.modules
print("ok")
"""


def test_import_ember_does_not_load_distributed_or_mpi():
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env(), cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
