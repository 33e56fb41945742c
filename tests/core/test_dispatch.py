"""The dispatcher: key sets, TLS include/exclude, kernel tables, fallthrough, boxed fallbacks,
redispatch, user-defined operators, Python modes."""
import threading

import numpy as np
import pytest

import ember
from ember._core import dispatch as d
from ember._core.dispatch import DispatchKey as K
from ember.utils._python_dispatch import TorchDispatchMode


def t(*values, dtype=np.float32):
    return ember.from_numpy(np.array(values, dtype=dtype))


def test_key_order_and_sets():
    assert K.Python > K.Profiler > K.Tracer > K.Autograd > K.ADInplaceOrView > K.Meta > K.CPU
    ks = d.key_set(K.CPU, K.Autograd)
    assert d.keys_of(ks) == [K.Autograd, K.CPU]
    assert d.below(K.Autograd) & (1 << K.Autograd) == 0 and d.below(K.Autograd) & (1 << K.CPU)


def test_tensor_key_set_tracks_backend_and_requires_grad():
    x = t(1.0, 2.0)
    assert x._keys == d.CPU_BIT
    x.requires_grad_(True)
    assert d.keys_of(x._keys) == [K.Autograd, K.CPU]
    assert x.to("meta")._keys & d.META_BIT


def test_include_exclude_guards_are_scoped_and_thread_local():
    seen = {}
    with d._IncludeDispatchKeyGuard(K.Tracer):
        assert d.tls.include == 1 << K.Tracer

        def other_thread():
            seen["include"] = d.tls.include
        th = threading.Thread(target=other_thread)
        th.start()
        th.join()
        with d._ExcludeDispatchKeyGuard(K.Tracer):
            assert d.tls.exclude == 1 << K.Tracer
        assert d.tls.exclude == 0
    assert d.tls.include == 0
    assert seen["include"] == 0


@pytest.fixture
def impl_lib():
    lib = ember.library.Library("aten", "IMPL")
    yield lib
    lib._destroy()


def test_functionality_kernel_runs_only_when_its_key_is_in_the_set(impl_lib):
    calls = []

    def tracer_add(op, keys, a, b, alpha):
        calls.append((op.name, d.keys_of(keys)))
        return op.redispatch(keys, a, b, alpha)
    impl_lib.impl("add.Tensor", tracer_add, "Tracer")
    x = t(1.0, 2.0)
    assert (x + x).tolist() == [2.0, 4.0] and calls == []       # not included: fast path
    with d._IncludeDispatchKeyGuard(K.Tracer):
        assert ember.add(x, x, alpha=2).tolist() == [3.0, 6.0]
        assert calls == [("aten::add.Tensor", [K.CPU])]        # redispatch sees only lower keys
        with d._ExcludeDispatchKeyGuard(K.Tracer):
            ember.add(x, x)
        assert len(calls) == 1
    assert (x * x).tolist() == [1.0, 4.0]


def test_keys_without_kernels_fall_through(impl_lib):
    x = t(3.0)
    with d._IncludeDispatchKeyGuard([K.Tracer, K.Profiler, K.Functionalize]):
        assert ember.mul(x, x).tolist() == [9.0]


def test_boxed_fallback_sees_every_op_and_nested_calls_in_order():
    seen = []

    def profiler_fallback(op, keys, *args):
        seen.append(op.name)
        with d._ExcludeDispatchKeyGuard(K.Profiler):
            return op.redispatch(keys, *args)
    previous = d._global_fallbacks.get(K.Profiler)  # ember.profiler's own, when imported
    d.register_fallback(K.Profiler, profiler_fallback)
    try:
        x = t(1.0, 4.0)
        with d._IncludeDispatchKeyGuard(K.Profiler):
            ember.sqrt(x + 1)
            x.neg_()
        assert seen == ["aten::add.Tensor", "aten::sqrt", "aten::neg_"]
    finally:
        d.register_fallback(K.Profiler, previous)
    with d._IncludeDispatchKeyGuard(K.Profiler):
        ember.sqrt(x)
    assert len(seen) == 3


def test_kernel_priority_python_over_profiler_over_tracer(impl_lib):
    order = []

    def make(name):
        def kernel(op, keys, *args):
            order.append(name)
            return op.redispatch(keys, *args)
        return kernel
    for key in ("Tracer", "Profiler", "Python"):
        impl_lib.impl("neg", make(key), key)
    with d._IncludeDispatchKeyGuard([K.Tracer, K.Profiler, K.Python]):
        assert ember.neg(t(1.0)).tolist() == [-1.0]
    assert order == ["Python", "Profiler", "Tracer"]


def test_meta_tensors_flow_through_ops():
    x = t(1.0, 2.0, 3.0).to("meta")
    y = ember.exp(x + 1) * 2
    assert y.is_meta and y.shape == (3,) and y.dtype is ember.float32
    i = ember.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3)).to("meta")
    assert (i + 2.5).dtype is ember.float32 and (i + 2.5).shape == (2, 3)
    with pytest.raises(RuntimeError, match="same device"):
        ember.add(t(1.0), x)


def test_missing_kernel_is_not_implemented_naming_op_and_backend():
    lib = ember.library.Library("test_missing", "DEF")
    try:
        lib.define("only_cpu(Tensor x) -> Tensor")
        lib.impl("only_cpu", lambda x: x + 1, "CPU")
        with pytest.raises(NotImplementedError, match="only_cpu.*Meta"):
            ember.ops.test_missing.only_cpu(t(1.0).to("meta"))
    finally:
        lib._destroy()


def test_library_defines_ops_that_work_like_builtins():
    lib = ember.library.Library("mylib", "DEF")
    try:
        lib.define("scale(Tensor x, float factor=2.0) -> Tensor")
        lib.impl("scale", lambda x, factor: x * factor, "CPU")
        lib.impl("scale", lambda x, factor: ember.ops.aten.mul.Tensor(x, factor), "Meta")
        x = t(1.0, 2.0)
        assert ember.ops.mylib.scale(x).tolist() == [2.0, 4.0]
        assert ember.ops.mylib.scale.default(x, factor=3).tolist() == [3.0, 6.0]
        assert ember.ops.mylib.scale(x.to("meta")).is_meta
        with pytest.raises(TypeError, match="scale.*factor"):
            ember.ops.mylib.scale(x, "big")
        with pytest.raises(RuntimeError, match="already has a kernel"):
            lib.impl("scale", lambda x, factor: x, "CPU")
        seen = []

        class Log(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(func.name)
                return func(*args, **(kwargs or {}))
        with Log():
            ember.ops.mylib.scale(x)
        assert seen == ["mylib::scale"]  # the kernel runs with the mode popped, as in PyTorch
    finally:
        lib._destroy()
    assert not hasattr(ember.ops.mylib, "scale")


def test_custom_op_with_fake_kernel():
    @ember.library.custom_op("mylib2::twice_plus", mutates_args=())
    def twice_plus(x: ember.Tensor, n: int = 1) -> ember.Tensor:
        return x * 2 + n

    @twice_plus.register_fake
    def _(x, n=1):
        return ember.ops.aten.mul.Tensor(x, 2)
    x = t(1.0, 2.0)
    assert twice_plus(x).tolist() == [3.0, 5.0]
    assert twice_plus(x, 3).tolist() == [5.0, 7.0]
    assert twice_plus(x.to("meta")).is_meta
    assert str(ember.ops.mylib2.twice_plus.default.schema) == "twice_plus(Tensor x, int n=1) -> Tensor"


def test_python_mode_sees_args_and_kwargs_and_nests():
    log = []

    class Outer(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(("outer", func.name))
            return func(*args, **(kwargs or {}))

    class Inner(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(("inner", func.name, kwargs))
            return func(*args, **(kwargs or {}))
    x = t(1.0)
    with Outer(), Inner():
        y = ember.add(x, x, alpha=3)
    assert y.tolist() == [4.0]
    assert log == [("inner", "aten::add.Tensor", {"alpha": 3}), ("outer", "aten::add.Tensor")]
    assert not d.tls.include


def test_in_place_ops_bump_version_and_out_variant():
    x = t(1.0, 2.0)
    v = x._version
    x.add_(1)
    x.mul_(2)
    assert x._version == v + 2 and x.tolist() == [4.0, 6.0]
    out = t(0.0, 0.0)
    r = ember.add(x, x, out=out)
    assert r is out and out.tolist() == [8.0, 12.0] and out._version == 1
