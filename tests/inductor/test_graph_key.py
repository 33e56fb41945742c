"""The graph cache's key (compile_fx.graph_key) must change with everything a stored plan depends on:
the aten graph, each input's dtype/shape/strides, and each config setting the lowering reads. A
key that missed one would hand a warm process a plan compiled for something else."""
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import config
from ember._inductor.compile_fx import graph_key


def key(fn, *inputs):
    return graph_key(make_fx(fn)(*inputs), list(inputs))


def f(x):
    return (x * 2).exp()


def test_same_program_same_layouts_same_key():
    assert key(f, ember.randn(3, 4)) == key(f, ember.randn(3, 4))


def test_key_changes_with_graph_and_layouts():
    x = ember.randn(3, 4)
    base = key(f, x)
    others = [key(f, x.double()), key(f, ember.randn(4, 3)), key(f, ember.randn(4, 3).t()),
              key(f, ember.randn(3, 4)[:, ::2]), key(lambda x: (x * 3).exp(), x), key(lambda x: (x * 2).log(), x)]
    assert base not in others and len(set(others)) == len(others)


@pytest.mark.parametrize("setting, value", [("threads", 2), ("cflags", ("-O1", "-fPIC", "-shared")),
                                            ("use_libmvec", False), ("fallback_random", False)])
def test_key_changes_with_config(monkeypatch, setting, value):
    x = ember.randn(3, 4)
    base = key(f, x)
    monkeypatch.setattr(config, setting, value)
    assert key(f, x) != base
