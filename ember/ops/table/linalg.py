"""Linear-algebra operators (table rows): products, einsum, decompositions, solvers, norms.

Python-level API that only parses arguments before calling an operator (torch.einsum's
operand forms, torch.tensordot's `dims`, torch.norm) is in PYTHON_FUNCTIONS / PYTHON_METHODS.
"""
from ..registry import Op, OPERATORS
from ..cpu import linalg as cpu, linalg_decomp as cpu_d, einsum as cpu_e
from ..meta import linalg as meta, linalg_decomp as meta_d

ADD = dict(inplace=True, out=True)      # addmm & co: addmm_, out=
LA = dict(namespace="linalg", variants="function")

OPS = [
    # products
    Op("matmul(Tensor self, Tensor other) -> Tensor", cpu=cpu.matmul, meta=meta.matmul, out=True,
       direct_binding=True),
    Op("mm(Tensor self, Tensor mat2) -> Tensor", cpu=cpu.mm, meta=meta.mm, out=True, direct_binding=True),
    Op("bmm(Tensor self, Tensor mat2) -> Tensor", cpu=cpu.bmm, meta=meta.bmm, out=True),
    Op("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       cpu=cpu.addmm, meta=meta.addmm, **ADD),
    Op("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       cpu=cpu.addmv, meta=meta.addmv, **ADD),
    Op("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       cpu=cpu.addbmm, meta=meta.addbmm, **ADD),
    Op("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       cpu=cpu.baddbmm, meta=meta.baddbmm, **ADD),
    Op("addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
       cpu=cpu.addr, meta=meta.addr, **ADD),
    Op("dot(Tensor self, Tensor tensor) -> Tensor", cpu=cpu.dot, meta=meta.dot, out=True),
    Op("vdot(Tensor self, Tensor other) -> Tensor", cpu=cpu.vdot, meta=meta.vdot, out=True),
    Op("mv(Tensor self, Tensor vec) -> Tensor", cpu=cpu.mv, meta=meta.mv, out=True),
    Op("outer(Tensor self, Tensor vec2) -> Tensor", cpu=cpu.outer, meta=meta.outer, out=True),
    Op("ger(Tensor self, Tensor vec2) -> Tensor", cpu=cpu.outer, meta=meta.outer, out=True),
    Op("inner(Tensor self, Tensor other) -> Tensor", cpu=cpu.inner, meta=meta.inner, out=True),
    Op("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", cpu=cpu_e.einsum,
       meta=meta.einsum, variants="function"),
    Op("tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor", cpu=cpu.tensordot,
       meta=meta.tensordot, variants="function"),
    Op("kron(Tensor self, Tensor other) -> Tensor", cpu=cpu.kron, meta=meta.kron, out=True),
    Op("cross(Tensor self, Tensor other, int? dim=None) -> Tensor", cpu=cpu.cross, meta=meta.cross, out=True),
    Op("linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor", cpu=cpu.linalg_cross,
       meta=meta.linalg_cross, python_name="cross", **LA),
    Op("trace(Tensor self) -> Tensor", cpu=cpu.trace, meta=meta.trace),
    Op("linalg_matmul(Tensor self, Tensor other) -> Tensor", cpu=cpu.matmul, meta=meta.matmul,
       python_name="matmul", **LA),
    # norms
    Op("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor", cpu=cpu_d.linalg_vector_norm, meta=meta_d.linalg_vector_norm,
       python_name="vector_norm", **LA),
    Op("linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2, -1], bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor", cpu=cpu_d.linalg_matrix_norm, meta=meta_d.linalg_matrix_norm,
       python_name="matrix_norm", **LA),
    Op("linalg_matrix_norm.str_ord(Tensor self, str ord=\"fro\", int[] dim=[-2, -1], bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor", cpu=cpu_d.linalg_matrix_norm, meta=meta_d.linalg_matrix_norm,
       python_name="matrix_norm", **LA),
    Op("linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor", cpu=cpu_d.linalg_norm, meta=meta_d.linalg_norm,
       python_name="norm", **LA),
    Op("linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor", cpu=cpu_d.linalg_norm, meta=meta_d.linalg_norm,
       python_name="norm", **LA),
    # decompositions and solvers
    Op("linalg_inv(Tensor A) -> Tensor", cpu=cpu_d.linalg_inv, meta=meta_d.linalg_inv, python_name="inv", **LA),
    Op("inverse(Tensor self) -> Tensor", cpu=cpu_d.linalg_inv, meta=meta_d.linalg_inv),
    Op("linalg_det(Tensor A) -> Tensor", cpu=cpu_d.linalg_det, meta=meta_d.linalg_det, python_name="det", **LA),
    Op("det(Tensor self) -> Tensor", cpu=cpu_d.det, meta=meta_d.det),
    Op("logdet(Tensor self) -> Tensor", cpu=cpu_d.logdet, meta=meta_d.logdet),
    Op("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", cpu=cpu_d.linalg_slogdet,
       meta=meta_d.linalg_slogdet, python_name="slogdet", **LA),
    Op("slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)", cpu=cpu_d.linalg_slogdet,
       meta=meta_d.linalg_slogdet),
    Op("linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", cpu=cpu_d.linalg_solve,
       meta=meta_d.linalg_solve, python_name="solve", **LA),
    Op("linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor", cpu=cpu_d.linalg_cholesky,
       meta=meta_d.linalg_cholesky, python_name="cholesky", **LA),
    Op("cholesky(Tensor self, bool upper=False) -> Tensor", cpu=cpu_d.cholesky, meta=meta_d.cholesky),
    Op("linalg_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)", cpu=cpu_d.linalg_qr,
       meta=meta_d.linalg_qr, python_name="qr", **LA),
    Op("qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)", cpu=cpu_d.qr, meta=meta_d.qr),
    Op("linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)",
       cpu=cpu_d.linalg_svd, meta=meta_d.linalg_svd, python_name="svd", **LA),
    Op("svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)",
       cpu=cpu_d.svd, meta=meta_d.svd),
    Op("linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor", cpu=cpu_d.linalg_svdvals,
       meta=meta_d.linalg_svdvals, python_name="svdvals", **LA),
    Op("linalg_eigh(Tensor self, str UPLO=\"L\") -> (Tensor eigenvalues, Tensor eigenvectors)",
       cpu=cpu_d.linalg_eigh, meta=meta_d.linalg_eigh, python_name="eigh", **LA),
    Op("linalg_eigvalsh(Tensor self, str UPLO=\"L\") -> Tensor", cpu=cpu_d.linalg_eigvalsh,
       meta=meta_d.linalg_eigvalsh, python_name="eigvalsh", **LA),
    Op("linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) "
       "-> Tensor", cpu=cpu_d.linalg_pinv, meta=meta_d.linalg_pinv, python_name="pinv", **LA),
    Op("linalg_pinv(Tensor self, float rcond, bool hermitian=False) -> Tensor", cpu=cpu_d.linalg_pinv_rcond,
       meta=meta_d.linalg_pinv, python_name="pinv", **LA),
    Op("pinverse(Tensor self, float rcond=1e-15) -> Tensor", cpu=cpu_d.linalg_pinv_rcond, meta=meta_d.linalg_pinv),
    Op("linalg_matrix_power(Tensor self, int n) -> Tensor", cpu=cpu_d.linalg_matrix_power,
       meta=meta_d.linalg_matrix_power, python_name="matrix_power", **LA),
    Op("matrix_power(Tensor self, int n) -> Tensor", cpu=cpu_d.linalg_matrix_power, meta=meta_d.linalg_matrix_power),
]


# ---------------------------------------------------------------------------------------
# Python-level API
# ---------------------------------------------------------------------------------------
def _call(name, *args, **kwargs):
    """Call the operator `aten::name` through its binding (so it dispatches like ember.<op>)."""
    return OPERATORS[name].entry(*args, **kwargs)


def _sublist_equation(args):
    """torch.einsum(op1, [0, 1], op2, [1, 2], [0, 2]): the sublist form as an equation."""
    import string
    letters = string.ascii_uppercase + string.ascii_lowercase

    def term(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                out.append(letters[s])
            else:
                raise ValueError("einsum(): expected subscript to be within the range [0, 52), but got " + str(s))
        return "".join(out)
    out = None
    if len(args) % 2:  # a trailing output sublist
        *args, out = args
    operands, terms = list(args[0::2]), [term(s) for s in args[1::2]]
    return ",".join(terms) + ("" if out is None else "->" + term(out)), operands


def einsum(*args):
    """torch.einsum(equation, *operands) / (equation, [operands]) / sublist form."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
    else:
        equation, operands = _sublist_equation(args)
    return _call("aten::einsum", equation, list(operands))


def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: `dims` an int (last dims of a with first dims of b) or two lists."""
    if out is not None:
        raise NotImplementedError("tensordot: out= is not supported")
    from ..._core.tensor import Tensor
    if isinstance(dims, Tensor):
        dims = dims.item() if dims.numel() == 1 else dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        da, db = dims
        for i, d in enumerate((da, db)):
            if isinstance(d, int):  # PyTorch's binding takes lists here, not ints
                raise TypeError(f"tensordot(): argument '{('dims_self', 'dims_other')[i]}' (position {3 + i}) "
                                "must be tuple of ints, not int")
        da, db = list(da), list(db)
    else:
        raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
    return _call("aten::tensordot", a, b, da, db)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm / Tensor.norm (deprecated API) on top of linalg.vector_norm / matrix_norm."""
    if out is not None:
        raise NotImplementedError("norm: out= is not supported")
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return _call("aten::linalg_vector_norm", input, 2, dim, keepdim, dtype=dtype)
        if p == "nuc":
            return _call("aten::linalg_matrix_norm.str_ord", input, "nuc", (-2, -1) if dim is None else dim,
                         keepdim, dtype=dtype)
        raise RuntimeError(f"norm: unsupported p={p!r} with dim={dim}")
    return _call("aten::linalg_vector_norm", input, 2 if p is None else p, dim, keepdim, dtype=dtype)


PYTHON_FUNCTIONS = {"": {"einsum": einsum, "tensordot": tensordot, "norm": norm},
                    "linalg": {"LinAlgError": cpu_d.LinAlgError}}
PYTHON_METHODS = {"norm": norm}
