"""Python constructs the script language does not have, against torch.jit.script on the same source:
both raise NotSupportedError with the same "... aren't supported" phrase, and the carets sit under the
same text (a statement's keyword -- ``class``, ``import``, ``async def`` --, else its first character,
as torch puts them), for constructs test_errors.py does not already cover."""
from __future__ import annotations

import pytest
import torch

import ember
from ember.jit.frontend import NotSupportedError


def class_def(x):
    class A:
        pass
    return x


def import_stmt(x):
    import math  # noqa: F401
    return x


def from_import(x):
    from math import pi  # noqa: F401
    return x


def match_stmt(x):
    match x:
        case _:
            pass
    return x


def try_star(x):
    try:
        y = x
    except* ValueError:
        y = x
    return y


def nested_async_def(x):
    async def g():
        return 1
    return x


def set_comprehension(x):
    s = {i for i in range(3)}  # noqa: F841
    return x


def walrus(x):
    if (n := 3) > 2:  # noqa: F841
        return x
    return x


def _caret(message: str):
    """(the text under the carets, the column they start at) of the ``<--- HERE`` marker."""
    lines = message.splitlines()
    i = next(k for k, line in enumerate(lines) if "<--- HERE" in line)
    marks = lines[i].replace("<--- HERE", "").rstrip()
    start = marks.index("~")
    return lines[i - 1][start:len(marks)], start


def _both(fn):
    with pytest.raises(NotSupportedError) as ours:
        ember.jit.script(fn)
    with pytest.raises(torch.jit.frontend.NotSupportedError) as theirs:
        torch.jit.script(fn)
    return str(ours.value), str(theirs.value)


@pytest.mark.parametrize("fn, phrase", [
    (class_def, "class definitions aren't supported"),
    (import_stmt, "import statements aren't supported"),
    (from_import, "import statements aren't supported"),
    (match_stmt, "Match aren't supported"),
    (try_star, "TryStar aren't supported"),
    (nested_async_def, "async function definitions aren't supported"),
])
def test_unsupported_statement_same_phrase_and_carets_as_torch(fn, phrase):
    ours, theirs = _both(fn)
    assert phrase in ours and phrase in theirs, (ours, theirs)
    assert _caret(ours) == _caret(theirs), (ours, theirs)


@pytest.mark.parametrize("fn, phrase, torch_phrase", [
    (set_comprehension, "Set comprehensions aren't supported", "SetComp aren't supported"),
    (walrus, "assignment expressions aren't supported", "NamedExpr aren't supported"),
])
def test_unsupported_expression_carets_start_where_torch_does(fn, phrase, torch_phrase):
    # torch marks an expression's first character; ours underlines the whole expression from there
    ours, theirs = _both(fn)
    assert phrase in ours and torch_phrase in theirs, (ours, theirs)
    (our_text, our_start), (their_text, their_start) = _caret(ours), _caret(theirs)
    assert our_start == their_start and our_text.startswith(their_text), (ours, theirs)
