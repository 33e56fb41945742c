"""Named result tuples of multi-output ops, like ``torch.return_types``.

``ember.max(x, dim=1)`` returns ``ember.return_types.max(values=..., indices=...)``: a tuple
(so ``values, indices = ...`` and ``r[0]`` work, and it compares equal to a plain tuple) whose
fields are also attributes. The repr matches PyTorch's::

    ember.return_types.max(
    values=tensor([3., 2.]),
    indices=tensor([1, 0]))
"""
from __future__ import annotations

__all__ = ["structseq"]


def structseq(name: str, fields: tuple) -> type:
    """A tuple subclass with named `fields`, the analogue of PyTorch's structseq types."""

    def __new__(cls, sequence):
        items = tuple(sequence)
        if len(items) != len(fields):
            raise TypeError(f"ember.return_types.{name}() takes a {len(fields)}-sequence "
                            f"({len(items)}-sequence given)")
        return tuple.__new__(cls, items)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"ember.return_types.{name}(\n{body})"

    def __reduce__(self):
        return (type(self), (tuple(self),))

    ns = {"__new__": __new__, "__repr__": __repr__, "__reduce__": __reduce__, "__slots__": (),
          "_fields": fields, "n_fields": len(fields), "n_sequence_fields": len(fields),
          "n_unnamed_fields": 0, "__module__": __name__,
          "__doc__": f"{name}({', '.join(fields)}): result of ember.{name}."}
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: tuple.__getitem__(self, i), doc=f"field {i}: {f}")
    cls = type(name, (tuple,), ns)
    cls.__qualname__ = name
    return cls


_TYPES = {
    "max": ("values", "indices"), "min": ("values", "indices"), "sort": ("values", "indices"),
    "topk": ("values", "indices"), "kthvalue": ("values", "indices"), "median": ("values", "indices"),
    "nanmedian": ("values", "indices"), "mode": ("values", "indices"), "cummax": ("values", "indices"),
    "cummin": ("values", "indices"), "aminmax": ("min", "max"), "frexp": ("mantissa", "exponent"),
    "histogram": ("hist", "bin_edges"), "histogramdd": ("hist", "bin_edges"),
    "geqrf": ("a", "tau"), "qr": ("Q", "R"), "slogdet": ("sign", "logabsdet"), "svd": ("U", "S", "V"),
    "triangular_solve": ("solution", "cloned_coefficient"), "lu_unpack": ("P", "L", "U"),
    "linalg_cholesky_ex": ("L", "info"), "linalg_eig": ("eigenvalues", "eigenvectors"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"), "linalg_inv_ex": ("inverse", "info"),
    "linalg_ldl_factor": ("LD", "pivots"), "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"), "linalg_lu": ("P", "L", "U"),
    "linalg_lu_factor": ("LU", "pivots"), "linalg_lu_factor_ex": ("LU", "pivots", "info"),
    "linalg_qr": ("Q", "R"), "linalg_slogdet": ("sign", "logabsdet"), "linalg_solve_ex": ("result", "info"),
    "linalg_svd": ("U", "S", "Vh"),
}

all_return_types = []
for _name, _fields in _TYPES.items():
    for _suffix in ("", "_out"):
        _cls = structseq(_name + _suffix, _fields)
        globals()[_name + _suffix] = _cls
        all_return_types.append(_cls)
        __all__.append(_name + _suffix)
del _name, _fields, _suffix, _cls
