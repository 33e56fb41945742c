// ember/extension.h: the C++ side of ember.utils.cpp_extension (torch/extension.h's role).
//
// at::Tensor is a handle on an ember tensor (a Python object). Its methods, the free functions
// at::<op> and the C++ operators are generated from ember's operator table (generated/*.h, written
// by ember/utils/_cpp_header_gen.py) and call ember through Python, so a C++ extension runs the same
// ops, overload resolution, dispatcher, autograd and error messages as Python code. What C++ needs
// and Python has no op for is written here: data_ptr<T>(), sizes(), strides(), scalar_type(),
// TensorOptions and the factories that take them, TORCH_CHECK.
//
// Every call needs the GIL (held in any function pybind11 calls from Python); release it only around
// code that touches raw data_ptr() memory and no Tensor method.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace c10 {
// PyTorch's numbering (ember dtype.scalar_type_code uses the same)
enum class ScalarType : int8_t {
  Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
  ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11, BFloat16 = 15, Undefined = -1
};
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, Meta = 9 };
inline const char* scalar_type_name(ScalarType s) {
  switch (s) {
    case ScalarType::Byte: return "Byte";   case ScalarType::Char: return "Char";
    case ScalarType::Short: return "Short"; case ScalarType::Int: return "Int";
    case ScalarType::Long: return "Long";   case ScalarType::Half: return "Half";
    case ScalarType::Float: return "Float"; case ScalarType::Double: return "Double";
    case ScalarType::Bool: return "Bool";   case ScalarType::BFloat16: return "BFloat16";
    case ScalarType::ComplexFloat: return "ComplexFloat";
    case ScalarType::ComplexDouble: return "ComplexDouble";
    default: return "Undefined";
  }
}
inline std::ostream& operator<<(std::ostream& os, ScalarType s) { return os << scalar_type_name(s); }
template <class T> using optional = std::optional<T>;
inline constexpr std::nullopt_t nullopt = std::nullopt;

// What TORCH_CHECK throws: pybind11 turns a std::runtime_error into Python's RuntimeError.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <class T, class... R> void append(std::ostringstream& os, const T& first, const R&... rest) {
  os << first;
  append(os, rest...);
}
inline std::string check_message(const char* condition) {
  return std::string("Expected ") + condition + " to be true, but got false.";
}
template <class... A> std::string check_message(const char*, const A&... message) {
  std::ostringstream os;
  append(os, message...);
  return os.str();
}
}  // namespace detail
}  // namespace c10

#define EMBER_CHECK_AS(exception, cond, ...)                                                      \
  do {                                                                                            \
    if (!(cond)) throw exception(::c10::detail::check_message(#cond, ##__VA_ARGS__));             \
  } while (0)
// TORCH_CHECK(cond, parts...): RuntimeError with the parts concatenated (as PyTorch's)
#define TORCH_CHECK(cond, ...) EMBER_CHECK_AS(::c10::Error, cond, ##__VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) EMBER_CHECK_AS(::pybind11::value_error, cond, ##__VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) EMBER_CHECK_AS(::pybind11::type_error, cond, ##__VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) EMBER_CHECK_AS(::pybind11::index_error, cond, ##__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) EMBER_CHECK_AS(::c10::Error, cond, ##__VA_ARGS__)

namespace at {
using c10::DeviceType;
using c10::ScalarType;
constexpr ScalarType kByte = ScalarType::Byte, kChar = ScalarType::Char, kShort = ScalarType::Short,
                     kInt = ScalarType::Int, kLong = ScalarType::Long, kHalf = ScalarType::Half,
                     kFloat = ScalarType::Float, kDouble = ScalarType::Double, kBool = ScalarType::Bool,
                     kBFloat16 = ScalarType::BFloat16, kComplexFloat = ScalarType::ComplexFloat,
                     kComplexDouble = ScalarType::ComplexDouble, kUInt8 = kByte, kInt8 = kChar, kInt16 = kShort,
                     kInt32 = kInt, kInt64 = kLong, kFloat16 = kHalf, kFloat32 = kFloat, kFloat64 = kDouble;
constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA, kMeta = DeviceType::Meta;

// sizes()/strides(); a braced list converts to it (at::zeros({2, 3}))
struct IntArrayRef : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  IntArrayRef(std::vector<int64_t> v) : std::vector<int64_t>(std::move(v)) {}
  std::vector<int64_t> vec() const { return *this; }
};

// Which C++ type data_ptr<T>() may view a dtype as.
template <class T> struct scalar_type_of;
#define EMBER_SCALAR_TYPE_OF(T, S) template <> struct scalar_type_of<T> { static constexpr ScalarType value = ScalarType::S; };
EMBER_SCALAR_TYPE_OF(uint8_t, Byte) EMBER_SCALAR_TYPE_OF(int8_t, Char) EMBER_SCALAR_TYPE_OF(int16_t, Short)
EMBER_SCALAR_TYPE_OF(int32_t, Int) EMBER_SCALAR_TYPE_OF(int64_t, Long) EMBER_SCALAR_TYPE_OF(float, Float)
EMBER_SCALAR_TYPE_OF(double, Double) EMBER_SCALAR_TYPE_OF(bool, Bool)
#undef EMBER_SCALAR_TYPE_OF

class Tensor;

namespace detail {
// ember's Python objects, looked up once and kept for the life of the process (released, so no
// destructor touches Python after the interpreter has gone)
inline py::handle ember_module() {
  static py::handle module = py::module_::import("ember").release();
  return module;
}
inline py::handle runtime() {  // the helpers ember.utils.cpp_extension keeps for this header
  static py::handle module = py::module_::import("ember.utils.cpp_extension").release();
  return module;
}
inline py::handle tensor_type() {
  static py::handle type = py::object(ember_module().attr("Tensor")).release();
  return type;
}
// self.<name>(args...) / ember.<name>(args...), the result converted to R
// (a Tensor result is wrapped here, not by the type caster: the Tensor members that call this are
// compiled before the caster is declared)
template <class R> R convert(py::object result) {
  if constexpr (std::is_void_v<R>) {
    return;
  } else if constexpr (std::is_same_v<R, py::object>) {
    return result;
  } else if constexpr (std::is_same_v<R, Tensor>) {
    if (!result.is_none() && !py::isinstance(result, tensor_type()))
      throw c10::Error(std::string("expected ember to return a Tensor, got ") + std::string(py::str(py::type::handle_of(result))));
    return R(std::move(result));
  } else {
    return result.template cast<R>();
  }
}
template <class R, class... A> R call_method(const py::object& self, const char* name, A&&... args) {
  return convert<R>(self.attr(name)(std::forward<A>(args)...));
}
template <class R, class... A> R call_function(const char* name, A&&... args) {
  return convert<R>(ember_module().attr(name)(std::forward<A>(args)...));
}
}  // namespace detail


// A Python number (at::Scalar): built from any C++ arithmetic value.
class Scalar {
 public:
  Scalar() : value_(py::int_(0)) {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0> Scalar(T v) : value_(py::cast(v)) {}
  explicit Scalar(py::object value) : value_(std::move(value)) {}
  template <class T> T to() const { return value_.cast<T>(); }
  double toDouble() const { return to<double>(); }
  int64_t toLong() const { return to<int64_t>(); }
  bool toBool() const { return to<bool>(); }
  bool isFloatingPoint() const { return py::isinstance<py::float_>(value_); }
  bool isIntegral(bool include_bool) const {
    return py::isinstance<py::bool_>(value_) ? include_bool : py::isinstance<py::int_>(value_);
  }
  const py::object& object() const { return value_; }

 private:
  py::object value_;
};

// Whatever an op returns when its overloads return different kinds (`x.max()` a Tensor,
// `x.max(0)` a tuple): convert it to the one this call returns.
class IValue {
 public:
  IValue() = default;
  explicit IValue(py::object value) : value_(std::move(value)) {}
  template <class T> T to() const { return value_.cast<T>(); }
  template <class T> operator T() const { return value_.cast<T>(); }
  bool isTuple() const { return py::isinstance<py::tuple>(value_); }
  bool isTensor() const { return py::isinstance(value_, detail::tensor_type()); }
  const py::object& object() const { return value_; }

 private:
  py::object value_;
};

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype) {}
  TensorOptions(DeviceType device) : device_(device) {}
  TensorOptions dtype(ScalarType d) const { auto o = *this; o.dtype_ = d; return o; }
  TensorOptions device(DeviceType d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool r = true) const { auto o = *this; o.requires_grad_ = r; return o; }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }
  py::dict kwargs() const;  // dtype=, device=, requires_grad= for an ember factory

 private:
  std::optional<ScalarType> dtype_;
  std::optional<DeviceType> device_;
  bool requires_grad_ = false;
};
inline TensorOptions dtype(ScalarType d) { return TensorOptions().dtype(d); }
inline TensorOptions device(DeviceType d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

class Tensor {
 public:
  Tensor() = default;  // undefined (None in Python)
  explicit Tensor(py::object tensor) : obj_(std::move(tensor)) {}
  bool defined() const { return obj_ && !obj_.is_none(); }
  const py::object& object() const { return obj_; }  // the ember tensor

  int64_t dim() const { return detail::call_method<int64_t>(obj_, "dim"); }
  int64_t ndimension() const { return dim(); }
  IntArrayRef sizes() const { return obj_.attr("shape").cast<std::vector<int64_t>>(); }
  IntArrayRef strides() const { return detail::call_method<std::vector<int64_t>>(obj_, "stride"); }
  int64_t size(int64_t d) const { return detail::call_method<int64_t>(obj_, "size", d); }
  int64_t stride(int64_t d) const { return detail::call_method<int64_t>(obj_, "stride", d); }
  int64_t numel() const { return detail::call_method<int64_t>(obj_, "numel"); }
  int64_t element_size() const { return detail::call_method<int64_t>(obj_, "element_size"); }
  ScalarType scalar_type() const { return static_cast<ScalarType>(obj_.attr("dtype").attr("scalar_type_code").cast<int>()); }
  bool is_contiguous() const { return detail::call_method<bool>(obj_, "is_contiguous"); }
  Tensor contiguous() const { return detail::call_method<Tensor>(obj_, "contiguous"); }
  bool requires_grad() const { return obj_.attr("requires_grad").cast<bool>(); }
  DeviceType device_type() const;
  TensorOptions options() const { return TensorOptions(scalar_type()).device(device_type()); }
  Tensor to(const TensorOptions& options) const;
  template <class T> T item() const { return detail::call_method<T>(obj_, "item"); }

  // The address of the first element (CPU memory; none for meta/fake tensors). The typed form checks
  // that T is the tensor's element type, as PyTorch's does.
  void* data_ptr() const {
    TORCH_CHECK(defined(), "data_ptr(): the tensor is undefined");
    auto address = detail::call_method<uintptr_t>(obj_, "data_ptr");
    TORCH_CHECK(address != 0 || numel() == 0, "Cannot access data pointer of Tensor that doesn't have storage");
    return reinterpret_cast<void*>(address);
  }
  template <class T> T* data_ptr() const {
    TORCH_CHECK(scalar_type() == scalar_type_of<std::remove_cv_t<T>>::value, "expected scalar type ",
                scalar_type_of<std::remove_cv_t<T>>::value, " but found ", scalar_type());
    return static_cast<T*>(data_ptr());
  }
  template <class T> T* mutable_data_ptr() const { return data_ptr<T>(); }
  template <class T> const T* const_data_ptr() const { return data_ptr<T>(); }

#include "generated/tensor_methods.h"
#include "generated/tensor_operators.h"

 private:
  py::object obj_;
};

inline std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << (t.defined() ? std::string(py::str(t.object())) : std::string("[ Tensor (undefined) ]"));
}

#include "generated/functions.h"

namespace detail {
inline Tensor factory(const char* name, const IntArrayRef& size, const TensorOptions& options) {
  return convert<Tensor>(ember_module().attr(name)(py::cast(static_cast<const std::vector<int64_t>&>(size)),
                                                   **options.kwargs()));
}
}  // namespace detail
inline Tensor empty(IntArrayRef size, TensorOptions options = {}) { return detail::factory("empty", size, options); }
inline Tensor zeros(IntArrayRef size, TensorOptions options = {}) { return detail::factory("zeros", size, options); }
inline Tensor ones(IntArrayRef size, TensorOptions options = {}) { return detail::factory("ones", size, options); }
inline Tensor rand(IntArrayRef size, TensorOptions options = {}) { return detail::factory("rand", size, options); }
inline Tensor randn(IntArrayRef size, TensorOptions options = {}) { return detail::factory("randn", size, options); }
inline Tensor full(IntArrayRef size, Scalar value, TensorOptions options = {}) {
  return detail::convert<Tensor>(detail::ember_module().attr("full")(
      py::cast(static_cast<const std::vector<int64_t>&>(size)), value.object(), **options.kwargs()));
}
}  // namespace at

// ember tensors <-> at::Tensor, ember dtypes <-> at::ScalarType, numbers <-> at::Scalar
namespace pybind11::detail {
template <> struct type_caster<at::Tensor> {
  PYBIND11_TYPE_CASTER(at::Tensor, const_name("ember.Tensor"));
  bool load(handle src, bool) {
    if (!isinstance(src, at::detail::tensor_type())) return false;
    value = at::Tensor(reinterpret_borrow<object>(src));
    return true;
  }
  static handle cast(const at::Tensor& t, return_value_policy, handle) {
    return t.defined() ? t.object().inc_ref() : none().release();
  }
};
template <> struct type_caster<at::ScalarType> {
  PYBIND11_TYPE_CASTER(at::ScalarType, const_name("ember.dtype"));
  bool load(handle src, bool) {
    if (!isinstance(src, at::detail::ember_module().attr("dtype"))) return false;
    value = static_cast<at::ScalarType>(src.attr("scalar_type_code").cast<int>());
    return true;
  }
  static handle cast(at::ScalarType s, return_value_policy, handle) {
    return at::detail::runtime().attr("_dtype_of_code")(static_cast<int>(s)).release();
  }
};
template <> struct type_caster<at::Scalar> {
  PYBIND11_TYPE_CASTER(at::Scalar, const_name("Number"));
  bool load(handle src, bool) {
    if (!at::detail::runtime().attr("_is_number")(src).cast<bool>()) return false;
    value = at::Scalar(reinterpret_borrow<object>(src));
    return true;
  }
  static handle cast(const at::Scalar& s, return_value_policy, handle) { return s.object().inc_ref(); }
};
template <> struct type_caster<at::IValue> {
  PYBIND11_TYPE_CASTER(at::IValue, const_name("object"));
  bool load(handle src, bool) { value = at::IValue(reinterpret_borrow<object>(src)); return true; }
  static handle cast(const at::IValue& v, return_value_policy, handle) { return v.object().inc_ref(); }
};
template <> struct type_caster<at::IntArrayRef> : list_caster<at::IntArrayRef, int64_t> {};
}  // namespace pybind11::detail

namespace at {
inline DeviceType Tensor::device_type() const {
  std::string type = obj_.attr("device").attr("type").cast<std::string>();
  return type == "cuda" ? kCUDA : type == "meta" ? kMeta : kCPU;
}
inline py::dict TensorOptions::kwargs() const {
  py::dict kw;
  if (dtype_) kw["dtype"] = py::cast(*dtype_);
  if (device_) kw["device"] = *device_ == kCUDA ? "cuda" : *device_ == kMeta ? "meta" : "cpu";
  if (requires_grad_) kw["requires_grad"] = true;
  return kw;
}
inline Tensor Tensor::to(const TensorOptions& options) const {
  return detail::convert<Tensor>(obj_.attr("to")(**options.kwargs()));
}
}  // namespace at

// torch:: spells the same API (torch::Tensor, torch::zeros, torch::kFloat)
namespace torch {
using namespace at;  // NOLINT
}
