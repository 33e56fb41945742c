"""Straight-line tensor programs: ops, methods, constants, Tensor attributes, builtins, operator,
math. Each compiled vs eager on fresh random inputs, counts checked against torch 2.13
(dynamo_harness.check_program)."""
import math
import operator

import pytest

from dynamo_harness import check_program, rand, tensors


# ---- arithmetic and ops --------------------------------------------------------------------
def add_mul(lib, a, b):
    return (a + b) * 2


def unary_chain(lib, a):
    return lib.exp(lib.sin(a)) + lib.cos(a) - lib.tanh(a)


def relu_sigmoid(lib, a):
    return lib.relu(a) * lib.sigmoid(a)


def matmul_bias(lib, a, b):
    return a @ b + 1.0


def mm_function(lib, a, b):
    return lib.matmul(a, b).t()


def compare_to_float(lib, a, b):
    return (a > b).float() + (a <= 0).to(lib.float32)


def python_constants(lib, a):
    return a * 2.5 + 1 - int(True), a / 4


def negation_pow(lib, a):
    return -a + a ** 2 - 2 ** a


def builtin_abs_on_tensor(lib, a):
    return abs(a) + 1


def reductions(lib, a):
    return a.sum(), a.mean(dim=0), a.amax(dim=1, keepdim=True), a.sum(-1)


def elementwise_functions(lib, a, b):
    return lib.maximum(a, b), lib.minimum(a, b), lib.where(a > b, a, b), lib.clamp(a, -1, 1)


def view_ops(lib, a):
    return a.view(-1), a.reshape(4, 3), a.t(), a.transpose(0, 1), a.unsqueeze(0), a.unsqueeze(-1).squeeze(-1)


def tensor_T_and_contiguous(lib, a):
    return a.T.contiguous() * 2


def expand_repeat(lib, a):
    return a.unsqueeze(0).expand(3, 4), a.repeat(2)


def creation_ops(lib, a):
    return lib.zeros(a.shape) + lib.ones_like(a) + lib.full((3, 4), 2.0) + a


def arange_and_cast(lib, a):
    return a + lib.arange(4).float()


def cat_stack(lib, a, b):
    return lib.cat([a, b], dim=0), lib.stack((a, b)), lib.cat([a, b, a], 1)


def dtype_conversions(lib, a):
    return a.to(lib.float64), a.double() * 2, a.int(), a.long() + 1, a.to(dtype=lib.float16).float()


def softmax_functional(lib, a):
    return lib.nn.functional.softmax(a, dim=-1), lib.nn.functional.relu(a - 0.5)


def log_softmax_method(lib, a):
    return a.log_softmax(dim=1).exp().sum(1)


def indexing(lib, a):
    return a[0], a[:, 1], a[1:3], a[..., None], a[::2], a[-1, -2:]


def setitem_on_local_clone(lib, a):
    c = a.clone()
    c[0] = 0
    c[:, 1] = c[:, 1] * 3
    return c


def bool_mask_where(lib, a):
    return lib.where(a > 0, a, lib.zeros_like(a)).sum(0)


def chained_methods(lib, a, b):
    return a.mul(b).add(1).div(2).sub(a).abs().sqrt()


def keyword_arguments_to_ops(lib, a, b):
    return lib.add(a, b, alpha=2), lib.sum(a, dim=1, keepdim=True), a.transpose(dim0=0, dim1=1)


def integer_tensors(lib, a, b):
    return a * b + 3, a // 2, a % 3, (a == b).sum()


def returns_input_unchanged(lib, a, b):
    return a, b + 0


def returns_none_and_tensor(lib, a):
    return None, a * a


TENSOR_PROGRAMS = [
    pytest.param(add_mul, tensors((10,), (10,)), id="add_mul"),
    pytest.param(unary_chain, tensors((3, 4)), id="unary_chain"),
    pytest.param(relu_sigmoid, tensors((5,)), id="relu_sigmoid"),
    pytest.param(matmul_bias, tensors((3, 4), (4, 2)), id="matmul_bias"),
    pytest.param(mm_function, tensors((2, 3), (3, 5)), id="mm_function"),
    pytest.param(compare_to_float, tensors((6,), (6,)), id="compare_to_float"),
    pytest.param(python_constants, tensors((4,)), id="python_constants"),
    pytest.param(negation_pow, tensors((4,)), id="negation_pow"),
    pytest.param(builtin_abs_on_tensor, tensors((4,)), id="builtin_abs_on_tensor"),
    pytest.param(reductions, tensors((3, 4)), id="reductions"),
    pytest.param(elementwise_functions, tensors((3, 4), (3, 4)), id="elementwise_functions"),
    pytest.param(view_ops, tensors((3, 4)), id="view_ops"),
    pytest.param(tensor_T_and_contiguous, tensors((3, 4)), id="tensor_T_and_contiguous"),
    pytest.param(expand_repeat, tensors((4,)), id="expand_repeat"),
    pytest.param(creation_ops, tensors((3, 4)), id="creation_ops"),
    pytest.param(arange_and_cast, tensors((4,)), id="arange_and_cast"),
    pytest.param(cat_stack, tensors((2, 3), (2, 3)), id="cat_stack"),
    pytest.param(dtype_conversions, tensors((5,)), id="dtype_conversions"),
    pytest.param(softmax_functional, tensors((2, 5)), id="softmax_functional"),
    pytest.param(log_softmax_method, tensors((2, 5)), id="log_softmax_method"),
    pytest.param(indexing, tensors((4, 3)), id="indexing"),
    pytest.param(setitem_on_local_clone, tensors((4, 3)), id="setitem_on_local_clone"),
    pytest.param(bool_mask_where, tensors((4, 3)), id="bool_mask_where"),
    pytest.param(chained_methods, tensors((5,), (5,)), id="chained_methods"),
    pytest.param(keyword_arguments_to_ops, tensors((3, 4), (3, 4)), id="keyword_arguments_to_ops"),
    pytest.param(integer_tensors, tensors((5,), (5,), dtype="int64"), id="integer_tensors"),
    pytest.param(returns_input_unchanged, tensors((3,), (3,)), id="returns_input_unchanged"),
    pytest.param(returns_none_and_tensor, tensors((3,)), id="returns_none_and_tensor"),
]


@pytest.mark.parametrize("prog,inputs", TENSOR_PROGRAMS)
def test_tensor_program(prog, inputs):
    check_program(prog, inputs)


# ---- Tensor attributes: shape, dtype, ndim, size(), dim() are constants (static shapes) ----------
def shape_index_scales(lib, a):
    return a * a.shape[0] + a.shape[-1]


def shape_unpack_reshape(lib, a):
    rows, cols = a.shape
    return a.reshape(cols, rows), rows * cols


def size_method(lib, a):
    return a.size(1) * a, a.size(), tuple(a.size())


def dim_and_ndim(lib, a):
    return a + a.dim() - a.ndim * 2, a.ndim


def dtype_branch(lib, a):
    if a.dtype == lib.float32:
        return a + 1
    return a - 1


def dtype_attribute_to_new_tensor(lib, a):
    return lib.zeros(3, dtype=a.dtype) + a.sum(), a.dtype


def numel_and_len(lib, a):
    return a * a.numel() + len(a), len(a)


def shape_arithmetic(lib, a):
    half = (a.shape[0] + 1) // 2
    return a[:half] * 2, a[half:] - 1


def shape_in_python_condition(lib, a):
    if a.shape[0] > 3:
        return a.sum(0)
    return a.sum(1)


def requires_grad_attribute(lib, a):
    return a * 2 if not a.requires_grad else a * 3


def is_floating_point_and_device(lib, a):
    return a + (1 if a.is_floating_point() else 2), str(a.device)


ATTRIBUTE_PROGRAMS = [
    pytest.param(shape_index_scales, tensors((3, 4)), id="shape_index_scales"),
    pytest.param(shape_unpack_reshape, tensors((3, 4)), id="shape_unpack_reshape"),
    pytest.param(size_method, tensors((3, 4)), id="size_method"),
    pytest.param(dim_and_ndim, tensors((2, 2, 2)), id="dim_and_ndim"),
    pytest.param(dtype_branch, tensors((4,)), id="dtype_branch_float"),
    pytest.param(dtype_branch, tensors((4,), dtype="int64"), id="dtype_branch_int"),
    pytest.param(dtype_attribute_to_new_tensor, tensors((4,)), id="dtype_attribute_to_new_tensor"),
    pytest.param(numel_and_len, tensors((3, 4)), id="numel_and_len"),
    pytest.param(shape_arithmetic, tensors((5, 2)), id="shape_arithmetic"),
    pytest.param(shape_in_python_condition, tensors((5, 2)), id="shape_in_python_condition_big"),
    pytest.param(shape_in_python_condition, tensors((2, 2)), id="shape_in_python_condition_small"),
    pytest.param(requires_grad_attribute, tensors((3,)), id="requires_grad_attribute"),
    pytest.param(is_floating_point_and_device, tensors((3,)), id="is_floating_point_and_device"),
]


@pytest.mark.parametrize("prog,inputs", ATTRIBUTE_PROGRAMS)
def test_tensor_attribute_program(prog, inputs):
    check_program(prog, inputs)


# ---- builtins, operator, math on tensors and constants ----------------------------------------
def builtin_isinstance(lib, a, b):
    if isinstance(a, lib.Tensor) and not isinstance(b, (int, float)):
        return a + b
    return a - b


def builtin_min_max_on_ints(lib, a):
    n = min(a.shape) + max(2, 3) + max([1, 5, 2])
    return a * n


def builtin_getattr_hasattr(lib, a):
    shape = getattr(a, "shape")
    doubled = getattr(a, "mul")(2)
    return doubled + len(shape) + (1 if hasattr(a, "sum") else 0) + (10 if hasattr(a, "no_such_attr") else 0)


def builtin_round_int_float_bool(lib, a):
    return a * float(3) + int(2.7) + bool(1) + round(2.6)


def builtin_sum_of_tensors(lib, a, b):
    return sum([a, b, a * b])


def builtin_max_of_tensors(lib, a, b):
    return max(a.shape[0], b.shape[0]), a.max(), lib.max(a, b)


def operator_functions(lib, a, b):
    return operator.add(a, b), operator.mul(a, 3), operator.neg(a), operator.truediv(a, 2), operator.sub(b, a)


def operator_getitem_itemgetter(lib, a):
    first = operator.getitem(a, 0)
    pick = operator.itemgetter(1)
    return first + pick(a), operator.attrgetter("shape")(a)


def operator_comparisons_on_ints(lib, a):
    n = a.shape[0]
    return a + (operator.lt(n, 10) + operator.eq(n, 4) + operator.not_(False))


def operator_inplace_on_local(lib, a, b):
    c = a + 0
    c = operator.iadd(c, b)
    return operator.imul(c, 2)


def math_on_constants(lib, a):
    scale = math.sqrt(a.shape[0]) + math.pi + math.floor(2.7) + math.log(math.e)
    return a * scale, math.ceil(1.2)


def math_trig_constants(lib, a):
    return a * math.cos(0.5) + math.sin(0.25) - math.exp(1.0) + math.tanh(0.1)


def math_isclose_inf(lib, a):
    if math.isfinite(math.inf):
        return a - 1
    return a + math.fabs(-2.0)


def python_float_int_argument(lib, a, scale, offset):
    return a * scale + offset


def bool_argument_branch(lib, a, flag):
    if flag:
        return a.sin()
    return a.cos()


def none_argument(lib, a, b):
    if b is None:
        return a * 2
    return a + b


def string_argument(lib, a, mode):
    if mode == "sum":
        return a.sum()
    elif mode == "mean":
        return a.mean()
    return a


def chained_int_comparison(lib, a):
    n = a.shape[0]
    return a * (1 if 0 < n < 10 else 2)


def tensor_dunder_methods(lib, a, b):
    return a.__add__(b), a.__mul__(2), b.__rsub__(1)


def reverse_operands_with_constants(lib, a):
    return 1 - a, 2 / (a.abs() + 1), 3 * a, 2 ** a.clamp(max=3)


BUILTIN_PROGRAMS = [
    pytest.param(builtin_isinstance, tensors((3,), (3,)), id="builtin_isinstance"),
    pytest.param(builtin_min_max_on_ints, tensors((3, 4)), id="builtin_min_max_on_ints"),
    pytest.param(builtin_getattr_hasattr, tensors((3,)), id="builtin_getattr_hasattr"),
    pytest.param(builtin_round_int_float_bool, tensors((3,)), id="builtin_round_int_float_bool"),
    pytest.param(builtin_sum_of_tensors, tensors((3,), (3,)), id="builtin_sum_of_tensors"),
    pytest.param(builtin_max_of_tensors, tensors((3,), (3,)), id="builtin_max_of_tensors"),
    pytest.param(operator_functions, tensors((3,), (3,)), id="operator_functions"),
    pytest.param(operator_getitem_itemgetter, tensors((3, 2)), id="operator_getitem_itemgetter"),
    pytest.param(operator_comparisons_on_ints, tensors((4,)), id="operator_comparisons_on_ints"),
    pytest.param(operator_inplace_on_local, tensors((3,), (3,)), id="operator_inplace_on_local"),
    pytest.param(math_on_constants, tensors((4,)), id="math_on_constants"),
    pytest.param(math_trig_constants, tensors((4,)), id="math_trig_constants"),
    pytest.param(math_isclose_inf, tensors((4,)), id="math_isclose_inf"),
    pytest.param(python_float_int_argument, lambda lib, rng: (rand(lib, rng, 4), 1.5, 3),
                 id="python_float_int_argument"),
    pytest.param(bool_argument_branch, lambda lib, rng: (rand(lib, rng, 4), True), id="bool_argument_true"),
    pytest.param(bool_argument_branch, lambda lib, rng: (rand(lib, rng, 4), False), id="bool_argument_false"),
    pytest.param(none_argument, lambda lib, rng: (rand(lib, rng, 4), None), id="none_argument"),
    pytest.param(none_argument, tensors((4,), (4,)), id="none_argument_given"),
    pytest.param(string_argument, lambda lib, rng: (rand(lib, rng, 4), "mean"), id="string_argument"),
    pytest.param(chained_int_comparison, tensors((4,)), id="chained_int_comparison"),
    pytest.param(tensor_dunder_methods, tensors((3,), (3,)), id="tensor_dunder_methods"),
    pytest.param(reverse_operands_with_constants, tensors((3,)), id="reverse_operands_with_constants"),
]


@pytest.mark.parametrize("prog,inputs", BUILTIN_PROGRAMS)
def test_builtin_operator_math_program(prog, inputs):
    check_program(prog, inputs)


def test_requires_grad_input_backward_matches_eager():
    """A compiled function of a leaf that requires grad: same output, and backward through the
    compiled result gives the same gradient as eager."""
    def prog(lib, a, w):
        return (lib.tanh(a * w) + w).sum()

    def inputs(lib, rng):
        return rand(lib, rng, 5), rand(lib, rng, 5).requires_grad_(True)

    ref, got = check_program(prog, inputs)
    if got is None:
        return
    import ember
    import numpy as np
    w_eager = inputs(ember, np.random.default_rng(0))[1]
    a, w_comp = inputs(ember, np.random.default_rng(0))
    prog(ember, a, w_eager).backward()
    compiled = ember.compile(prog, backend="eager")
    compiled(ember, a, w_comp).backward()
    np.testing.assert_allclose(w_comp.grad.numpy(), w_eager.grad.numpy(), rtol=1e-6)
