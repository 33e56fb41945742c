"""The C++ sources the cpp_extension tests build (one module per test file: a build costs seconds)."""

SEED_001 = """
at::Tensor sin_add(at::Tensor x, at::Tensor y) {
  return x.sin() + y.sin();
}
"""

# Everything else the header offers, in one module (compiled once per session).
API = """
std::tuple<at::Tensor, at::Tensor> sin_add_backward(at::Tensor grad, at::Tensor x, at::Tensor y) {
  return {grad * x.cos(), grad * y.cos()};
}

py::tuple describe(at::Tensor x) {
  return py::make_tuple(x.sizes(), x.strides(), x.numel(), x.dim(), static_cast<int>(x.scalar_type()),
                        x.is_contiguous(), x.size(-1), x.element_size());
}

std::vector<at::Tensor> factories(int64_t n) {
  return {at::zeros({n, 2}), at::ones({n}, at::kDouble), torch::empty({0, n}, torch::dtype(torch::kLong)),
          at::full({2}, 3.5), at::zeros({n}, at::TensorOptions().dtype(at::kInt))};
}

at::Tensor arith(at::Tensor x, at::Tensor y) {
  at::Tensor z = (2.0 - x) * y / 4 + (-x);
  z += 1;
  z *= y;
  return z.view({-1}).clamp(-1, 1).view_as(x) + (x > 0) - 3 * x.abs().sqrt();
}

std::tuple<at::Tensor, at::Tensor> max_dim(at::Tensor x) {
  std::tuple<at::Tensor, at::Tensor> r = x.max(1);
  return r;
}

at::Tensor max_all(at::Tensor x) {
  at::Tensor m = x.max();
  return m;
}

at::Tensor cat_rows(at::Tensor a, at::Tensor b) { return at::cat({a, b}, 0); }

at::Tensor sum_keep(at::Tensor x) { return x.sum({0}, /*keepdim=*/true).contiguous(); }

at::Tensor to_double(at::Tensor x) { return x.to(at::kDouble); }

at::Tensor checked_double(at::Tensor x) {
  TORCH_CHECK(x.dim() == 2, "checked_double: expected a 2-D tensor, got ", x.dim(), "-D");
  return x * 2;
}

at::Tensor bare_check(at::Tensor x) {
  TORCH_CHECK(x.numel() > 0);
  return x;
}

at::Tensor value_check(at::Tensor x) {
  TORCH_CHECK_VALUE(x.numel() > 0, "value_check: empty");
  return x;
}

at::Tensor bad_view(at::Tensor x) { return x.view({7, 7}); }

float first_float(at::Tensor x) { return x.data_ptr<float>()[0]; }

int64_t element_sum(at::Tensor x) {
  const int64_t* p = x.contiguous().data_ptr<int64_t>();
  int64_t total = 0;
  for (int64_t i = 0; i < x.numel(); ++i) total += p[i];
  return total;
}

bool maybe_defined(c10::optional<at::Tensor> x) { return x.has_value() && x->defined(); }

at::Tensor zeros_of(int64_t n, at::ScalarType dtype) { return at::zeros({n}, dtype); }

std::string printed(at::Tensor x) {
  std::ostringstream os;
  os << x << " " << x.scalar_type();
  return os.str();
}
"""

API_FUNCTIONS = ["sin_add", "sin_add_backward", "describe", "factories", "arith", "max_dim", "max_all", "cat_rows",
                 "sum_keep", "to_double", "checked_double", "bare_check", "value_check", "bad_view", "first_float",
                 "element_sum", "maybe_defined", "zeros_of", "printed"]

# A file for load(): a raw loop over data_ptr<float>(), its own PYBIND11_MODULE.
RAW_LOOP_FILE = """
#include <ember/extension.h>

// out[i] = x[i] + alpha * y[i] over contiguous float32 memory
at::Tensor axpy(at::Tensor x, at::Tensor y, double alpha) {
  TORCH_CHECK(x.sizes() == y.sizes(), "axpy: x and y must have the same shape");
  TORCH_CHECK(x.scalar_type() == at::kFloat, "axpy: expected float32 tensors, got ", x.scalar_type());
  at::Tensor xc = x.contiguous(), yc = y.contiguous();
  at::Tensor out = at::empty(xc.sizes(), xc.options());
  const float* xp = xc.data_ptr<float>();
  const float* yp = yc.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const float a = static_cast<float>(alpha);
  for (int64_t i = 0; i < out.numel(); ++i) op[i] = xp[i] + a * yp[i];
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("axpy", &axpy, "x + alpha * y");
}
"""
