"""ember.nn: Module, Parameter, layers, losses, ``init``, ``utils`` and ``functional``."""
from . import functional  # noqa: F401
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules.module import Module  # noqa: F401
from . import init, utils  # noqa: F401


def __getattr__(name):
    """``nn.LSTM``, the padding layers & co (modules._LAZY_FILES) and ``nn.parallel`` /
    ``nn.DataParallel`` load on first use (most programs only import them)."""
    if name in modules._LAZY_NAMES:
        return getattr(modules, name)
    if name in ("parallel", "DataParallel"):
        import importlib
        parallel = importlib.import_module(".parallel", __name__)
        return parallel if name == "parallel" else parallel.DataParallel
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(modules._LAZY_NAMES))
