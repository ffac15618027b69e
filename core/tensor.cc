#include "core/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace blockflow {
namespace {

constexpr size_t kAlignment = 64;

std::shared_ptr<std::byte> AllocateZeroed(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  BF_CHECK(p != nullptr, "out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded == 0 ? kAlignment : rounded);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  BF_CHECK(shape_.IsFullyDefined(), "Tensor shape must be fully defined: " + shape_.ToString());
  BF_CHECK(DTypeSize(dtype_) > 0, "Tensor dtype must be valid");
  num_elements_ = shape_.num_elements();
  buffer_ = AllocateZeroed(num_bytes());
}

double Tensor::GetAsDouble(int64_t i) const {
  const void* p = raw();
  switch (dtype_) {
    case DType::kFloat16: return static_cast<float>(static_cast<const Half*>(p)[i]);
    case DType::kBFloat16: return static_cast<float>(static_cast<const BFloat16*>(p)[i]);
    case DType::kFloat32: return static_cast<const float*>(p)[i];
    case DType::kFloat64: return static_cast<const double*>(p)[i];
    case DType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kBool: return static_cast<const bool*>(p)[i] ? 1.0 : 0.0;
    case DType::kInvalid: break;
  }
  return 0;
}

void Tensor::SetFromDouble(int64_t i, double v) {
  void* p = raw();
  switch (dtype_) {
    case DType::kFloat16: static_cast<Half*>(p)[i] = Half(v); break;
    case DType::kBFloat16: static_cast<BFloat16*>(p)[i] = BFloat16(v); break;
    case DType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::kFloat64: static_cast<double*>(p)[i] = v; break;
    case DType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DType::kInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DType::kBool: static_cast<bool*>(p)[i] = v != 0; break;
    case DType::kInvalid: break;
  }
}

Tensor Tensor::Clone() const {
  Tensor t(dtype_, shape_);
  if (num_bytes()) std::memcpy(t.raw(), raw(), num_bytes());
  return t;
}

Expected<Tensor> Tensor::Reshaped(const Shape& shape) const {
  if (!shape.IsFullyDefined() || shape.num_elements() != num_elements_) {
    return InvalidArgument("cannot reshape " + DebugString() + " to " + shape.ToString() + ": element counts differ");
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::CastTo(DType dtype) const {
  if (dtype == dtype_) return Clone();
  Tensor t(dtype, shape_);
  // float32 → 16-bit must round once from the float32 value, not via double.
  if (dtype_ == DType::kFloat32 && (dtype == DType::kFloat16 || dtype == DType::kBFloat16)) {
    const float* src = data<float>();
    for (int64_t i = 0; i < num_elements_; ++i) {
      if (dtype == DType::kFloat16) t.data<Half>()[i] = Half(src[i]);
      else t.data<BFloat16>()[i] = BFloat16(src[i]);
    }
    return t;
  }
  for (int64_t i = 0; i < num_elements_; ++i) t.SetFromDouble(i, GetAsDouble(i));
  return t;
}

TensorStats Tensor::Stats() const {
  TensorStats s;
  s.count = num_elements_;
  double sum = 0;
  int64_t finite = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < num_elements_; ++i) {
    const double v = GetAsDouble(i);
    if (std::isnan(v)) { ++s.nan_count; continue; }
    if (std::isinf(v)) { ++s.inf_count; continue; }
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
    ++finite;
  }
  if (finite == 0) {
    s.min = s.max = s.mean = 0;
  } else {
    s.mean = sum / static_cast<double>(finite);
  }
  return s;
}

std::vector<int64_t> Tensor::ToInt64Vector() const {
  BF_CHECK(dtype_ == DType::kInt32 || dtype_ == DType::kInt64, "ToInt64Vector needs an integer tensor");
  std::vector<int64_t> v(static_cast<size_t>(num_elements_));
  for (int64_t i = 0; i < num_elements_; ++i) {
    v[static_cast<size_t>(i)] = dtype_ == DType::kInt32 ? data<int32_t>()[i] : data<int64_t>()[i];
  }
  return v;
}

bool Tensor::BitwiseEquals(const Tensor& other) const {
  return dtype_ == other.dtype_ && shape_ == other.shape_ &&
         (num_bytes() == 0 || std::memcmp(raw(), other.raw(), num_bytes()) == 0);
}

std::string Tensor::DebugString() const { return std::string(DTypeName(dtype_)) + shape_.ToString(); }

}  // namespace blockflow
