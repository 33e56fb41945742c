"""The ``Optimizer`` base class: parameter groups, per-parameter state, state dicts and step hooks.

Behaviour follows ``torch.optim.Optimizer``: ``state`` maps each parameter tensor (tensors hash by
identity) to a dict of tensors, ``state_dict()`` names parameters by their position across the
groups, and ``load_state_dict`` maps those positions back onto this optimizer's parameters.

The algorithms in this package are described by data rather than code:

* ``KEYS`` - the option names, in the order torch stores them in a param group;
* ``RULES`` - ``(option, test, message[, exception type])`` rows checked in order at construction
  (``option`` is a name, a ``(name, index)`` pair, or None to test all options at once; the
  exception is ValueError unless given);
* ``update(param, grad, state, group)`` - one parameter's in-place update (the single-tensor form
  of the algorithm), given the gradient (already negated under ``maximize``) and the parameter's
  state dict, which it fills on first use.

``__init__`` keeps torch's explicit signature and hands ``locals()`` to ``_setup``; ``step`` is
``_step_with(closure, update)``.
"""
from __future__ import annotations

import functools
import inspect
import sys
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy

import ember
from ember._core.tensor import Tensor
from ember.nn.modules._common import RemovableHandle

__all__ = ["Optimizer", "required"]


class _Required:
    """Marks a default that every param group must set itself (``torch.optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def _typename(obj) -> str:
    """torch.typename: ``ember.FloatTensor`` for tensors, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _step_dtype():
    """``state['step']`` is float64 only when that is the default dtype (torch's _get_scalar_dtype)."""
    return ember.float64 if ember.get_default_dtype() is ember.float64 else ember.float32


def _step_counter(value=0.0):
    """A fresh 0-d step counter tensor."""
    return ember.tensor(float(value), dtype=_step_dtype())


# -- validation predicates used in the RULES tables ----------------------------------------------
# torch writes most checks as ``not 0.0 <= v`` (NaN fails) but SGD's as ``v < 0.0`` (NaN passes).
def at_least_zero(v) -> bool:
    return 0.0 <= v


def not_below_zero(v) -> bool:
    return not v < 0.0


def in_unit_interval(v) -> bool:
    return 0.0 <= v < 1.0


def _option(options: dict, key):
    if key is None:
        return options
    if isinstance(key, tuple):
        name, index = key
        return options[name][index]
    return options[key]


# flags whose kernels (fused CUDA, CUDA-graph capture, higher-order optimisation) ember lacks
_UNSUPPORTED_FLAGS = ("capturable", "differentiable", "fused")


class Optimizer:
    """Base class for all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (param groups)
    each holding ``"params"`` and per-group options that override ``defaults``.
    """

    KEYS: tuple = ()
    RULES: tuple = ()
    # fused=True: fused_update(pairs, group, state_of, negate) -> the pairs it left to the for-loop
    # update (SGD, Adam, AdamW: one generated kernel per group, ember/_inductor/fused_optim.py)
    fused_update = None
    # otherwise foreach_update(pairs, group, state_of, negate) -> the pairs it left to the for-loop
    # update: the group's parameters in a few launches where the device has such a kernel (Adam,
    # AdamW on CUDA: ember/_cuda/optim.py); not while a CUDA graph captures (its table upload)
    foreach_update = None

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        for group in (groups if isinstance(groups[0], dict) else [{"params": groups}]):
            self.add_param_group(group)

    # -- construction from the KEYS / RULES tables -------------------------------------------------
    def _setup(self, params, arguments: dict) -> None:
        """Validate ``arguments`` (an ``__init__``'s locals) against RULES and build ``defaults``."""
        options = {key: arguments[key] for key in self.KEYS}
        name = type(self).__name__
        if isinstance(options["lr"], Tensor):
            raise NotImplementedError("a Tensor lr is not supported by ember; pass a float")
        for key, test, message, *error in self.RULES:
            value = _option(options, key)
            if not test(value):
                raise (error[0] if error else ValueError)(message.format(value))
        for flag in _UNSUPPORTED_FLAGS:
            if options.get(flag) and not (flag == "fused" and self.fused_update is not None):
                raise NotImplementedError(f"{name}: {flag}=True is not supported by ember")
        Optimizer.__init__(self, params, options)

    @classmethod
    def _signature_defaults(cls) -> dict:
        """The ``__init__`` defaults of the KEYS options (used to complete old pickled groups)."""
        parameters = inspect.signature(cls.__init__).parameters
        return {k: parameters[k].default for k in cls.KEYS if k in parameters
                and parameters[k].default is not inspect.Parameter.empty}

    # -- stepping ----------------------------------------------------------------------------------
    def __init_subclass__(cls, **kwargs):
        # Every subclass's own ``step`` is wrapped once, at class creation, to run the registered
        # step hooks around it (torch patches the class on first instantiation instead).
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_runs_hooks", False):
            return

        @functools.wraps(step)
        def step_with_hooks(*args, **kwargs):
            # as in torch, hooks see the bound arguments with ``self`` first and may replace them
            self = args[0]
            for hook in list(self._optimizer_step_pre_hooks.values()):
                changed = hook(self, args, kwargs)
                if changed is None:
                    continue
                if not (isinstance(changed, tuple) and len(changed) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {changed}.")
                args, kwargs = changed
            result = step(*args, **kwargs)
            for hook in list(self._optimizer_step_post_hooks.values()):
                hook(self, args, kwargs)
            return result

        step_with_hooks._runs_hooks = True
        cls.step = step_with_hooks

    def step(self, closure=None):
        """Perform a single optimization step (implemented by subclasses)."""
        raise NotImplementedError

    def _step_with(self, closure, update, sparse_error=None):
        """One step of a table-described algorithm: evaluate ``closure`` with grad enabled, then
        ``update`` every parameter that has a gradient, under ``no_grad``.

        A parameter gets a ``state`` entry only once ``update`` stores something in it (SGD
        without momentum keeps none, as in torch). ``sparse_error`` is the exception raised for a
        non-strided gradient."""
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        state_of = self.state
        graphs = sys.modules.get("ember._cuda.graphs")     # loaded once a CUDA graph was made
        capturing = graphs is not None and graphs.captures_underway[0] and graphs.is_current_stream_capturing()
        with ember.no_grad():
            for group in self.param_groups:
                # check the whole group before touching any parameter, so an error leaves it unchanged
                pairs = [(p, p.grad) for p in group["params"] if p.grad is not None]
                for param, grad in pairs:
                    if sparse_error is not None and grad.layout is not ember.strided:
                        raise sparse_error
                    if param.is_complex():
                        raise NotImplementedError(f"{type(self).__name__}: complex parameters are not "
                                                  "supported by ember (it has no view_as_real)")
                negate = group.get("maximize", False)
                if group.get("fused"):
                    pairs = type(self).fused_update(pairs, group, state_of, negate)
                elif self.foreach_update is not None and not capturing:
                    pairs = type(self).foreach_update(pairs, group, state_of, negate)
                for param, grad in pairs:
                    state = state_of.get(param)
                    fresh = state is None
                    if fresh:
                        state = {}
                    elif capturing:
                        graphs.refuse_host_optimizer_state(self, state)
                    update(param, -grad if negate else grad, state, group)
                    if fresh and state:
                        if capturing:
                            graphs.refuse_host_optimizer_state(self, None)
                        state_of[param] = state
        return loss

    # -- pickling and printing ---------------------------------------------------------------------
    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())
        if not self.KEYS:
            return
        # Groups pickled by older versions may lack newer options, and older step counters were
        # Python numbers: complete both, as torch's per-class __setstate__ does.
        filler = self._signature_defaults()
        for group in self.param_groups:
            for key, value in filler.items():
                group.setdefault(key, value)
        for param_state in self.state.values():
            if "step" in param_state and not isinstance(param_state["step"], Tensor):
                param_state["step"] = _step_counter(param_state["step"])

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]}" for k in sorted(group) if k != "params")
        return "\n".join(lines) + "\n)"

    # -- hooks ---------------------------------------------------------------------------------------
    @staticmethod
    def _register(hooks: OrderedDict, hook) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None | (args, kwargs)`` run before ``step``."""
        return self._register(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None`` run after ``step``."""
        return self._register(self._optimizer_step_post_hooks, hook)

    # -- state dicts ---------------------------------------------------------------------------------
    def _positions(self) -> dict:
        """id(param) -> its index in the state dict: params are numbered across the groups in
        order; a repeated param keeps its first number (and the counter still advances)."""
        positions: dict = {}
        for index, param in enumerate(p for group in self.param_groups for p in group["params"]):
            positions.setdefault(id(param), index)
        return positions

    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``, as torch.

        The state tensors are references, not copies (as in torch)."""
        positions = self._positions()
        groups = [dict({k: v for k, v in group.items() if k != "params"},
                       params=[positions[id(p)] for p in group["params"]]) for group in self.param_groups]
        state = {positions[id(key)] if isinstance(key, Tensor) else key: value
                 for key, value in self.state.items()}
        return {"state": state, "param_groups": groups}

    @staticmethod
    def _adapt(param, value, key=None):
        """A loaded state value made to match `param`: floating tensors take its dtype and every
        tensor its device, except the ``step`` counters; containers are adapted element-wise."""
        if isinstance(value, Tensor):
            if key == "step":
                return value
            return value.to(dtype=param.dtype, device=param.device) if param.is_floating_point() \
                else value.to(device=param.device)
        if isinstance(value, dict):
            return {k: Optimizer._adapt(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._adapt(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state dict produced by ``state_dict()`` (ember's, or torch's converted to ember tensors)."""
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, saved_groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        param_at = {index: param for mine, saved in zip(self.param_groups, saved_groups)
                    for index, param in zip(saved["params"], mine["params"])}
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in param_at:
                state[param_at[key]] = self._adapt(param_at[key], value)
            else:
                state[key] = value
        for mine, saved in zip(self.param_groups, saved_groups):
            saved["params"] = mine["params"]
            if "param_names" in mine:
                saved.setdefault("param_names", mine["param_names"])
        self.__setstate__({"state": state, "param_groups": saved_groups})

    # -- gradients and groups ------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to None by default, else to zeros in place)."""
        for group in self.param_groups:
            for param in group["params"]:
                meta = param._autograd
                if set_to_none and meta is not None and meta.grad_fn is None:
                    meta.grad = None    # a leaf's: what the `.grad` property would do, without its two calls
                    continue
                grad = param.grad
                if grad is None:
                    continue
                if set_to_none:
                    param.grad = None
                    continue
                # the zeroed gradient must not stay attached to a graph
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    def add_param_group(self, param_group: dict) -> None:
        """Add a param group (a dict with ``"params"`` and optional per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        entries = param_group["params"]
        if isinstance(entries, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        entries = [entries] if isinstance(entries, Tensor) else list(entries)
        named = [e for e in entries if isinstance(e, tuple)]
        if named and len(named) != len(entries):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        tensors = [e[1] for e in entries] if named else entries
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(t))
            if not (self.defaults.get("differentiable") or t.is_leaf or t.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        param_group["params"] = tensors
        if named:
            param_group["param_names"] = [e[0] for e in entries]
        for key, default in self.defaults.items():
            if key not in param_group:
                if default is required:
                    raise ValueError(f"parameter group didn't specify a value of required optimization "
                                     f"parameter {key}")
                param_group[key] = default
        if len(set(tensors)) != len(tensors):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        taken: set = set()
        for group in self.param_groups:
            taken.update(group["params"])
            if ("param_names" in group) != bool(named):
                txt = "with names" if named else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if not taken.isdisjoint(tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)



# the argument checks every Adam-family optimizer makes (torch's messages)
ADAM_FAMILY_RULES = (
        ("lr", at_least_zero, "Invalid learning rate: {}"),
        ("eps", at_least_zero, "Invalid epsilon value: {}"),
        (("betas", 0), in_unit_interval, "Invalid beta parameter at index 0: {}"),
        (("betas", 1), in_unit_interval, "Invalid beta parameter at index 1: {}"),
        ("weight_decay", at_least_zero, "Invalid weight_decay value: {}"),
)


def weight_decayed(param, grad, group):
    """The gradient after weight decay: L2 (added to the gradient) or decoupled (the parameter
    shrinks by lr * weight_decay first, AdamW-style)."""
    decay = group["weight_decay"]
    if decay == 0:
        return grad
    if group.get("decoupled_weight_decay"):
        param.mul_(1 - group["lr"] * decay)
        return grad
    return grad.add(param, alpha=decay)
