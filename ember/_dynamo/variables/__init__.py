"""Variable trackers: what the symbolic translator knows about each Python value (split by kind)."""
from .base import VariableTracker
from .constant import ConstantVariable, is_constant_value
from .tensor import TensorVariable, call_tensor_op
from .lists import TupleVariable, ListVariable, SliceVariable, ListIteratorVariable, BaseListVariable
from .dicts import ConstDictVariable
from .sets import SetVariable
from .functions import UserFunctionVariable, NestedUserFunctionVariable, UserMethodVariable, PartialVariable
from .builtins import BuiltinVariable
from .nn_module import NNModuleVariable
from .misc import (BoundMethodVariable, NullVariable, PythonValueVariable, UserDefinedObjectVariable,
                   CellVariable)
from .tensor_functions import EmberFunctionVariable
from .builder import wrap, wrap_new

__all__ = ["VariableTracker", "ConstantVariable", "TensorVariable", "TupleVariable", "ListVariable",
           "SliceVariable", "ListIteratorVariable", "ConstDictVariable", "UserFunctionVariable",
           "NestedUserFunctionVariable", "UserMethodVariable", "PartialVariable", "BuiltinVariable",
           "NNModuleVariable", "BoundMethodVariable", "NullVariable", "PythonValueVariable",
           "UserDefinedObjectVariable", "CellVariable", "EmberFunctionVariable", "wrap", "wrap_new",
           "call_tensor_op", "is_constant_value", "BaseListVariable", "SetVariable"]
