"""Compile errors of ember.jit.script against torch.jit.script on the same snippets: the same
exception kind (RuntimeError / NotSupportedError), the same key phrase, and the caret line under
the same source text (``~~~~ <--- HERE``)."""
from __future__ import annotations

from typing import Optional

import pytest
import torch

import ember
from ember.jit.frontend import FrontendError, NotSupportedError


def highlighted(msg: str, which: int = -1) -> str:
    """The source text under the carets of the `which`-th ``<--- HERE`` marker."""
    lines = msg.splitlines()
    marks = [i for i, line in enumerate(lines) if "<--- HERE" in line]
    i = marks[which]
    caret = lines[i].replace("<--- HERE", "").rstrip()
    code = lines[i - 1]
    start = caret.index("~")
    return code[start:len(caret)]


def compile_error(fn):
    with pytest.raises(Exception) as info:
        if getattr(fn, "__module__", "").startswith("torch") or "torch" in fn.__code__.co_names:
            torch.jit.script(fn)
        else:
            ember.jit.script(fn)
    return info.value


def both(ember_fn, torch_fn, phrase: str, torch_phrase: str | None = None, same_span: bool = True,
         same_start: bool = False, which: int = -1):
    """Compile both; check ours is a FrontendError (RuntimeError) quoting the source with carets."""
    with pytest.raises(RuntimeError) as ours:
        ember.jit.script(ember_fn)
    with pytest.raises(Exception) as theirs:
        torch.jit.script(torch_fn)
    a, b = str(ours.value), str(theirs.value).replace("torch.", "ember.")
    assert isinstance(ours.value, FrontendError)
    assert phrase in a, a
    assert (torch_phrase or phrase) in b, b
    assert "<--- HERE" in a and 'File "' in a and ", line " in a
    if same_span:
        assert highlighted(a, which) == highlighted(b, which), (a, b)
    if same_start:
        assert highlighted(a, which)[:1] == highlighted(b, which)[:1]
    return ours.value, theirs.value


# --- snippets (ember and torch versions with the same layout) --------------------------------
def e_open(x):
    return open(x)


def t_open(x):
    return open(x)


def test_unsupported_builtin():
    ours, theirs = both(e_open, t_open, "Python builtin <built-in function open> is currently not supported in "
                                        "Torchscript")
    assert type(theirs) is RuntimeError and not isinstance(ours, NotSupportedError)


def e_try(x):
    try:
        y = x
    except Exception:
        y = x
    return y


t_try = e_try


def test_try_not_supported():
    ours, theirs = both(e_try, t_try, "try blocks aren't supported")
    assert isinstance(ours, NotSupportedError) and isinstance(theirs, torch.jit.frontend.NotSupportedError)


def e_lambda(x):
    g = lambda y: y  # noqa: E731
    return x


t_lambda = e_lambda


def test_lambda_not_supported():
    ours, _ = both(e_lambda, t_lambda, "Lambda aren't supported", same_span=False, same_start=True)
    assert isinstance(ours, NotSupportedError)


def e_global(x):
    global ZZ  # noqa: F824
    return x


t_global = e_global


def test_global_not_supported():
    both(e_global, t_global, "global variables aren't supported")


def e_nested(x):
    def g(y):
        return y
    return x


t_nested = e_nested


def test_nested_def_not_supported():
    both(e_nested, t_nested, "function definitions aren't supported")


def e_yield(x):
    yield x


t_yield = e_yield


def test_yield_not_supported():
    both(e_yield, t_yield, "Yield aren't supported", same_span=False, same_start=True)


def e_set(x):
    s = {1, 2}  # noqa: F841
    return x


t_set = e_set


def test_set_literal_not_supported():
    both(e_set, t_set, "Set aren't supported", same_span=False, same_start=True)


def e_with(x):
    with x:
        pass
    return x


t_with = e_with


def test_with_statement_rejected():
    ours, theirs = both(e_with, t_with, "with statements aren't supported", torch_phrase="With",
                        same_span=False)
    assert isinstance(ours, NotSupportedError)


def e_unknown(x):
    return x + undefined_name  # noqa: F821


t_unknown = e_unknown


def test_undefined_name():
    both(e_unknown, t_unknown, "undefined value undefined_name")


def e_strtensor(x):
    return x + "a"


t_strtensor = e_strtensor


def test_str_plus_tensor_is_a_compile_error():
    both(e_strtensor, t_strtensor, "Arguments for call are not valid", same_span=False, same_start=True)


def helper2(a, b):
    return a + b


def e_argcount(x):
    return helper2(x)


t_argcount = e_argcount


def test_missing_argument_to_scripted_function():
    ours, _ = both(e_argcount, t_argcount, "Argument b not provided.")
    assert "helper2(Tensor a, Tensor b) -> Tensor" in str(ours)


def e_kw(x):
    return helper2(x, x, c=x)


t_kw = e_kw


def test_unknown_keyword_argument():
    both(e_kw, t_kw, "Keyword argument c unknown.")


def e_kw_and_missing(x):
    return helper2(x, c=x)


def e_twice_and_missing(x):
    return helper2(x, a=x)


@pytest.mark.parametrize("fn", [e_kw_and_missing, e_twice_and_missing])
def test_missing_argument_is_reported_before_a_stray_keyword(fn):
    # torch's order at compile time, the same as at run time: too many, missing, then the keywords
    both(fn, fn, "Argument b not provided.")


def _two_args(x, y: int):
    return x


@pytest.mark.parametrize("args, kwargs", [((1.0,), {"z": 1}), ((1.0,), {"x": 1}), ((1.0, 1, 2), {})])
def test_run_time_binding_errors_match_torch(args, kwargs):
    def outcome(mod, fn):
        args_ = (mod.ones(1), *args[1:])
        with pytest.raises(RuntimeError) as info:
            mod.jit.script(fn)(*args_, **kwargs)
        return str(info.value).split(" Declaration")[0]
    assert outcome(ember, _two_args) == outcome(torch, _two_args)


def e_too_many(x):
    return helper2(x, x, x)


t_too_many = e_too_many


def test_too_many_arguments():
    both(e_too_many, t_too_many, "Expected at most 2 arguments but found 3 positional arguments.")


def e_noncall(x):
    y = 1
    return y(x)


t_noncall = e_noncall


def test_calling_a_non_callable():
    both(e_noncall, t_noncall, "cannot call a value of type 'int'")


def e_opt(x: Optional[ember.Tensor]):
    return ember.relu(x)


def t_opt(x: Optional[torch.Tensor]):
    return torch.relu(x)


def test_optional_needs_refinement():
    both(e_opt, t_opt, "Expected a value of type 'Tensor' for argument", same_span=True)
    with pytest.raises(RuntimeError, match=r"found type 'Optional\[Tensor\]'"):
        ember.jit.script(e_opt)


def e_branch(x, c: bool):
    if c:
        y = 1
    else:
        y = 1.0
    return y


t_branch = e_branch


def test_branches_assign_different_types():
    ours, theirs = both(e_branch, t_branch, "Type mismatch: y is set to type int in the true branch and type float "
                                       "in the false branch")
    assert "and was used here:" in str(ours)
    assert highlighted(str(ours), 0) == highlighted(str(theirs), 0) == "y = 1.0"


def e_notdef(x, c: bool):
    if c:
        y = 1
    return y


t_notdef = e_notdef


def test_variable_defined_in_one_branch():
    ours, theirs = both(e_notdef, t_notdef, "y is not defined in the false branch")
    assert "and was used here:" in str(ours)
    assert highlighted(str(ours), 0) == highlighted(str(theirs), 0) == "y = 1"


def e_attr(x):
    return x.foo_bar(1)


t_attr = e_attr


def test_unknown_tensor_method():
    both(e_attr, t_attr, "object has no attribute or method 'foo_bar'.")


def e_badtype(x: int):
    return ember.relu(x)


def t_badtype(x: int):
    return torch.relu(x)


def test_int_where_tensor_is_required():
    both(e_badtype, t_badtype, "Expected a value of type 'Tensor' for argument")


def e_ret(x) -> int:
    return "a"


t_ret = e_ret


def test_return_annotation_mismatch():
    both(e_ret, t_ret, "Return value was annotated as having type int but is actually of type str",
         same_span=False)


def test_error_points_at_the_file_line():
    with pytest.raises(FrontendError) as info:
        ember.jit.script(e_unknown)
    line = e_unknown.__code__.co_firstlineno + 1
    assert f'{__file__}", line {line}' in str(info.value)


def test_runtime_argument_errors_match_torch():
    sf = ember.jit.script(helper2)
    ts = torch.jit.script(helper2)
    for call in (lambda f, T: f(1, 2), lambda f, T: f(T.ones(1)), lambda f, T: f(T.ones(1), T.ones(1), T.ones(1))):
        with pytest.raises(RuntimeError) as ours:
            call(sf, ember)
        with pytest.raises(RuntimeError) as theirs:
            call(ts, torch)
        key = str(theirs.value).split("Declaration")[0].split("\n")[0]
        key = key.replace("'Tensor (inferred)'", "'Tensor'")
        assert key.split(" Expected")[0].split(" is missing")[0].split(" expected")[0] in str(ours.value)
        assert "Declaration: helper2(Tensor a, Tensor b) -> Tensor" in str(ours.value)
