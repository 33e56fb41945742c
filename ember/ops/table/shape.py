"""Shape and view operators (table rows), and the Python-level API that only parses arguments
(``Tensor.view(*shape | dtype)``, ``Tensor.squeeze(*dims)``, ``ember.broadcast_shapes``,
``ember.atleast_1d(*tensors)``).

View ops have one kernel for every backend: their geometry code works on NumPy arrays,
MetaArrays and CuPy arrays (see ember/ops/cpu/views.py). Rows with ``composite=`` are written
with other operators, like PyTorch's CompositeImplicitAutograd kernels.
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import Tensor
from ..registry import Op, aten
from ..cpu import views as v
from ..cpu import shape as cpu
from ..meta import shape as meta
from .. import rules


def _view_op(schema, kernel, **kw):
    """A view op: the same geometry kernel on CPU, CUDA and Meta."""
    return Op(schema, cpu=kernel, cuda=kernel, meta=kernel, **kw)


def _inplace_view(schema, view_kernel):
    """The in-place form of a view op (``t_``, ``squeeze_`` ...): self itself takes the view's
    shape and strides (same storage; other views of it keep theirs), as PyTorch's."""
    def kernel(self, *args):
        self._data = view_kernel(self, *args)._data
        return self
    kernel.__name__ = schema.split("(")[0]
    return _view_op(schema, kernel, variants="method")


def _cuda_view():
    """aten::view's CUDA kernel (ember/_cuda/views.py: contiguous tensors skip the geometry code),
    imported on its first call: ``import ember`` imports nothing of ember._cuda."""
    found = []

    def view(self, size):
        if not found:
            from ..._cuda.views import view as cuda_view
            found.append(cuda_view)
        return found[0](self, size)
    return view


OPS = [
    # -- views ---------------------------------------------------------------------------
    Op("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", cpu=v.view, cuda=_cuda_view(), meta=v.view,
       variants="method", varargs=True),
    _view_op("view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)", v.view_dtype, variants="method"),
    _view_op("alias(Tensor(a) self) -> Tensor(a)", v.alias),
    _view_op("squeeze(Tensor(a) self) -> Tensor(a)", v.squeeze),
    _view_op("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", v.squeeze_dims),
    _view_op("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", v.squeeze_dims),
    _view_op("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", v.unsqueeze),
    _view_op("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", v.transpose),
    _view_op("permute(Tensor(a) self, int[] dims) -> Tensor(a)", v.permute, varargs=True),
    _view_op("t(Tensor(a) self) -> Tensor(a)", v.t),
    _inplace_view("t_(Tensor(a!) self) -> Tensor(a!)", v.t),
    _inplace_view("transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)", v.transpose),
    _inplace_view("squeeze_(Tensor(a!) self) -> Tensor(a!)", v.squeeze),
    _inplace_view("squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)", v.squeeze_dims),
    _inplace_view("squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)", v.squeeze_dims),
    _inplace_view("unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)", v.unsqueeze),
    _inplace_view("as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
                  "-> Tensor(a!)", v.as_strided),

    _view_op("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)", v.expand,
             variants="method", varargs=True),
    _view_op("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)",
             v.as_strided),
    _view_op("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
             "-> Tensor(a)", v.slice, variants="function"),
    _view_op("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", v.select),
    _view_op("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]", v.unbind),
    _view_op("split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]", v.split),
    _view_op("split_with_sizes(Tensor(a) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]", v.split_with_sizes),
    _view_op("split.sizes(Tensor(a) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]", v.split_with_sizes),
    _view_op("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", v.diagonal),
    _view_op("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)", v.unfold, variants="method"),
    # -- views written with other ops ------------------------------------------------------
    Op("view_as(Tensor(a) self, Tensor other) -> Tensor(a)", composite=v.view_as, variants="method"),
    Op("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", composite=v.reshape, varargs=True),
    Op("reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)", composite=v.reshape_as, variants="method"),
    Op("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", composite=v.flatten),
    Op("unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)", composite=v.unflatten),
    Op("ravel(Tensor(a) self) -> Tensor(a)", composite=v.ravel),
    Op("swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)", composite=v.transpose_composite),
    Op("swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", composite=v.transpose_composite),
    Op("movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)", composite=v.movedim),
    Op("movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)", composite=v.movedim),
    Op("moveaxis.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)", composite=v.movedim),
    Op("moveaxis.int(Tensor(a) self, int source, int destination) -> Tensor(a)", composite=v.movedim),
    Op("adjoint(Tensor(a) self) -> Tensor(a)", composite=v.adjoint),
    Op("expand_as(Tensor(a) self, Tensor other) -> Tensor(a)", composite=v.expand_as, variants="method"),
    Op("broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)", composite=v.broadcast_to),
    Op("broadcast_tensors(Tensor[] tensors) -> Tensor[]", composite=v.broadcast_tensors, variants="function"),
    Op("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)", composite=v.narrow),
    Op("narrow.Tensor(Tensor(a) self, int dim, Tensor start, SymInt length) -> Tensor(a)", composite=v.narrow_tensor),
    Op("tensor_split.sections(Tensor(a) self, SymInt sections, int dim=0) -> Tensor(a)[]",
       composite=cpu.tensor_split_sections),
    Op("tensor_split.indices(Tensor(a) self, SymInt[] indices, int dim=0) -> Tensor(a)[]",
       composite=cpu.tensor_split_indices),
    Op("tensor_split.tensor_indices_or_sections(Tensor(a) self, Tensor tensor_indices_or_sections, int dim=0) "
       "-> Tensor(a)[]", composite=cpu.tensor_split_tensor),
    Op("chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]", composite=cpu.chunk),
    Op("hsplit.int(Tensor(a) self, int sections) -> Tensor(a)[]", composite=cpu.hsplit),
    Op("hsplit.array(Tensor(a) self, int[] indices) -> Tensor(a)[]", composite=cpu.hsplit_array),
    Op("vsplit.int(Tensor(a) self, int sections) -> Tensor(a)[]", composite=cpu.vsplit),
    Op("vsplit.array(Tensor(a) self, int[] indices) -> Tensor(a)[]", composite=cpu.vsplit_array),
    Op("dsplit.int(Tensor(a) self, int sections) -> Tensor(a)[]", composite=cpu.dsplit),
    Op("dsplit.array(Tensor(a) self, int[] indices) -> Tensor(a)[]", composite=cpu.dsplit_array),
    Op("atleast_1d(Tensor self) -> Tensor", composite=cpu.atleast(1), variants="function"),
    Op("atleast_2d(Tensor self) -> Tensor", composite=cpu.atleast(2), variants="function"),
    Op("atleast_3d(Tensor self) -> Tensor", composite=cpu.atleast(3), variants="function"),
    Op("atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]", composite=cpu.atleast_seq(1), variants="function"),
    Op("atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]", composite=cpu.atleast_seq(2), variants="function"),
    Op("atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]", composite=cpu.atleast_seq(3), variants="function"),
    # -- copies ----------------------------------------------------------------------------
    Op("cat(Tensor[] tensors, int dim=0) -> Tensor", cpu=cpu.cat, meta=meta.cat, variants="function", out=True),
    Op("stack(Tensor[] tensors, int dim=0) -> Tensor", cpu=cpu.stack, meta=meta.stack, variants="function", out=True),
    Op("repeat(Tensor self, SymInt[] repeats) -> Tensor", cpu=cpu.repeat, meta=meta.repeat, variants="method",
       varargs=True),
    Op("repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor",
       cpu=cpu.repeat_interleave_int, meta=meta.repeat_interleave_int),
    Op("repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) "
       "-> Tensor", cpu=cpu.repeat_interleave_tensor, meta=meta.repeat_interleave_tensor),
    Op("repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor",
       cpu=cpu.repeat_interleave_indices, meta=meta.repeat_interleave_indices, variants="function"),
    Op("flip(Tensor self, int[] dims) -> Tensor", cpu=cpu.flip, meta=meta.flip, varargs=True),
    Op("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", cpu=cpu.roll, meta=meta.roll),
    Op("tril(Tensor self, SymInt diagonal=0) -> Tensor", cpu=cpu.tril, meta=meta.tril, inplace=True, out=True),
    Op("triu(Tensor self, SymInt diagonal=0) -> Tensor", cpu=cpu.triu, meta=meta.triu, inplace=True, out=True),
    Op("diag(Tensor self, int diagonal=0) -> Tensor", cpu=cpu.diag, meta=meta.diag),
    Op("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor", cpu=cpu.diag_embed,
       meta=meta.diag_embed),
    # -- copies written with other ops ------------------------------------------------------
    Op("concat(Tensor[] tensors, int dim=0) -> Tensor", composite=cpu.concat, variants="function"),
    Op("concatenate(Tensor[] tensors, int dim=0) -> Tensor", composite=cpu.concat, variants="function"),
    Op("hstack(Tensor[] tensors) -> Tensor", composite=cpu.hstack, variants="function"),
    Op("vstack(Tensor[] tensors) -> Tensor", composite=cpu.vstack, variants="function"),
    Op("dstack(Tensor[] tensors) -> Tensor", composite=cpu.dstack, variants="function"),
    Op("column_stack(Tensor[] tensors) -> Tensor", composite=cpu.column_stack, variants="function"),
    Op("tile(Tensor self, SymInt[] dims) -> Tensor", composite=cpu.tile, varargs=True),
    Op("fliplr(Tensor self) -> Tensor", composite=cpu.fliplr),
    Op("flipud(Tensor self) -> Tensor", composite=cpu.flipud),
    Op("rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor", composite=cpu.rot90),
    Op("diagflat(Tensor self, int offset=0) -> Tensor", composite=cpu.diagflat),
]


# ---------------------------------------------------------------------------------------
# Python-level argument parsing
# ---------------------------------------------------------------------------------------
def _ints(args, op):
    """f(2, 3) / f((2, 3)) / f([2, 3]) / f(Size) -> a tuple of ints."""
    if len(args) == 1 and not isinstance(args[0], int):
        return args[0]
    return args


def view(self, *args, **kwargs):
    """``t.view(*shape)``, ``t.view(shape)`` or ``t.view(dtype)``."""
    if not kwargs and args and args[0].__class__ is int:   # t.view(16), t.view(4, -1): sizes, straight to the binding
        return aten.view.default.entry(self, args)
    if "dtype" in kwargs or (len(args) == 1 and (isinstance(args[0], _dt.dtype) or isinstance(args[0], type))):
        dtype = kwargs.pop("dtype", None) if "dtype" in kwargs else args[0]
        return aten.view.dtype(self, dtype)  # the binding turns float / int ... into dtypes
    size = kwargs.pop("size", None)
    if not args and size is None:
        raise TypeError("view() received an invalid combination of arguments - got (), but expected one of:\n"
                        " * (torch.dtype dtype)\n * (tuple of ints size)")
    if kwargs:
        raise TypeError(f"view() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return aten.view.default.entry(self, _ints(args, "view") if size is None else size)   # (the binding: a frame sooner)


def squeeze(self, *args, **kwargs):
    """``t.squeeze()``, ``t.squeeze(dim)``, ``t.squeeze(0, 1)``, ``t.squeeze((0, 1))``."""
    dim = kwargs.pop("dim", None)
    if kwargs:
        raise TypeError(f"squeeze() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if args:
        dim = args[0] if len(args) == 1 else args
    if dim is None:
        return aten.squeeze.default(self)
    if isinstance(dim, (tuple, list)):
        return aten.squeeze.dims(self, dim)
    return aten.squeeze.dim(self, dim)


def broadcast_shapes(*shapes):
    """The shape that tensors of the given shapes broadcast to (``torch.broadcast_shapes``)."""
    from ..._core.tensor import Size
    norm = []
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(s)
        for x in s:
            if not isinstance(x, int):
                raise TypeError(f"broadcast_shapes(): expected int, got {type(x).__name__}")
            if x < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
        norm.append(s)
    return Size(rules.broadcast_shapes(*norm))


def _atleast(n):
    def fn(*tensors):
        if len(tensors) == 1:
            tensors = tensors[0]
        if isinstance(tensors, Tensor):
            return getattr(aten, f"atleast_{n}d").default(tensors)
        return tuple(getattr(aten, f"atleast_{n}d").Sequence(list(tensors)))
    fn.__name__ = f"atleast_{n}d"
    return fn


def split(self, split_size_or_sections=None, dim=0, *, split_size=None):
    """``torch.split`` / ``Tensor.split``: an int size or a list of section sizes."""
    if split_size_or_sections is None:
        split_size_or_sections = split_size
    if isinstance(split_size_or_sections, (list, tuple)):
        return aten.split_with_sizes.default(self, split_size_or_sections, dim)
    return aten.split.Tensor(self, split_size_or_sections, dim)


def broadcast_tensors(*tensors):
    """``ember.broadcast_tensors(a, b, ...)``: views of the tensors expanded to one shape."""
    return aten.broadcast_tensors.default(list(tensors))


def _list_function(name, exc, message):
    """``ember.cat`` & co.: an empty list has no tensor to dispatch on, so it is refused here with
    PyTorch's error; otherwise the generated binding runs."""
    from ..registry import _OVERLOADS_BY_NAME
    binding = []

    def fn(tensors, *args, **kwargs):
        if isinstance(tensors, (list, tuple)) and not tensors:
            raise exc(message)
        if not binding:
            binding.append(_OVERLOADS_BY_NAME[("", name)][0][1])
        return binding[0](tensors, *args, **kwargs)
    fn.__name__ = name
    return fn


_LIST_FUNCTIONS = {
    "cat": (ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    "concat": (ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    "concatenate": (ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    "stack": (RuntimeError, "stack expects a non-empty TensorList"),
    "hstack": (RuntimeError, "hstack expects a non-empty TensorList"),
    "vstack": (RuntimeError, "vstack expects a non-empty TensorList"),
    "dstack": (RuntimeError, "dstack expects a non-empty TensorList"),
    "column_stack": (RuntimeError, "column_stack expects a non-empty TensorList"),
}

def _swapaxes_(self, axis0, axis1):
    """``t.swapaxes_`` / ``t.swapdims_``: transpose_ under another name (one version bump; the
    grad_fn is TransposeBackward1, as PyTorch's)."""
    return aten.transpose_.default(self, axis0, axis1)


def _swapdims_(self, dim0, dim1):
    return aten.transpose_.default(self, dim0, dim1)


PYTHON_METHODS = {"view": view, "squeeze": squeeze, "split": split, "swapaxes_": _swapaxes_, "swapdims_": _swapdims_}
PYTHON_FUNCTIONS = {"": {"broadcast_shapes": broadcast_shapes, "broadcast_tensors": broadcast_tensors, "squeeze": squeeze, "split": split,
                         "atleast_1d": _atleast(1), "atleast_2d": _atleast(2), "atleast_3d": _atleast(3)}}
PYTHON_FUNCTIONS[""].update({name: _list_function(name, *err) for name, err in _LIST_FUNCTIONS.items()})
