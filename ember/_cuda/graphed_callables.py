"""``ember.cuda.make_graphed_callables``: callables (functions or Modules) whose forward and
backward each replay a CUDA graph, as PyTorch's.

For each callable: `num_warmup_iters` forward+backward passes on a side stream (kernels compile,
optimizer-free), then its forward captured into one graph on static copies of the sample
arguments, then its backward (``autograd.grad`` of the outputs that require grad, with static
output gradients, with respect to the inputs and parameters that require grad) into another.
Forwards are captured in order and backwards in reverse order, all in one memory pool, so that
replays in that order never overwrite memory still to be read. The returned callable is an
autograd Function: its forward copies the arguments into the static inputs and replays the
forward graph; its backward copies the incoming gradients and replays the backward graph. Its
outputs (and the gradients it returns) are the graphs' static buffers, overwritten by the next
replay, as in PyTorch. A Module's graphed forward runs only in the training mode it was captured
in; in the other mode its original forward runs.
"""
from __future__ import annotations


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    import ember
    from .._core.tensor import Tensor
    from . import graphs
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError("make_graphed_callables: callables and sample_args must have the same length")
    for fn, args in zip(callables, sample_args):
        if isinstance(fn, ember.nn.Module) and (fn._forward_hooks or fn._forward_pre_hooks):
            raise AssertionError("Modules must not have hooks registered at the time they are passed. However, "
                               "registering hooks on modules after passing them through make_graphed_callables "
                               "is allowed.")
        if not all(isinstance(a, Tensor) for a in args):
            raise AssertionError("In the beta API, sample_args for each callable must contain only Tensors. "
                            "Other types are not allowed.")
    graphs._cupy("CUDAGraph")      # without CUDA: a CPU build of PyTorch's error
    params = [tuple(fn.parameters()) if isinstance(fn, ember.nn.Module) else () for fn in callables]
    surfaces = [tuple(args) + p for args, p in zip(sample_args, params)]
    pool = graphs.graph_pool_handle() if pool is None else pool

    def outputs_and_grads(fn, args, surface, grad_outputs=None):
        outputs = fn(*args)
        flat = outputs if isinstance(outputs, tuple) else (outputs,)
        needing = [o for o in flat if o.requires_grad]
        wanted = [t for t in surface if t.requires_grad]
        grads = ()
        if needing and wanted:
            given = grad_outputs if grad_outputs is not None else [ember.empty_like(o) for o in needing]
            grads = ember.autograd.grad(needing, wanted, grad_outputs=given, allow_unused=allow_unused_input)
        return outputs, grads

    ember.cuda.synchronize()
    side = ember.cuda.Stream()
    side.wait_stream(ember.cuda.current_stream())
    with ember.cuda.stream(side):
        for fn, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(num_warmup_iters):
                outputs_and_grads(fn, args, surface)
    ember.cuda.current_stream().wait_stream(side)

    forward_graphs, static_outputs = [], []
    for fn, args in zip(callables, sample_args):
        g = graphs.CUDAGraph()
        with graphs.graph(g, pool=pool):
            outputs = fn(*args)
        forward_graphs.append(g)
        static_outputs.append(outputs)

    captured = [None] * len(callables)
    for i in reversed(range(len(callables))):
        flat = static_outputs[i] if isinstance(static_outputs[i], tuple) else (static_outputs[i],)
        grad_outputs = tuple(ember.empty_like(o) if o.requires_grad else None for o in flat)
        needing = [o for o in flat if o.requires_grad]
        wanted = [t for t in surfaces[i] if t.requires_grad]
        g = graphs.CUDAGraph()
        grads = ()
        with graphs.graph(g, pool=pool):
            if needing and wanted:
                grads = ember.autograd.grad(needing, wanted, grad_outputs=[go for go in grad_outputs if go is not None],
                                            allow_unused=allow_unused_input)
        grads = iter(grads)
        static_grad_inputs = tuple(next(grads) if t.requires_grad else None for t in surfaces[i])
        captured[i] = _graphed_function(forward_graphs[i], g, surfaces[i], flat, grad_outputs, static_grad_inputs,
                                        len(sample_args[i]), not isinstance(static_outputs[i], tuple))

    results = []
    for fn, graphed, p in zip(callables, captured, params):
        if isinstance(fn, ember.nn.Module):
            results.append(_module_forward(fn, graphed, p))
        else:
            results.append(graphed)
    return results[0] if single else tuple(results)


def _graphed_function(forward_graph, backward_graph, surface, static_outputs, static_grad_outputs,
                      static_grad_inputs, n_args, single_output):
    import ember

    def copy_in(statics, values):
        for static, value in zip(statics, values):
            if static is not None and value is not None and static.data_ptr() != value.data_ptr():
                static.copy_(value)

    class Graphed(ember.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            copy_in(surface, inputs)
            forward_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        def backward(ctx, *grads):
            copy_in(static_grad_outputs, grads)
            backward_graph.replay()
            return tuple(g.detach() if g is not None else None for g in static_grad_inputs)

    def graphed(*args):
        if len(args) != n_args:
            raise TypeError(f"the graphed callable takes {n_args} tensor arguments, got {len(args)}")
        outputs = Graphed.apply(*args, *surface[n_args:])
        return outputs[0] if single_output else outputs
    return graphed


def _module_forward(module, graphed, params):
    """Replace `module.forward` by the graphed forward while its training mode is the captured one."""
    training, original = module.training, module.forward

    def forward(*args):
        return graphed(*args) if module.training == training else original(*args)
    module.forward = forward
    return module
