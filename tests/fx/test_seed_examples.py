"""Seed 001's "torch fx interpreter" example, run as the seed writes it under ``import ember as
torch`` and under PyTorch 2.13, on the same input values: the printed output must be the same.

The program is the seed's text apart from its import lines (``import torch`` / ``from torch.fx
import Interpreter`` name the library) and the input (``torch.randn(3, 4)`` is replaced by fixed
values so both libraries see the same numbers). Two differences are normalised and checked on
their own: the class header names the library (``class fn(ember.nn.Module)``), and ember records
each node's stack trace (PyTorch's symbolic_trace does not by default, and prints
``# No stacktrace found for following nodes`` instead of the ``# File: ...`` comment).
"""
import contextlib
import io
import os
import re
import tempfile

import numpy as np

SEED_PROGRAM = '''
class NegSigmSwapInterpreter(Interpreter):
    def call_function(self, target,
                        args, kwargs):
        if target == torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target)

    def call_method(self, target,
                    args, kwargs):
        if target == 'neg':
            call_self, *args_tail = args
            return call_self.sigmoid(*args_tail, **kwargs)
        return super().call_method(target)

def fn(x):
    return torch.sigmoid(x).neg()

gm = torch.fx.symbolic_trace(fn)
print(gm.print_readable())
input = torch.tensor(INPUT_VALUES)
result = NegSigmSwapInterpreter(gm).run(input)

print(result)
print(torch.neg(input).sigmoid())
'''

IMPORTS = {
    "ember": "import ember as torch\nfrom ember.fx import Interpreter\n",
    "torch": "import torch\nfrom torch.fx import Interpreter\n",
}


def run_seed(lib: str, values) -> tuple[str, str]:
    """Run the seed program with `lib` from a real file; returns (its path, what it printed)."""
    path = os.path.join(tempfile.mkdtemp(prefix=f"seed001_{lib}_"), "example.py")
    source = IMPORTS[lib] + SEED_PROGRAM.replace("INPUT_VALUES", repr(values))
    with open(path, "w") as f:
        f.write(source)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, path, "exec"), {"__name__": "seed001_example"})
    return path, out.getvalue()


def test_neg_sigm_swap_interpreter_prints_what_torch_prints():
    values = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32).round(4).tolist()
    ember_path, ours = run_seed("ember", values)
    _, theirs = run_seed("torch", values)

    # ember's stack-trace comment names the seed's line, in PyTorch's print_readable format
    line = 1 + (IMPORTS["ember"] + SEED_PROGRAM).splitlines().index("    return torch.sigmoid(x).neg()")
    comment = f"# File: {ember_path}:{line} in fn, code: return torch.sigmoid(x).neg()"
    assert ours.count(comment) == 2, ours
    assert theirs.count("# No stacktrace found for following nodes") == 2, theirs

    def normalise(text):
        text = re.sub(r"^\s*# (File: .*|No stacktrace found for following nodes)\n", "", text, flags=re.M)
        return text.replace("ember.", "torch.")

    assert normalise(ours) == normalise(theirs)
    assert "tensor([[" in ours and "sigmoid = torch.sigmoid(x);  x = None" in normalise(ours)
