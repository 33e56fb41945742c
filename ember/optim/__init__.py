"""ember.optim: optimizers (torch.optim's single-tensor algorithms) and learning-rate schedulers."""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
