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


def _exit_kinds(stmts: list, in_nested_loop: bool = False) -> set:
    kinds = set()
    for s in stmts:
        for node in _walk_stmt(s, in_nested_loop):
            kinds.add(node)
    return kinds


def _walk_stmt(s, nested: bool):
    if isinstance(s, ast.Return):
        yield "return"
    elif isinstance(s, ast.Break) and not nested:
        yield "break"
    elif isinstance(s, ast.Continue) and not nested:
        yield "continue"
    elif isinstance(s, (ast.For, ast.While)):
        for b in s.body + s.orelse:
            yield from _walk_stmt(b, True)
    elif isinstance(s, ast.If):
        for b in s.body + s.orelse:
            yield from _walk_stmt(b, nested)
    elif isinstance(s, (ast.With, ast.Try)):
        for b in getattr(s, "body", []):
            yield from _walk_stmt(b, nested)


def _name(id_: str, src, store: bool = False) -> ast.Name:
    return ast.copy_location(ast.Name(id=id_, ctx=ast.Store() if store else ast.Load()), src)


def _assign(id_: str, value: ast.expr, src) -> ast.Assign:
    node = ast.Assign(targets=[_name(id_, src, True)], value=value)
    ast.copy_location(node, src)
    node.end_lineno, node.end_col_offset = getattr(src, "end_lineno", None), getattr(src, "end_col_offset", None)
    node._synthetic = True
    return node


def _const(value, src) -> ast.Constant:
    return ast.copy_location(ast.Constant(value=value), src)


def _guard(flags: list, body: list, src) -> ast.If:
    tests = [_name(f, src) for f in flags]
    test = tests[0] if len(tests) == 1 else ast.copy_location(ast.BoolOp(op=ast.Or(), values=tests), src)
    node = ast.If(test=ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=test), src), body=body, orelse=[])
    ast.copy_location(node, src)
    node._synthetic = True
    return node


class _Loop:
    def __init__(self, brk, cont):
        self.brk, self.cont = brk, cont


class ExitLowering:
    """Rewrites a function body (list of statements); see the module docstring."""

    def __init__(self):
        self.count = 0

    def function(self, body: list, fn_node) -> list:
        """The lowered body: flags initialised, every return an assignment, ends in ``return $retval``."""
        if not always_exits(body):
            end = ast.Return(value=None)
            last = body[-1] if body else fn_node
            ast.copy_location(end, last)
            end._implicit = True
            body = body + [end]
        out = [_assign(RET, _const(False, fn_node), fn_node),
               _assign(RETVAL, _name(UNINIT, fn_node), fn_node)]
        out += self.block(body, None)
        final = ast.Return(value=_name(RETVAL, fn_node))
        ast.copy_location(final, fn_node)
        return out + [final]

    def block(self, stmts: list, loop) -> list:
        out: list = []
        stmts = list(stmts)
        i = 0
        while i < len(stmts):
            s = stmts[i]
            rest = stmts[i + 1:]
            if isinstance(s, ast.Return):
                value = s.value if s.value is not None else _const(None, s)
                a = _assign(RETVAL, value, s)
                a._return_of = s
                out += [a, _assign(RET, _const(True, s), s)]
                return out
            if isinstance(s, ast.Break):
                out.append(_assign(loop.brk, _const(True, s), s))
                return out
            if isinstance(s, ast.Continue):
                out.append(_assign(loop.cont, _const(True, s), s))
                return out
            if isinstance(s, ast.Raise):
                out.append(s)
                return out
            if isinstance(s, ast.If):
                then_exits, else_exits = always_exits(s.body), always_exits(s.orelse)
                if rest and then_exits != else_exits:
                    # move the rest of the block into the branch that falls through
                    new = ast.If(test=s.test, body=s.body + ([] if then_exits else rest),
                                 orelse=s.orelse + (rest if then_exits else []))
                    ast.copy_location(new, s)
                    new.end_lineno, new.end_col_offset = s.end_lineno, s.end_col_offset
                    new._synthetic = getattr(s, "_synthetic", False)
                    stmts[i] = new
                    del stmts[i + 1:]
                    continue
                new = ast.If(test=s.test, body=self.block(s.body, loop), orelse=self.block(s.orelse, loop))
                ast.copy_location(new, s)
                new.end_lineno, new.end_col_offset = s.end_lineno, s.end_col_offset
                new._synthetic = getattr(s, "_synthetic", False)
                out.append(new)
                if then_exits and else_exits:
                    return out
                if self._guard_rest(out, s, rest, loop):
                    return out
                i += 1
                continue
            if isinstance(s, ast.With):   # grad-mode blocks: the body is lowered in place
                new = ast.With(items=s.items, body=self.block(s.body, loop), type_comment=None)
                ast.copy_location(new, s)
                new.end_lineno, new.end_col_offset = s.end_lineno, s.end_col_offset
                out.append(new)
                if always_exits(s.body):
                    return out
                if self._guard_rest(out, s, rest, loop):
                    return out
                i += 1
                continue
            if isinstance(s, (ast.For, ast.While)):
                kinds = _exit_kinds(s.body)
                if kinds:
                    self.count += 1
                    ctx = _Loop(f"$brk{self.count}" if "break" in kinds else None,
                                f"$cont{self.count}" if "continue" in kinds else None)
                    body = ([_assign(ctx.cont, _const(False, s), s)] if ctx.cont else []) + self.block(s.body, ctx)
                    new = ast.For(target=s.target, iter=s.iter, body=body, orelse=s.orelse, type_comment=None) \
                        if isinstance(s, ast.For) else ast.While(test=s.test, body=body, orelse=s.orelse)
                    ast.copy_location(new, s)
                    new.end_lineno, new.end_col_offset = s.end_lineno, s.end_col_offset
                    new._exit_flags = [f for f in (ctx.brk, RET if "return" in kinds else None) if f]
                    if ctx.brk:
                        out.append(_assign(ctx.brk, _const(False, s), s))
                    out.append(new)
                    if "return" in kinds and rest:
                        out.append(_guard([RET], self.block(rest, loop), rest[0]))
                        return out
                    i += 1
                    continue
                s.body = self.block(s.body, _Loop(None, None))   # lower loops nested inside
            out.append(s)
            i += 1
        return out

    def _guard_rest(self, out: list, s, rest: list, loop) -> bool:
        """Append the statements after `s`, guarded by the exit flags `s` may set; True when it
        did (they are then lowered, the block is done)."""
        flags = self._flags(_exit_kinds([s]), loop)
        if flags and rest:
            out.append(_guard(flags, self.block(rest, loop), rest[0]))
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
