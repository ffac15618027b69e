// Tensor: a dtype, a shape and a shared, 64-byte-aligned, zero-initialised buffer (or, through
// FromExternal, another library's memory).
//
//   Tensor t(DType::kFloat32, Shape{2, 3});      // six zeros
//   float* p = t.data<float>();                  // CHECKs the dtype
//   Tensor u = t;                                // shares the buffer
//   Tensor v = t.Clone();                        // deep copy
//   Tensor s = Tensor::FromVector<int32_t>({1, 8, 8, 2});
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"

namespace blockflow {

/// Summary statistics of a tensor's values, over finite values for min/max/mean.
struct TensorStats {
  double min = 0, max = 0, mean = 0;
  int64_t nan_count = 0, inf_count = 0, count = 0;
};

/// A dense, row-major tensor. Copies share the buffer; use Clone() for a deep copy.
class Tensor {
 public:
  /// An empty float32 tensor of shape [0] (allocates nothing).
  Tensor();
  /// A zero-filled tensor; `shape` must be fully defined and allocatable (CHECKed).
  Tensor(DType dtype, Shape shape);
  /// A zero-filled tensor, or an error when the shape is not fully defined or too large.
  static Expected<Tensor> Create(DType dtype, Shape shape);
  /// A tensor whose contents are unspecified (pooled memory, not zeroed), for code that
  /// writes every element; `shape` must be fully defined and allocatable (CHECKed).
  static Tensor Uninitialized(DType dtype, Shape shape);

  /// A tensor over an existing buffer of at least num_bytes() bytes, 64-byte aligned (a mapped
  /// file, another library's array); the buffer's deleter runs when the last copy goes.
  static Expected<Tensor> FromBuffer(DType dtype, Shape shape, std::shared_ptr<std::byte> buffer);
  /// A tensor that reads and writes memory another library owns (a NumPy array), without a
  /// copy: `data` holds at least num_bytes() bytes, aligned to the element size (kernels load
  /// with unaligned vector loads; only the Tensors this library allocates are 64-byte aligned).
  /// `owner` is kept alive by every copy of the tensor and released with the last one, on
  /// whichever thread drops it.
  static Expected<Tensor> FromExternal(DType dtype, Shape shape, void* data,
                                       std::shared_ptr<const void> owner);

  /// A rank-1 tensor holding `values`.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, Shape{static_cast<int64_t>(values.size())});
  }
  /// A tensor of `shape` holding `values` (sizes must agree).
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, Shape shape) {
    Tensor t(DTypeOf<T>::value, std::move(shape));
    BF_CHECK(static_cast<int64_t>(values.size()) == t.num_elements(), "FromVector size mismatch");
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
    return t;
  }
  /// A scalar (rank-0) tensor.
  template <typename T>
  static Tensor Scalar(T v) {
    return FromVector(std::vector<T>{v}, Shape{});
  }

  /// Element type.
  DType dtype() const { return dtype_; }
  /// Dimensions.
  const Shape& shape() const { return shape_; }
  /// Number of elements.
  int64_t num_elements() const { return num_elements_; }
  /// Size of the data in bytes.
  size_t num_bytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }

  /// Typed pointer to the data; CHECKs that T matches the dtype.
  template <typename T>
  T* data() {
    BF_CHECK(DTypeOf<T>::value == dtype_,
             "Tensor::data<T>: dtype is " + std::string(DTypeName(dtype_)));
    return reinterpret_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    BF_CHECK(DTypeOf<T>::value == dtype_,
             "Tensor::data<T>: dtype is " + std::string(DTypeName(dtype_)));
    return reinterpret_cast<const T*>(raw());
  }
  /// Untyped data pointer.
  void* raw() { return buffer_ ? buffer_.get() : nullptr; }
  const void* raw() const { return buffer_ ? buffer_.get() : nullptr; }

  /// Element i converted to double (any dtype).
  double GetAsDouble(int64_t i) const;
  /// Sets element i from a double, rounding to the dtype (any dtype).
  void SetFromDouble(int64_t i, double v);
  /// A deep copy.
  Tensor Clone() const;
  /// The same buffer seen with another shape of equal element count.
  Expected<Tensor> Reshaped(const Shape& shape) const;
  /// A copy converted to `dtype` (rounding to nearest even for narrower floats).
  Tensor CastTo(DType dtype) const;
  /// Min, max, mean (over finite values) and NaN/Inf counts.
  TensorStats Stats() const;
  /// Values as int64 (for int32/int64 tensors such as sizes); CHECKs an integer dtype.
  std::vector<int64_t> ToInt64Vector() const;
  /// Bitwise equality of dtype, shape and data.
  bool BitwiseEquals(const Tensor& other) const;
  /// A short description: "float32[1,8,8,2]".
  std::string DebugString() const;

 private:
  // Takes a buffer of at least the tensor's bytes.
  Tensor(DType dtype, Shape shape, std::shared_ptr<std::byte> buffer);
  // The one allocating path: checks dtype and size, then takes pooled memory.
  static Expected<Tensor> Allocate(DType dtype, Shape shape, bool zeroed);

  DType dtype_;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<std::byte> buffer_;
};

/// OK when a tensor of this dtype and shape can be allocated: fully defined, and no larger
/// than this machine's physical memory; otherwise an error that names the size.
Status CheckAllocatable(DType dtype, const Shape& shape);

}  // namespace blockflow
