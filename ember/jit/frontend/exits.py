"""The exit transform (TorchScript's ExitTransforms, done on the Python AST before emission):
``return``, ``break`` and ``continue`` become assignments to flag variables, and the statements a
jump would skip are guarded by ``if not flag:``. The IR then only has If and Loop nodes.

    if c:                  $ret = False; $retval = <uninitialized>
        return x     ->    if c: $retval = x; $ret = True
    y = x + 1              else: y = x + 1; $retval = y; $ret = True
    return y               (the function returns $retval)

When one branch of an ``if`` always leaves (return/raise/break/continue on every path) the rest
of the block moves into the other branch instead of being guarded, so common early-return code
gives one clean prim::If, as TorchScript's does. Loops get ``_exit_flags``: the flags that end
the loop (its break flag, $ret); the frontend folds them into the loop's continue condition.
Synthetic names start with ``$`` so they never clash with user variables.
"""
from __future__ import annotations

import ast
from collections import namedtuple

RET, RETVAL, UNINIT = "$ret", "$retval", "$uninit"


def always_exits(stmts: list) -> bool:
    """True if every path through `stmts` ends in return/raise/break/continue."""
    for s in stmts:
        if isinstance(s, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            return True
        if isinstance(s, ast.If) and s.orelse and always_exits(s.body) and always_exits(s.orelse):
            return True
        if isinstance(s, ast.With) and always_exits(s.body):
            return True
    return False


def _exit_kinds(stmts: list, nested: bool = False) -> set:
    """Which of "return", "break", "continue" `stmts` may take (`nested`: inside a loop of theirs,
    whose own break/continue these are not)."""
    kinds = set()
    for s in stmts:
        if isinstance(s, ast.Return):
            kinds.add("return")
        elif isinstance(s, (ast.Break, ast.Continue)) and not nested:
            kinds.add("break" if isinstance(s, ast.Break) else "continue")
        elif isinstance(s, (ast.For, ast.While)):
            kinds |= _exit_kinds(s.body + s.orelse, True)
        elif isinstance(s, (ast.If, ast.With, ast.Try)):
            kinds |= _exit_kinds(s.body + (s.orelse if isinstance(s, ast.If) else []), nested)
    return kinds


def _name(id_: str, src, store: bool = False) -> ast.Name:
    return ast.copy_location(ast.Name(id=id_, ctx=ast.Store() if store else ast.Load()), src)


def _assign(id_: str, value: ast.expr, src) -> ast.Assign:
    return ast.copy_location(ast.Assign(targets=[_name(id_, src, True)], value=value), src)


def _const(value, src) -> ast.Constant:
    return ast.copy_location(ast.Constant(value=value), src)


def none_set(flags: list, src, extra=None):
    """``not f1 and not f2 ... [and extra]`` at `src` (None when there is nothing to test)."""
    tests = [ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=_name(f, src)), src) for f in flags]
    if extra is not None:
        tests.append(extra)
    if len(tests) <= 1:
        return tests[0] if tests else None
    return ast.copy_location(ast.BoolOp(op=ast.And(), values=tests), src)


def guard(flags: list, body: list, src) -> ast.If:
    """``if <none of flags set>: body``."""
    return ast.copy_location(ast.If(test=none_set(flags, src), body=body, orelse=[]), src)


_Loop = namedtuple("_Loop", "brk cont")   # the flag names a loop's break / continue set (or None)


class ExitLowering:
    """Rewrites a function body (list of statements); see the module docstring."""

    def __init__(self):
        self.count = 0

    def function(self, body: list, fn_node) -> list:
        """The lowered body: flags initialised, every return an assignment, ends in ``return $retval``."""
        if not always_exits(body):
            body = body + [ast.copy_location(ast.Return(value=None), body[-1] if body else fn_node)]
        out = [_assign(RET, _const(False, fn_node), fn_node),
               _assign(RETVAL, _name(UNINIT, fn_node), fn_node)]
        out += self.block(body, None)
        return out + [ast.copy_location(ast.Return(value=_name(RETVAL, fn_node)), fn_node)]

    def block(self, stmts: list, loop) -> list:
        out: list = []
        stmts = list(stmts)
        i = 0
        while i < len(stmts):
            s, rest = stmts[i], stmts[i + 1:]
            if isinstance(s, ast.Return):
                a = _assign(RETVAL, s.value if s.value is not None else _const(None, s), s)
                a._return_of = s
                return out + [a, _assign(RET, _const(True, s), s)]
            if isinstance(s, (ast.Break, ast.Continue)):
                return out + [_assign(loop.brk if isinstance(s, ast.Break) else loop.cont, _const(True, s), s)]
            if isinstance(s, ast.Raise):
                return out + [s]
            if isinstance(s, ast.If) and rest and always_exits(s.body) != always_exits(s.orelse):
                # move the rest of the block into the branch that falls through
                then_exits = always_exits(s.body)
                stmts[i] = ast.copy_location(ast.If(test=s.test, body=s.body + ([] if then_exits else rest),
                                                    orelse=s.orelse + (rest if then_exits else [])), s)
                del stmts[i + 1:]
                continue
            out += self._lowered(s, loop)
            if always_exits([s]) or self._guard_rest(out, s, rest, loop):
                return out
            i += 1
        return out

    def _lowered(self, s, loop) -> list:
        """The statements that replace `s`: its nested bodies lowered; a loop with exits gets its flags."""
        if isinstance(s, ast.If):
            return [ast.copy_location(ast.If(test=s.test, body=self.block(s.body, loop),
                                             orelse=self.block(s.orelse, loop)), s)]
        if isinstance(s, ast.With):   # grad-mode blocks: the body is lowered in place
            return [ast.copy_location(ast.With(items=s.items, body=self.block(s.body, loop), type_comment=None), s)]
        if not isinstance(s, (ast.For, ast.While)):
            return [s]
        kinds = _exit_kinds(s.body)
        if not kinds:
            s.body = self.block(s.body, _Loop(None, None))   # lower loops nested inside
            return [s]
        self.count += 1
        ctx = _Loop(f"$brk{self.count}" if "break" in kinds else None,
                    f"$cont{self.count}" if "continue" in kinds else None)
        body = ([_assign(ctx.cont, _const(False, s), s)] if ctx.cont else []) + self.block(s.body, ctx)
        new = ast.For(target=s.target, iter=s.iter, body=body, orelse=s.orelse, type_comment=None) \
            if isinstance(s, ast.For) else ast.While(test=s.test, body=body, orelse=s.orelse)
        ast.copy_location(new, s)
        new._exit_flags = [f for f in (ctx.brk, RET if "return" in kinds else None) if f]
        return ([_assign(ctx.brk, _const(False, s), s)] if ctx.brk else []) + [new]

    def _guard_rest(self, out: list, s, rest: list, loop) -> bool:
        """Append the statements after `s`, guarded by the exit flags `s` may set; True when it
        did (they are then lowered, the block is done)."""
        flags = self._flags(_exit_kinds([s]), loop)
        if flags and rest:
            out.append(guard(flags, self.block(rest, loop), rest[0]))
            return True
        return False

    @staticmethod
    def _flags(kinds: set, loop) -> list:
        flags = []
        if "return" in kinds:
            flags.append(RET)
        if loop is not None and "break" in kinds and loop.brk:
            flags.append(loop.brk)
        if loop is not None and "continue" in kinds and loop.cont:
            flags.append(loop.cont)
        return flags
