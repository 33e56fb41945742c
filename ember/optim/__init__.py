"""ember.optim: optimizers (torch.optim's single-tensor algorithms) and learning-rate schedulers.
``ember.optim.swa_utils`` (weight averaging) is imported on first use, as it needs ember.nn."""
from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "Rprop", "ASGD", "LBFGS", "Adafactor", "SparseAdam", "Muon",
           "lr_scheduler"]


def __getattr__(name):
    if name == "swa_utils":
        import importlib
        return importlib.import_module(f"{__name__}.swa_utils")
    raise AttributeError(f"module 'ember.optim' has no attribute {name!r}")
