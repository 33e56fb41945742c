"""The Autograd kernel of one op as straight-line Python, generated from its recording plan.

`kernel.make_kernel` plans what a call records (which arguments to save, which edges to make)
and follows that plan in loops over small tuples; for an op that records a node at every
training step, those loops (and the per-output helper calls) were most of the ~4 us a recorded
op costs. For the common shape of op -- tensors that are not ``Tensor[]``, one Tensor result, not
in-place, no out= -- this module writes the plan out as one function with no loops, as the
bindings are written (ember/ops/codegen.py): the same steps, in the same order, with the same
objects made.

It is generated on the op's first call with all its arguments and swapped into the op's kernel
table in place of the planning kernel (at import this would cost ~0.1 ms for each of hundreds
of ops, most never called). Any call with fewer arguments (a caller past the binding) goes to the
planning kernel, which handles every case.
"""
from __future__ import annotations

from .._core.dispatch import AUTOGRAD_BIT, CPU_BIT, CUDA_BIT, DispatchKey, tls
from .._core.tensor import Tensor
from .graph import AutogradMeta, SavedTensor, gradient_edge


def generate(op, plan, planning_kernel):
    """The generated kernel of `op`; `plan` is make_kernel's (see its names), `planning_kernel`
    what a call with another number of arguments runs."""
    n = plan["n_args"]
    a = [f"a{i}" for i in range(n)]
    tensor_positions = [i for i, _ in plan["tensor_args"]]
    is_tensor = {i: f"isinstance(a{i}, Tensor)" for i in tensor_positions}
    lines = [f"def kernel(op_, keys, *args):",
             f"    if len(args) != {n}:",
             f"        return planning_kernel(op_, keys, *args)",
             f"    {', '.join(a)}{',' if n == 1 else ''} = args",
             f"    excluded = tls.exclude"]
    needs = " or ".join(f"({is_tensor[i]} and a{i}._keys & AB)" for i in tensor_positions) or "False"
    lines += [f"    if not ({needs}):",
              f"        tls.exclude = excluded | AB",
              f"        try:",
              f"            if keys == CPU_BIT and table[0] is not None:",
              f"                return table[0](*args)",
              f"            if keys == CUDA_BIT and table[CUDA_KEY] is not None:",
              f"                return table[CUDA_KEY](*args)",
              f"            return redispatch(keys, *args)",
              f"        finally:",
              f"            tls.exclude = excluded"]
    values = ", ".join(f"{name!r}: a{i}" for i, name in plan["values"])
    lines += [f"    kw = {{{values}}}", "    saved = {}"]
    for i, name, _ in plan["saves"]:
        lines += [f"    if {is_tensor[i]}:",
                  f"        saved[{name!r}] = SavedTensor(a{i})",
                  f"    else:",
                  f"        kw[{name!r}] = a{i}"]
    for i, param, _ in plan["shapes"]:
        lines += [f"    if {is_tensor[i]}:",
                  f"        kw[{param!r}] = tuple(a{i}.shape)"]
    for i in tensor_positions:
        lines += [f"    if {is_tensor[i]} and a{i}._keys & AB:",
                  f"        m = a{i}._autograd",
                  f"        e{i} = (m.grad_fn, m.output_nr) if m is not None and m.grad_fn is not None "
                  f"else gradient_edge(a{i})",
                  f"        d{i} = (a{i}._data.shape, a{i}.dtype)",
                  f"    else:",
                  f"        e{i} = NO_EDGE",
                  f"        d{i} = None"]
    lines += ["    tls.exclude = excluded | AB",
              "    try:",
              "        if keys == CPU_BIT and table[0] is not None:",
              "            out = table[0](*args)",
              "        elif keys == CUDA_BIT and table[CUDA_KEY] is not None:",
              "            out = table[CUDA_KEY](*args)",
              "        else:",
              "            out = redispatch(keys, *args)",
              "    finally:",
              "        tls.exclude = excluded",
              # what _out_meta gives for the one output; a kernel that returned a sequence (never, for a
              # single Tensor return) would not come here: `supported`
              "    if isinstance(out, Tensor):",
              "        dtype = out.dtype",
              "        differentiable = dtype.category >= 2",
              "        out_meta = ((out._data.shape, dtype, out.device),) if differentiable else (None,)",
              "    else:",
              "        differentiable = False",
              "        out_meta = (None,)",
              "    node_cls = node_type"]
    if plan["name_by_args"] is not None:
        lines += ["    special = name_by_args(args)",
                  "    if special is not None:",
                  "        node_cls = special_type(special)"]
    edges = "".join(f"e{i}, " for i in tensor_positions)
    dtypes = "".join(f"d{i}, " for i in tensor_positions)
    lines.append(f"    node = node_cls(kw, saved, ({dtypes}), out_meta, ({edges}))")
    for i, param in plan["devices"]:
        lines.append(f"    kw[{param!r}] = (a{i}.device, a{i}.dtype)")
    if plan["wants_result"]:
        lines += ["    r = SavedTensor(out, node, is_output=True, expected_bump=0, output_nr=0) "
                  "if isinstance(out, Tensor) else None",
                  "    saved['result'] = r",
                  "    saved['results'] = [r]"]
    lines += ["    if differentiable:",
              "        out._keys |= AB",
              "        m = out._autograd",
              "        if m is None:",
              "            m = out._autograd = AutogradMeta(node, 0)",
              "        else:",
              "            m.grad_fn, m.output_nr = node, 0"]
    if plan["is_view"]:
        lines += ["        if isinstance(a0, Tensor):",
                  "            m.view_base = a0"]
    lines.append("    return out")
    namespace = {"Tensor": Tensor, "tls": tls, "AB": AUTOGRAD_BIT, "CPU_BIT": CPU_BIT, "CUDA_BIT": CUDA_BIT,
                 "CUDA_KEY": int(DispatchKey.CUDA), "table": op.table, "redispatch": op.redispatch,
                 "SavedTensor": SavedTensor, "AutogradMeta": AutogradMeta, "gradient_edge": gradient_edge,
                 "NO_EDGE": (None, 0), "node_type": plan["node_type"], "name_by_args": plan["name_by_args"],
                 "special_type": plan["special_type"], "planning_kernel": planning_kernel}
    from ..ops.codegen import compile_function
    kernel = compile_function("\n".join(lines) + "\n", "kernel", f"<ember autograd kernel {op.name}>", namespace)
    kernel.__name__ = planning_kernel.__name__
    return kernel


# ---------------------------------------------------------------------------------------------
# FormulaNode.apply, per node class
# ---------------------------------------------------------------------------------------------
def generate_apply(cls, formula, n_returns, generic_apply, helpers):
    """A straight-line ``apply`` for the node class `cls` (no Tensor[] argument, `n_returns` results,
    none a Tensor[]); None where the formula takes keyword-only or variadic parameters. Where the
    generic `FormulaNode.apply` builds a keyword dict per call and loops over the results, this one
    reads each parameter where the recording kernel put it and calls the formula positionally: the
    same values, saved tensors unpacked in recording order (a version error names the same tensor).
    A parameter the node lacks sends the call to the generic apply, which raises its error."""
    import inspect
    params = inspect.signature(formula.fn).parameters
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params.values()):
        return None
    n, n_slots, wanted = n_returns, len(cls.slots), formula.param_set
    lines = ["def apply(self, grads):",
             "    out_meta, kw, saved = self.out_meta, self.kw, self.saved",
             f"    if len(out_meta) != {n} or len(grads) != {n}" + "".join(f" or grads[{k}] is None" for k in range(n))
             + ": grads = fix_grads(grads, out_meta)"]
    source = {"grad": "grads[0]", "grads": "tuple(grads[:len(out_meta)])", "needs_grad": "(" + "".join(
        f"self.next_functions[{k}][0] is not None, " for k in range(n_slots)) + ")"}
    # tensors, in recording order (the op's tensor arguments, then its results); a tensor argument
    # that was not a tensor was kept in kw
    for name in [t for t, _, _ in cls.slots if t in wanted] + [r for r in ("result", "results") if r in wanted]:
        var = source[name] = f"v_{name}"
        lines += [f"    s = saved.get({name!r}, MISSING)",
                  f"    {var} = kw.get({name!r}, MISSING) if s is MISSING else s.unpack(NAME) "
                  "if s.__class__ is SavedTensor else unpack_saved(s, NAME)",
                  f"    if {var} is MISSING: return generic_apply(self, grads)"]
    plain = [name for name in params if name not in source]     # values, <arg>_shape, <arg>_dtype_device
    for k, name in enumerate(plain):
        source[name] = f"p_{k}"
    if plain:
        lines += ["    try: " + "; ".join(f"p_{k} = kw[{name!r}]" for k, name in enumerate(plain)),
                  "    except KeyError: return generic_apply(self, grads)"]
    lines += [f"    out = fn({', '.join(source[p] for p in params)})",
              "    if not isinstance(out, (tuple, list)): out = (out,)",
              f"    if len(out) < {n_slots}: return results(self, out)",
              "    dtypes = self.dtypes"]
    for k in range(n_slots):    # _results' rule per input: summed to its shape, cast to its dtype
        lines += [f"    m = dtypes[{k}]",
                  f"    g{k} = None if m is None else out[{k}]",
                  f"    if g{k} is not None:",
                  f"        if g{k}._data.shape != m[0]: g{k} = sum_to(g{k}, m[0])",
                  f"        if FROM_NP[g{k}._data.dtype] is not m[1]: g{k} = g{k}.to(m[1])"]
    lines.append("    return [" + ", ".join(f"g{k}" for k in range(n_slots)) + "]")
    namespace = dict(helpers, fn=formula.fn, NAME=cls.__name__, MISSING=_MISSING, SavedTensor=SavedTensor,
                     generic_apply=generic_apply)
    from ..ops.codegen import compile_function
    return compile_function("\n".join(lines) + "\n", "apply", f"<ember autograd apply {cls.__name__}>", namespace)


_MISSING = object()
