// NumPy arrays and blockflow Tensors, both ways without a copy.
//
//   Expected<Tensor> t = TensorFromArray(array, DType::kInvalid);  // reads the array in place
//   py::array a = ArrayFromTensor(outputs[0]);                     // owns the tensor's buffer
//
// A C-contiguous, aligned, native-endian array of float16, float32, float64, int32, int64 or
// bool becomes a Tensor over the array's own memory (Tensor::FromExternal), holding a reference
// to the array. NumPy has no bfloat16: a bfloat16 tensor travels as uint16 raw bits (the .npy
// convention). Any other array (strided, misaligned, byte-swapped) is copied once into a
// C-contiguous one, and Python lists or numbers are converted once.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/tensor.h"

namespace blockflow::python {

namespace py = pybind11;

/// The NumPy dtype a tensor of `dtype` comes back as (bfloat16: uint16 bits).
py::dtype NumpyDType(DType dtype);

/// The blockflow dtype of a NumPy dtype (uint16 and ml_dtypes' bfloat16 mean bfloat16 when
/// `want` is bfloat16); kInvalid when there is none.
DType DTypeOfNumpy(const py::dtype& dtype, DType want);

/// A tensor over `value`'s memory: an ndarray read in place when it can be, else a copy made
/// once; a list or number converted to `want` (or as NumPy infers it when `want` is kInvalid).
/// `readonly` tells whether the memory borrowed belongs to a read-only array. The error names
/// the dtype when it has no blockflow equivalent.
Expected<Tensor> TensorFromArray(py::handle value, DType want, bool* readonly = nullptr);

/// An array over the tensor's buffer, no copy: its base is a capsule holding a copy of the
/// Tensor, so the buffer lives as long as the array. `readonly` clears the writeable flag.
py::array ArrayFromTensor(const Tensor& tensor, bool readonly = false);

}  // namespace blockflow::python
