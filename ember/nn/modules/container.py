"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (and the deprecated Container)."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import islice

from ..._core.tensor import Tensor
from ..parameter import Parameter
from ._common import TrackedDict
from .module import Module, _addindent, _typename

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _abs_index(idx, size):
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


def _renumber(module):
    # Keys of list-like containers stay 0..n-1 after a deletion, as in PyTorch.
    module._modules = TrackedDict(zip([str(i) for i in range(len(module._modules))], module._modules.values()))


def _no_digits(keys):
    return [k for k in keys if not k.isdigit()]


class Container(Module):
    """Deprecated: a Module whose keyword arguments become its submodules."""

    def __init__(self, **kwargs):
        import warnings
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    """Modules applied one after another: ``Sequential(m1, m2)`` or ``Sequential(OrderedDict(...))``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _get_item_by_idx(self, iterator, idx):
        return next(islice(iterator, _abs_index(idx, len(self)), None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx, module):
        setattr(self, self._get_item_by_idx(self._modules.keys(), idx), module)

    def __delitem__(self, idx):
        keys = list(self._modules.keys())[idx] if isinstance(idx, slice) \
            else [self._get_item_by_idx(self._modules.keys(), idx)]
        for key in keys:
            delattr(self, key)
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __dir__(self):
        return _no_digits(super().__dir__())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        ret = Sequential()
        for layer in list(self) + list(other):
            ret.append(layer)
        return ret

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def __mul__(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        combined = Sequential()
        for i, module in enumerate(list(self) * other):
            combined.add_module(str(i), module)
        return combined

    __rmul__ = __mul__

    def pop(self, key):
        """Remove and return the module at `key`."""
        v = self[key]
        del self[key]
        return v

    def append(self, module):
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert `module` before position `index`; returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not (-n <= index <= n):
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential):
        """Append every module of `sequential`; returns self."""
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered as children '0', '1', ..."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        modules = self._modules
        if type(idx) is int and 0 <= idx < len(modules):   # the common case, without the general checks
            return modules[str(idx)]
        if isinstance(idx, slice):
            return self.__class__(list(modules.values())[idx])
        return modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for i, module in enumerate(list(self) + list(other)):
            combined.add_module(str(i), module)
        return combined

    def __dir__(self):
        return _no_digits(super().__dir__())

    def __repr__(self):
        # PyTorch compresses runs of identical children: "(0-2): 3 x Linear(...)".
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = [[0, 0, reprs[0]]]
        for i, r in enumerate(reprs[1:], 1):
            if r == runs[-1][2]:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for start, end, r in runs:
            local = f"({start}): {r}" if start == end else f"({start}-{end}): {end - start + 1} x {r}"
            lines.append(_addindent(local, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index, module):
        """Insert `module` before position `index`."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module):
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove and return the module at `key`."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        """Append the modules of an iterable; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """An ordered dict of modules, registered as children under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def pop(self, key):
        """Remove and return the module under `key`."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add modules from a mapping or an iterable of (key, module) pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, "
                            "but got " + type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, Mapping)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, m in enumerate(modules):
            if not isinstance(m, Iterable):
                raise TypeError("ModuleDict update sequence element #" + str(j)
                                + " should be Iterable; is" + type(m).__name__)
            if not len(m) == 2:
                raise ValueError("ModuleDict update sequence element #" + str(j) + " has length "
                                 + str(len(m)) + "; 2 is required")
            self[m[0]] = m[1]


def _param_line(k, p, typename=False):
    # PyTorch prints the dtype in ParameterList and the tensor type name in ParameterDict.
    if isinstance(p, Tensor):
        size_str = "x".join(str(s) for s in p.size())
        device_str = f" ({p.device})" if p.device.type == "cuda" else ""
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        what = _typename(p) if typename else p.dtype
        return f"  ({k}): {kind} containing: [{what} of size {size_str}{device_str}]"
    return f"  ({k}): Object of type: {type(p).__name__}"


def _as_param(value):
    # Plain tensors assigned to ParameterList/Dict become Parameters, as in PyTorch.
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters, registered as '0', '1', ..."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(len(self))[idx]:
                out.append(self[i])
            return out
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx, param):
        setattr(self, str(_abs_index(idx, len(self))), _as_param(param))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return _no_digits(super().__dir__())

    def append(self, value):
        """Add `value` at the end; returns self."""
        new_idx = len(self)
        self._size += 1
        setattr(self, str(new_idx), _as_param(value))
        return self

    def extend(self, values):
        """Append the values of an iterable; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_param_line(k, p) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters, registered under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        setattr(self, key, _as_param(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def pop(self, key):
        """Remove and return the value under `key`."""
        v = self[key]
        del self[key]
        return v

    def clear(self):
        """Remove every entry."""
        for k in list(self._keys):
            del self[k]

    def update(self, parameters):
        """Add entries from a mapping or an iterable of (key, value) pairs."""
        items = parameters.items() if isinstance(parameters, (Mapping, ParameterDict)) else parameters
        for k, v in items:
            self[k] = v

    def extra_repr(self):
        return "\n".join(_param_line(k, p, typename=True) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")
