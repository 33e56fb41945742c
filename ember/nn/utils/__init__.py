"""nn.utils: gradient clipping, parameter/vector conversion and (``nn.utils.rnn``, loaded on first use)
packed sequences."""
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grad_norm, get_total_norm, clip_grads_with_norm_  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401


def __getattr__(name):
    if name == "rnn":
        import importlib
        return importlib.import_module(".rnn", __name__)
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
