"""Tensor basics against PyTorch: metadata of views, NumPy/DLPack interop, Python protocols,
pickling, the version counter, dtype objects and promotion, default dtype, devices."""
import copy
import itertools
import pickle

import numpy as np
import pytest
import torch

import ember

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
         "complex64", "complex128"]
PAIRS = [(getattr(ember, n), getattr(torch, n)) for n in NAMES]


def tname(d):
    """dtype name; ember has no complex32, so PyTorch's complex32 results read as complex64."""
    return str(d).replace("torch.", "").replace("ember.", "").replace("complex32", "complex64")


# ---------------------------------------------------------------------------------------
# metadata of (NumPy-made) views: same numbers as torch's views of the same memory
# ---------------------------------------------------------------------------------------
VIEWS = {
    "plain": lambda a: a,
    "transposed": lambda a: a.T,
    "row": lambda a: a[1],
    "column": lambda a: a[:, 2],
    "step": lambda a: a[::2, 1::2],
    "offset_block": lambda a: a[1:3, 2:5],
    "scalar": lambda a: a[1, 1],
    "empty": lambda a: a[2:2],
    "size1": lambda a: a[1:2, :],
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("dt", ["float32", "int16", "float64", "bool", "complex64"])
def test_view_metadata(view, dt):
    base = np.arange(4 * 6).reshape(4, 6).astype(dt)
    v = VIEWS[view](base)
    v = np.asarray(v) if np.ndim(v) else np.asarray(v)[()] if False else v
    if not isinstance(v, np.ndarray):
        v = base[1:2, 1:2].reshape(())  # a 0-d view
    e_base, t_base = ember.from_numpy(base), torch.from_numpy(base)
    e, t = ember.from_numpy(v), torch.from_numpy(v)
    assert e.shape == t.shape and isinstance(e.shape, ember.Size) and isinstance(e.shape, tuple)
    assert e.size() == tuple(t.size()) and e.dim() == t.dim() and e.ndim == t.ndim
    assert e.numel() == t.numel() and e.nelement() == t.nelement()
    assert e.stride() == t.stride()
    for d in range(e.dim()):
        assert e.stride(d) == t.stride(d) and e.size(d) == t.size(d)
        assert e.stride(-1 - d) == t.stride(-1 - d)
    if e.numel():
        assert e.storage_offset() == t.storage_offset()
        assert e.data_ptr() - e_base.data_ptr() == t.data_ptr() - t_base.data_ptr()
    assert e.is_contiguous() == t.is_contiguous()
    assert e.element_size() == t.element_size() and e.itemsize == t.itemsize
    assert e.nbytes == t.nbytes
    assert repr(e.shape) == repr(t.shape).replace("torch.", "ember.")


def test_size_and_dim_errors():
    e, t = ember.zeros(2, 3), torch.zeros(2, 3)
    for fn in (lambda x: x.size(2), lambda x: x.stride(-3), lambda x: x.size(5)):
        with pytest.raises(type(_exc(lambda: fn(t)))):
            fn(e)
    assert ember.zeros(()).size() == () and ember.zeros(()).stride() == ()
    assert ember.Size([2, 3]).numel() == 6 and ember.Size([2, 3])[1:] == (3,)


def _exc(fn):
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("expected an exception")


# ---------------------------------------------------------------------------------------
# NumPy and DLPack
# ---------------------------------------------------------------------------------------
def test_numpy_shares_memory_both_ways():
    a = np.zeros(4, np.float32)
    e = ember.from_numpy(a)
    a[1] = 5
    assert e.tolist()[1] == 5
    e.fill_(2)
    assert a.tolist() == [2.0] * 4
    n = e.numpy()
    n[0] = 9
    assert e.tolist()[0] == 9 and np.shares_memory(n, a)
    assert np.asarray(e) is n or np.shares_memory(np.asarray(e), a)
    assert np.asarray(e, dtype=np.float64).dtype == np.float64
    with pytest.raises(RuntimeError):
        ember.ones(2, requires_grad=True).numpy()
    with pytest.raises(TypeError):
        ember.zeros(2, device="meta").numpy()
    for bad in (np.zeros(2, np.uint16), np.array(["a"])):
        with pytest.raises(TypeError):
            ember.from_numpy(bad)
    with pytest.raises(ValueError):
        ember.from_numpy(np.arange(4)[::-1])
    with pytest.raises(TypeError):
        ember.from_numpy([1, 2])


@pytest.mark.parametrize("e_dt,t_dt", PAIRS)
def test_item_tolist(e_dt, t_dt):
    vals = [[1.5, -2.0], [0.0, 3.25]] if e_dt.is_floating_point or e_dt.is_complex else [[1, 0], [3, 1]]
    e, t = ember.tensor(vals, dtype=e_dt), torch.tensor(vals, dtype=t_dt)
    assert e.tolist() == t.tolist()
    assert type(e[0, 0].item() if hasattr(ember.Tensor, "__getitem__") else e.tolist()[0][0]) is \
        type(t[0, 0].item())
    s_e, s_t = ember.tensor(vals[1][1], dtype=e_dt), torch.tensor(vals[1][1], dtype=t_dt)
    assert s_e.item() == s_t.item() and type(s_e.item()) is type(s_t.item())
    assert s_e.tolist() == s_t.tolist()
    with pytest.raises(RuntimeError):
        e.item()
    with pytest.raises(RuntimeError):
        ember.zeros(1, device="meta").item()


@pytest.mark.parametrize("name", ["float32", "float64", "int64", "int8", "uint8", "bool", "complex64", "float16"])
def test_dlpack_round_trips(name):
    base = (np.arange(12).reshape(3, 4) % 2).astype(name)
    e = ember.from_numpy(base)
    t = torch.from_dlpack(e)
    assert t.dtype == getattr(torch, name) and t.shape == (3, 4) and t.stride() == e.stride()
    t.view(-1)[0] = 1
    assert e.tolist()[0][0] == t.tolist()[0][0]
    back = ember.from_dlpack(t)
    assert back.data_ptr() == e.data_ptr()
    t2 = torch.ones(2, 5, dtype=getattr(torch, name))[:, 1:4]
    e2 = ember.from_dlpack(t2)
    assert e2.stride() == t2.stride() and e2.data_ptr() == t2.data_ptr()
    a = np.from_dlpack(e)
    assert np.shares_memory(a, base)
    assert e.__dlpack_device__() == (1, 0)
    with pytest.raises(RuntimeError):
        ember.ones(2, requires_grad=True).__dlpack__()


# ---------------------------------------------------------------------------------------
# Python protocols
# ---------------------------------------------------------------------------------------
PROTO_INPUTS = [np.array(2.5), np.array([3]), np.array(7), np.array([1, 2]), np.array([]), np.array(True),
                np.array([[4.0]]), np.array(1 + 2j)]
PROTOCOLS = {"bool": bool, "len": len, "index": lambda x: [0, 1, 2, 3, 4, 5, 6, 7][x], "float": float,
             "int": int, "complex": complex, "operator.index": lambda x: x.__index__()}


@pytest.mark.parametrize("i", range(len(PROTO_INPUTS)))
@pytest.mark.parametrize("proto", list(PROTOCOLS))
def test_python_protocols(i, proto):
    a = PROTO_INPUTS[i]
    fn = PROTOCOLS[proto]
    t, e = torch.from_numpy(a.copy()), ember.from_numpy(a.copy())
    try:
        expected = fn(t)
    except Exception as exc:
        with pytest.raises(type(exc)):
            fn(e)
        return
    assert fn(e) == expected


# ---------------------------------------------------------------------------------------
# pickling, deepcopy, version counter
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("e_dt", [d for d, _ in PAIRS])
def test_pickle_and_deepcopy(e_dt):
    e = ember.ones(2, 3, dtype=e_dt)
    for r in (pickle.loads(pickle.dumps(e)), copy.deepcopy(e)):
        assert r.dtype is e_dt and r.shape == (2, 3) and r.tolist() == e.tolist()
        assert r.data_ptr() != e.data_ptr()
    g = ember.ones(2, requires_grad=True)
    assert copy.deepcopy(g).requires_grad and pickle.loads(pickle.dumps(g)).requires_grad
    d = {"a": e, "b": e}
    d2 = copy.deepcopy(d)
    assert d2["a"] is d2["b"]
    assert pickle.loads(pickle.dumps(e_dt)) is e_dt
    assert pickle.loads(pickle.dumps(ember.device("cpu"))) == ember.device("cpu")


def test_version_counter():
    e, t = ember.zeros(3), torch.zeros(3)
    assert e._version == t._version == 0
    e.fill_(1)
    t.fill_(1)
    e.zero_()
    t.zero_()
    assert e._version == t._version == 2
    d, td = e.detach(), t.detach()
    assert d._version == td._version
    d.fill_(2)
    td.fill_(2)
    assert e._version == t._version == 3
    e.uniform_()
    t.uniform_()
    assert e._version == t._version
    with pytest.raises(Exception):
        e._version = 5


# ---------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("e_dt,t_dt", PAIRS)
def test_dtype_objects(e_dt, t_dt):
    assert str(e_dt) == str(t_dt).replace("torch.", "ember.") == repr(e_dt)
    assert e_dt.is_floating_point == t_dt.is_floating_point
    assert e_dt.is_complex == t_dt.is_complex
    assert e_dt.itemsize == t_dt.itemsize
    assert e_dt.is_signed == t_dt.is_signed
    e = ember.zeros(1, dtype=e_dt)
    t = torch.zeros(1, dtype=t_dt)
    assert e.is_floating_point() == t.is_floating_point() and e.is_complex() == t.is_complex()
    assert ember.is_floating_point(e) == torch.is_floating_point(t)
    assert e.is_signed() == t.is_signed()
    assert e.dtype is e_dt


def test_dtype_aliases():
    for alias in ("half", "float", "double", "short", "int", "long", "cfloat", "cdouble", "bool"):
        assert tname(getattr(ember, alias)) == tname(getattr(torch, alias))


@pytest.mark.parametrize("e_dt,t_dt", PAIRS)
def test_finfo_iinfo(e_dt, t_dt):
    if t_dt.is_floating_point or t_dt.is_complex:
        fe, ft = ember.finfo(e_dt), torch.finfo(t_dt)
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(fe, field) == getattr(ft, field), field
        assert fe.dtype == ft.dtype
        with pytest.raises(TypeError):
            ember.iinfo(e_dt)
    elif t_dt is not torch.bool:
        ie, it = ember.iinfo(e_dt), torch.iinfo(t_dt)
        for field in ("bits", "max", "min", "dtype"):
            assert getattr(ie, field) == getattr(it, field), field
        with pytest.raises(TypeError):
            ember.finfo(e_dt)
    else:
        with pytest.raises(TypeError):
            ember.finfo(e_dt)
        with pytest.raises(TypeError):
            torch.finfo(t_dt)
    assert ember.finfo().eps == torch.finfo().eps


def test_promote_types_all_pairs():
    for (ea, ta), (eb, tb) in itertools.product(PAIRS, PAIRS):
        assert tname(ember.promote_types(ea, eb)) == tname(torch.promote_types(ta, tb)), (ea, eb)


def test_can_cast_all_pairs():
    for (ea, ta), (eb, tb) in itertools.product(PAIRS, PAIRS):
        assert ember.can_cast(ea, eb) == torch.can_cast(ta, tb), (ea, eb)


SCALARS = [True, 2, -3, 2.5, 1 + 1j]


def _operand(lib, kind, dt_pair, value=1):
    e_dt, t_dt = dt_pair
    if kind == "dim":
        return lib.ones(2, dtype=e_dt if lib is ember else t_dt)
    return lib.ones((), dtype=e_dt if lib is ember else t_dt)


@pytest.mark.parametrize("kind_a,kind_b", [("dim", "dim"), ("dim", "zero"), ("zero", "zero")])
def test_result_type_tensors(kind_a, kind_b):
    for pa, pb in itertools.product(PAIRS, PAIRS):
        e = ember.result_type(_operand(ember, kind_a, pa), _operand(ember, kind_b, pb))
        t = torch.result_type(_operand(torch, kind_a, pa), _operand(torch, kind_b, pb))
        assert tname(e) == tname(t), (pa[0], pb[0], kind_a, kind_b)


@pytest.mark.parametrize("kind", ["dim", "zero"])
def test_result_type_scalars(kind):
    for p, s in itertools.product(PAIRS, SCALARS):
        e = ember.result_type(_operand(ember, kind, p), s)
        t = torch.result_type(_operand(torch, kind, p), s)
        assert tname(e) == tname(t), (p[0], s, kind)
    for s1, s2 in itertools.product(SCALARS, SCALARS):
        assert tname(ember.result_type(ember.tensor(s1), s2)) == tname(torch.result_type(torch.tensor(s1), s2))


def test_default_dtype_effects():
    try:
        for d in ("float64", "float16", "bfloat16", "float32"):
            ember.set_default_dtype(getattr(ember, d))
            torch.set_default_dtype(getattr(torch, d))
            assert tname(ember.get_default_dtype()) == tname(torch.get_default_dtype())
            for fn in (lambda lib: lib.tensor([1.5]), lambda lib: lib.zeros(2), lambda lib: lib.tensor(1j),
                       lambda lib: lib.arange(0, 1, 0.5), lambda lib: lib.full((1,), 2.0),
                       lambda lib: lib.linspace(0, 1, 3), lambda lib: lib.rand(2), lambda lib: lib.tensor([1, 2]),
                       lambda lib: lib.scalar_tensor(1)):
                try:
                    expected = tname(fn(torch).dtype)
                except RuntimeError:  # complex under a bfloat16 default
                    with pytest.raises(RuntimeError):
                        fn(ember)
                    continue
                assert tname(fn(ember).dtype) == expected
            assert tname(ember.result_type(ember.tensor([1]), 1.5)) == tname(torch.result_type(torch.tensor([1]), 1.5))
            assert ember.finfo().bits == torch.finfo().bits
        for bad in ("int64", "complex64"):
            with pytest.raises(type(_exc(lambda: torch.set_default_dtype(getattr(torch, bad))))):
                ember.set_default_dtype(getattr(ember, bad))
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


# ---------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["cpu", "meta", "cuda", "cuda:1", ("cuda", 2), ("cpu",)])
def test_device(spec):
    args = spec if isinstance(spec, tuple) else (spec,)
    e, t = ember.device(*args), torch.device(*args)
    assert e.type == t.type and e.index == t.index
    assert str(e) == str(t) and repr(e) == repr(t)
    assert e == ember.device(str(t)) and hash(e) == hash(ember.device(str(t)))
    assert ember.device(0) == ember.device("cuda:0")  # (torch.device(0) needs an accelerator present)


@pytest.mark.parametrize("spec", ["gpu", "cuda:x", "cpu:0:1", 1.5])
def test_device_errors(spec):
    with pytest.raises(type(_exc(lambda: torch.device(spec)))):
        ember.device(spec)


def test_tensor_device():
    e = ember.zeros(2)
    assert e.device == ember.device("cpu") and e.is_cpu and not e.is_meta and not e.is_cuda
    assert e.get_device() == torch.zeros(2).get_device()
    m = ember.zeros(2, device="meta")
    assert m.device.type == "meta" and m.is_meta and m.data_ptr() == 0
    assert ember.is_tensor(e) and not ember.is_tensor(np.zeros(2)) and ember.numel(e) == 2


_CONVERSIONS = {"float": float, "int": int, "bool": bool, "item": lambda t: t.item(), "complex": complex}


@pytest.fixture(scope="module")
def torch_conversion_warnings():
    # torch warns once per process (TORCH_WARN_ONCE): ask a fresh process, each case in its own
    import json
    import subprocess
    import sys
    code = ("import json, sys, warnings, torch\n"
            "name, rg = sys.argv[1], sys.argv[2] == '1'\n"
            "conv = {'float': float, 'int': int, 'bool': bool, 'item': lambda t: t.item(), 'complex': complex}[name]\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    conv(torch.ones((), requires_grad=rg))\n"
            "print(json.dumps([str(w.message).split('(Triggered')[0].strip() for w in caught]))\n")
    return {(name, rg): json.loads(subprocess.run([sys.executable, "-c", code, name, str(int(rg))], check=True,
                                                  capture_output=True, text=True).stdout)
            for name in _CONVERSIONS for rg in (True, False)}


@pytest.mark.parametrize("convert", list(_CONVERSIONS))
@pytest.mark.parametrize("requires_grad", [True, False])
def test_scalar_conversion_warns_where_torch_does(convert, requires_grad, torch_conversion_warnings):
    import warnings
    t = ember.ones((), requires_grad=requires_grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _CONVERSIONS[convert](t)
    assert [str(w.message) for w in caught] == torch_conversion_warnings[(convert, requires_grad)]
