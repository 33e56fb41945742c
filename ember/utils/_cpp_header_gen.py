"""Writes ember/include/ember/generated/*.h, the part of the C++ extension header that comes from
the operator table: a method of `at::Tensor` for every Tensor method the table binds, a free
function `at::<name>` for every function `ember.<name>` it binds, and the C++ operators of the
table's Python dunders (ember/ops/table/dunders.py). Each one calls back into ember through
Python, so C++ code runs exactly the ops (and the overload resolution) Python code runs.

    python -m ember.utils._cpp_header_gen          # rewrite the committed headers
    render() -> {file name: text}                  # what tests compare the committed files with

The argument types stay templates (pybind11 converts each argument when it is passed to Python),
so one C++ declaration serves every overload of a name; only the return type is chosen here,
from the schemas' returns. A name whose overloads return different kinds (`max()` a Tensor,
`max(dim)` two) returns `at::IValue`, which converts to any of them.
"""
from __future__ import annotations

import os

HEADER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include", "ember", "generated")

# members and functions written by hand in extension.h (they are not calls of one op, or they take
# C++-only argument types such as TensorOptions); the generated ones of the same name are left out
HAND_WRITTEN_METHODS = frozenset({
    "sizes", "strides", "size", "stride", "numel", "dim", "ndimension", "data_ptr", "scalar_type",
    "is_contiguous", "contiguous", "item", "options", "defined", "requires_grad", "element_size", "to"})
HAND_WRITTEN_FUNCTIONS = frozenset({"empty", "zeros", "ones", "full", "rand", "randn", "tensor"})

CPP_KEYWORDS = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue co_await co_return
co_yield decltype default delete do double dynamic_cast else enum explicit export extern false float for friend
goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected
public register reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch
template this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
wchar_t while xor xor_eq""".split())

# Python dunder -> C++ operator (only the syntax; which dunders exist comes from the table)
BINARY_OPERATORS = {"__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/", "__mod__": "%",
                    "__and__": "&", "__or__": "|", "__xor__": "^", "__lshift__": "<<", "__rshift__": ">>",
                    "__eq__": "==", "__ne__": "!=", "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">="}
UNARY_OPERATORS = {"__neg__": "-", "__pos__": "+", "__invert__": "~"}
INPLACE_OPERATORS = {"__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=",
                     "__imod__": "%=", "__iand__": "&=", "__ior__": "|=", "__ixor__": "^=",
                     "__ilshift__": "<<=", "__irshift__": ">>="}
# reflected dunders: `2.0 - t` calls t.__rsub__(2.0)
REFLECTED_OPERATORS = {"__radd__": "+", "__rsub__": "-", "__rmul__": "*", "__rtruediv__": "/", "__rmod__": "%",
                       "__rand__": "&", "__ror__": "|", "__rxor__": "^"}

_SCALAR_RETURNS = {"bool": "bool", "int": "int64_t", "SymInt": "int64_t", "float": "double", "Scalar": "at::Scalar"}


def _return_type(schema) -> str:
    returns = schema.returns
    if not returns:
        return "void"
    if len(returns) > 1:
        if all(r.type == "Tensor" and not r.is_list for r in returns):
            return "std::tuple<" + ", ".join(["at::Tensor"] * len(returns)) + ">"
        return "at::IValue"
    r = returns[0]
    if r.type == "Tensor":
        return "std::vector<at::Tensor>" if r.is_list else "at::Tensor"
    if r.is_list or r.optional:
        return "at::IValue"
    return _SCALAR_RETURNS.get(r.type, "at::IValue")


def _first_list_kind(schemas) -> str | None:
    """`{2, 3}` cannot bind a template parameter: the C++ type of a braced first argument, when an
    overload takes a list there (`view({2, 3})`, `at::cat({a, b})`)."""
    for schema in schemas:
        args = [a for a in schema.arguments if not a.kwarg_only]
        first = args[1] if args and args[0].name == "self" and len(args) > 1 else None
        if schema.arguments and schema.arguments[0].name != "self":
            first = args[0] if args else None
        if first is not None and first.is_list:
            return "at::Tensor" if first.type == "Tensor" else "int64_t" if first.type in ("int", "SymInt") else None
    return None


def _entries(overloads: dict, hand_written) -> list:
    """[(name, return type, braced list element type or None)] of the generatable names."""
    out = []
    for name in sorted(overloads):
        if name.startswith("_") or name in CPP_KEYWORDS or name in hand_written:
            continue
        schemas = overloads[name]
        kinds = {_return_type(s) for s in schemas}
        out.append((name, kinds.pop() if len(kinds) == 1 else "at::IValue", _first_list_kind(schemas)))
    return out


def _table():
    """({method name: [schema]}, {function name: [schema]}) of the bindings the table made."""
    import ember  # noqa: F401  (registers the table)
    from ..ops import registry
    methods, functions = {}, {}
    for (namespace, name), overloads in registry._OVERLOADS_BY_NAME.items():
        target = methods if namespace == "Tensor" else functions if namespace == "" else None
        if target is not None:
            target.setdefault(name, []).extend(schema for schema, _ in overloads)
    return methods, functions


_BANNER = "// GENERATED by ember/utils/_cpp_header_gen.py from ember's operator table: do not edit.\n"


def render_methods(methods) -> str:
    lines = [_BANNER, "// Included inside the body of class at::Tensor (extension.h).\n"]
    for name, ret, braced in _entries(methods, HAND_WRITTEN_METHODS):
        lines.append(f"template <class... A> {ret} {name}(A&&... a) const "
                     f"{{ return detail::call_method<{ret}>(obj_, \"{name}\", std::forward<A>(a)...); }}")
        if braced:
            lines.append(f"template <class... A> {ret} {name}(std::initializer_list<{braced}> l, A&&... a) const "
                         f"{{ return detail::call_method<{ret}>(obj_, \"{name}\", std::vector<{braced}>(l), "
                         f"std::forward<A>(a)...); }}")
    return "\n".join(lines) + "\n"


def render_operators(dunders) -> str:
    lines = [_BANNER, "// Included inside the body of class at::Tensor (extension.h).\n"]
    for dunder in dunders:
        if dunder in BINARY_OPERATORS:
            lines.append(f"template <class O> Tensor operator{BINARY_OPERATORS[dunder]}(const O& o) const "
                         f"{{ return detail::call_method<Tensor>(obj_, \"{dunder}\", o); }}")
        elif dunder in UNARY_OPERATORS:
            lines.append(f"Tensor operator{UNARY_OPERATORS[dunder]}() const "
                         f"{{ return detail::call_method<Tensor>(obj_, \"{dunder}\"); }}")
        elif dunder in INPLACE_OPERATORS:
            lines.append(f"template <class O> Tensor& operator{INPLACE_OPERATORS[dunder]}(const O& o) "
                         f"{{ obj_ = detail::call_method<py::object>(obj_, \"{dunder}\", o); return *this; }}")
        elif dunder in REFLECTED_OPERATORS:
            lines.append(f"template <class S, std::enable_if_t<std::is_arithmetic_v<S>, int> = 0> friend Tensor "
                         f"operator{REFLECTED_OPERATORS[dunder]}(S s, const Tensor& t) "
                         f"{{ return detail::call_method<Tensor>(t.obj_, \"{dunder}\", s); }}")
    return "\n".join(lines) + "\n"


def render_functions(functions) -> str:
    lines = [_BANNER, "// Included in namespace at (extension.h), after class Tensor.\n"]
    for name, ret, braced in _entries(functions, HAND_WRITTEN_FUNCTIONS):
        lines.append(f"template <class... A> {ret} {name}(A&&... a) "
                     f"{{ return detail::call_function<{ret}>(\"{name}\", std::forward<A>(a)...); }}")
        if braced:
            lines.append(f"template <class... A> {ret} {name}(std::initializer_list<{braced}> l, A&&... a) "
                         f"{{ return detail::call_function<{ret}>(\"{name}\", std::vector<{braced}>(l), "
                         f"std::forward<A>(a)...); }}")
    return "\n".join(lines) + "\n"


def render() -> dict:
    from ..ops.table.dunders import DUNDERS
    from ..ops import registry
    methods, functions = _table()
    present = [d for d, (name, _) in DUNDERS.items() if name in registry.METHODS]   # what dunders.install attaches
    return {"tensor_methods.h": render_methods(methods), "tensor_operators.h": render_operators(present),
            "functions.h": render_functions(functions)}


def write(directory: str = HEADER_DIR) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, text in render().items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    write()
