"""ember.nn: Module, Parameter, layers, losses, ``init``, ``utils`` and ``functional``."""
from . import functional  # noqa: F401
from .parameter import Parameter, Buffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules.module import Module  # noqa: F401
from . import init, utils  # noqa: F401
