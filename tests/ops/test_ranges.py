"""Oracle tests of the range factories (arange, linspace, logspace, eye, tril/triu_indices) and of
complex/polar, split from test_creation.py."""
import pytest
import torch

from oracle import TORCH_BEFORE_2_13, check, check_as_2_13, make
from test_creation import lib_dtype


ARANGE = [(5,), (0,), (2, 7), (7, 2, -2), (0, 1, 0.1), (1.0, 2.0), (-3.5, 5.2, 1.5), (0, 10, 3), (0.5, 5.7),
          (0, 1, 0.3), (10, -10, -0.75), (0, 5, 0.5), (0, 4, 2), (5, -1, -2), (3, 9, 3)]


@pytest.mark.parametrize("args", ARANGE)
@pytest.mark.parametrize("dt", [None, "int64", "int32", "uint8", "float32", "float64", "float16", "bfloat16"])
def test_arange(args, dt):
    kw = {} if dt is None else {"dtype": None}
    _check_arange(lambda lib: lib.arange(*args, **({} if dt is None else {"dtype": lib_dtype(lib, dt)})), args, dt)
    if dt in ("int32", "uint8") and any(isinstance(a, float) and not a.is_integer() for a in args):
        return  # torch's meta arange checks the truncated step, unlike its CPU kernel (which we follow)
    _check_arange(lambda lib: lib.arange(*args, device="meta", **({} if dt is None else {"dtype": lib_dtype(lib, dt)})),
                  args, dt)     # (an older PyTorch's meta arange raises ZeroDivisionError there)
    del kw


@pytest.mark.parametrize("args", [(0, 1, 0), (0, -1, 1), (5, 0), (float("inf"),), (0, 1, 0.5)])
@pytest.mark.parametrize("dt", [None, "int64", "bool", "complex64"])
def test_arange_errors(args, dt):
    _check_arange(lambda lib: lib.arange(*args, **({} if dt is None else {"dtype": lib_dtype(lib, dt)})), args, dt)


def _check_arange(program, args, dt):
    """check(program), except where an older PyTorch's int64 arange divides by a step truncated to 0
    (a SIGFPE that kills the process): there ember raises 2.13's ValueError alone."""
    if TORCH_BEFORE_2_13 and dt == "int64" and len(args) == 3 and args[2] and not int(args[2]):
        check_as_2_13(program, raises=ValueError, oracle_is_current=False)
        return
    check(program)


def test_arange_keywords_and_tensors():
    check(lambda lib: lib.arange(start=1, end=10, step=2))
    check(lambda lib: lib.arange(end=4))


@pytest.mark.parametrize("args", [(0, 1, 5), (0, 10, 4), (-2, 2, 1), (3, -3, 7), (0, 1, 0), (1, 100, 50)])
@pytest.mark.parametrize("dt", [None, "float64", "float16", "bfloat16", "int64", "int32", "complex64"])
def test_linspace_logspace(args, dt):
    kw = lambda lib: {} if dt is None else {"dtype": lib_dtype(lib, dt)}  # noqa: E731
    check(lambda lib: lib.linspace(*args, **kw(lib)))
    check(lambda lib: lib.linspace(*args, device="meta", **kw(lib)))
    if dt not in ("int64", "int32"):  # integer logspace truncates pow results that differ in the last ulp
        check(lambda lib: lib.logspace(*args, **kw(lib)), rtol=1e-4 if dt in (None, "complex64") else None)
        check(lambda lib: lib.logspace(*args, base=2, **kw(lib)), rtol=1e-4 if dt in (None, "complex64") else None)


def test_linspace_tensors_and_errors():
    check(lambda lib: lib.linspace(lib.tensor(0), lib.tensor(1), 3))
    check(lambda lib: lib.linspace(lib.tensor(0.0), 2, 5))
    check(lambda lib: lib.linspace(0, lib.tensor(2.0), 5))
    check(lambda lib: lib.linspace(0, 1 + 1j, 3))
    check(lambda lib: lib.linspace(lib.tensor([0.0]), 1, 3))
    check(lambda lib: lib.linspace(0, 1, -1))
    check(lambda lib: lib.linspace(0, 1, 5, dtype=lib.bool))
    check(lambda lib: lib.logspace(0, 2, 3, dtype=lib.int64))


@pytest.mark.parametrize("args", [(3,), (0,), (2, 4), (4, 2), (3, 0)])
@pytest.mark.parametrize("dt", [None, "bool", "int32", "float64", "complex64", "bfloat16"])
def test_eye(args, dt):
    kw = lambda lib: {} if dt is None else {"dtype": lib_dtype(lib, dt)}  # noqa: E731
    check(lambda lib: lib.eye(*args, **kw(lib)), check_stride=True)
    check(lambda lib: lib.eye(*args, device="meta", **kw(lib)))


def test_eye_errors():
    check(lambda lib: lib.eye(-1))
    check(lambda lib: lib.eye(2, -1))


@pytest.mark.parametrize("op", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("args", [(3, 3), (3, 4, 1), (4, 3, -1), (3, 3, -5), (3, 3, 5), (0, 3), (1, 1)])
def test_tri_indices(op, args):
    check(lambda lib: getattr(lib, op)(*args))
    check(lambda lib: getattr(lib, op)(*args, dtype=lib.int32))
    check(lambda lib: getattr(lib, op)(*args, device="meta"))


@pytest.mark.parametrize("op", ["tril_indices", "triu_indices"])
def test_tri_indices_errors(op):
    check(lambda lib: getattr(lib, op)(-1, 3))
    check(lambda lib: getattr(lib, op)(3, -1))
    check(lambda lib: getattr(lib, op)(3, 3, dtype=lib.float32))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_complex_polar(dt):
    a, b = make((2, 3), dt), make((3,), dt)
    check(lambda lib, a, b: lib.complex(a, b), a, b)
    check(lambda lib, a, b: lib.polar(a, b), a, b)
    check(lambda lib, a, b: lib.complex(a.to("meta"), b.to("meta")), a, b)
    check(lambda lib, a, b: lib.polar(a, b, out=lib.empty(0, dtype=a.dtype.to_complex() if lib is ember else
                                                         (torch.complex64 if a.dtype == torch.float32 else
                                                          torch.complex128))), a, b)


def test_complex_errors():
    check(lambda lib, a, b: lib.complex(a, b), make((2,), "float32"), make((2,), "float64"))
    check(lambda lib, a, b: lib.complex(a, b), make((2,), "int64"), make((2,), "int64"))
    check(lambda lib, a, b: lib.polar(a, b), make((2,), "int32"), make((2,), "float32"))
