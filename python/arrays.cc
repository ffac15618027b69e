#include "python/arrays.h"

#include <memory>
#include <string>
#include <vector>

#include "core/npy.h"

namespace blockflow::python {
namespace {

using NpyApi = py::detail::npy_api;

// Drops a reference to a Python object from any thread: the last copy of a borrowed tensor
// may go on a thread that does not hold the GIL.
struct PyRefDeleter {
  void operator()(PyObject* object) const {
    if (!Py_IsInitialized()) return;  // the interpreter is gone with its objects
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(object);
    PyGILState_Release(state);
  }
};

// True when the dtype's bytes are in this machine's order.
bool IsNative(const py::dtype& dtype) {
  const char order = py::detail::array_descriptor_proxy(dtype.ptr())->byteorder;
  return order != '>';  // '=' native, '|' not applicable, '<' little-endian (x86-64, ARM64)
}

// A tensor over the memory of `array` (C-contiguous, aligned, of blockflow dtype `dtype`).
Expected<Tensor> Borrow(const py::array& array, DType dtype) {
  std::vector<int64_t> dims(static_cast<size_t>(array.ndim()));
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = array.shape(static_cast<py::ssize_t>(i));
  Shape shape(std::move(dims));
  if (array.size() == 0) return Tensor::Create(dtype, std::move(shape));
  PyObject* ref = array.inc_ref().ptr();
  std::shared_ptr<const void> owner(ref, PyRefDeleter());
  return Tensor::FromExternal(dtype, std::move(shape), const_cast<void*>(array.data()),
                              std::move(owner));
}

}  // namespace

py::dtype NumpyDType(DType dtype) {
  // NumPy reads the .npy descr; bfloat16 is its raw 16 bits, as in .npy files.
  if (dtype == DType::kInvalid)
    throw py::value_error("no NumPy dtype for an invalid blockflow dtype");
  return py::dtype(NpyDescr(dtype));
}

DType DTypeOfNumpy(const py::dtype& dtype, DType want) {
  const char kind = dtype.kind();
  const py::ssize_t size = dtype.itemsize();
  switch (kind) {
    case 'f':
      return size == 2   ? DType::kFloat16
             : size == 4 ? DType::kFloat32
             : size == 8 ? DType::kFloat64
                         : DType::kInvalid;
    case 'i':
      return size == 4 ? DType::kInt32 : size == 8 ? DType::kInt64 : DType::kInvalid;
    case 'b':
      return DType::kBool;
    case 'u':
      return size == 2 && want == DType::kBFloat16 ? DType::kBFloat16 : DType::kInvalid;
    case 'V':
      // ml_dtypes.bfloat16 (as JAX and TensorFlow give it) has kind 'V'.
      if (size == 2 && py::str(dtype.attr("name")).cast<std::string>() == "bfloat16") {
        return DType::kBFloat16;
      }
      return DType::kInvalid;
    default:
      return DType::kInvalid;
  }
}

Expected<Tensor> TensorFromArray(py::handle value, DType want, bool* readonly) {
  if (readonly) *readonly = false;
  py::array array;
  if (py::isinstance<py::array>(value)) {
    array = py::reinterpret_borrow<py::array>(value);
  } else {
    // A list, a number or another array-like: converted once, to the dtype wanted.
    py::module_ numpy = py::module_::import("numpy");
    array = want == DType::kInvalid ? numpy.attr("asarray")(value)
                                    : numpy.attr("asarray")(value, NumpyDType(want));
  }
  const py::dtype dtype = array.dtype();
  const DType bf_dtype = DTypeOfNumpy(dtype, want);
  if (bf_dtype == DType::kInvalid) {
    const std::string name = py::str(py::handle(dtype)).cast<std::string>();
    if (want == DType::kBFloat16) {
      return InvalidArgument("fed a " + name +
                             " array, but dtype is bfloat16 (pass its raw bits as uint16, e.g. "
                             "blockflow.float32_to_bfloat16(x))");
    }
    return InvalidArgument("a " + name +
                           " array has no blockflow dtype (float16, bfloat16 as uint16, float32, "
                           "float64, int32, int64, bool)");
  }
  const int flags = array.flags();
  const int needed = NpyApi::NPY_ARRAY_C_CONTIGUOUS_ | NpyApi::NPY_ARRAY_ALIGNED_;
  if ((flags & needed) != needed || !IsNative(dtype)) {
    // The one copy: C order, aligned, native byte order.
    py::module_ numpy = py::module_::import("numpy");
    array = numpy.attr("ascontiguousarray")(array, dtype.attr("newbyteorder")("="));
  } else if (readonly) {
    *readonly = (flags & NpyApi::NPY_ARRAY_WRITEABLE_) == 0;
  }
  return Borrow(array, bf_dtype);
}

py::array ArrayFromTensor(const Tensor& tensor, bool readonly) {
  const std::vector<int64_t>& dims = tensor.shape().dims();
  std::vector<py::ssize_t> shape(dims.begin(), dims.end());
  // The capsule owns a Tensor that shares the buffer; NumPy frees the capsule with the array.
  auto* holder = new Tensor(tensor);
  py::capsule base(holder, [](void* p) { delete static_cast<Tensor*>(p); });
  py::array array(NumpyDType(tensor.dtype()), std::move(shape), {}, holder->raw(), base);
  if (readonly) {
    py::detail::array_proxy(array.ptr())->flags &= ~NpyApi::NPY_ARRAY_WRITEABLE_;
  }
  return array;
}

}  // namespace blockflow::python
