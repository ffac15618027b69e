#include "core/tensor.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/allocator.h"

namespace blockflow {
namespace {

std::string HumanBytes(long double bytes) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0Lf %s" : "%.3Lg %s", bytes, units[u]);
  return buf;
}

// double → integer without undefined behaviour: NaN gives 0, out-of-range values saturate.
template <typename I>
I SaturateCast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace

Status CheckAllocatable(DType dtype, const Shape& shape) {
  if (!shape.IsFullyDefined())
    return InvalidArgument("shape " + shape.ToString() + " is not fully defined");
  static const long double limit = static_cast<long double>(::sysconf(_SC_PHYS_PAGES)) *
                                   static_cast<long double>(::sysconf(_SC_PAGESIZE));
  long double bytes = DTypeSize(dtype);
  for (int64_t d : shape.dims()) bytes *= static_cast<long double>(d);
  if (bytes > limit) {
    return InvalidArgument("cannot allocate " + std::string(DTypeName(dtype)) + shape.ToString() +
                           " (" + HumanBytes(bytes) + "): more than this machine's memory (" +
                           HumanBytes(limit) + ")");
  }
  return Status::OK();
}

namespace {

// The buffer of every default-constructed (empty) tensor: non-null, never written.
const std::shared_ptr<std::byte>& EmptyBuffer() {
  alignas(64) static std::byte storage[64];
  static const std::shared_ptr<std::byte> buffer(storage, [](std::byte*) {});
  return buffer;
}

}  // namespace

Tensor::Tensor() : Tensor(DType::kFloat32, Shape{0}, EmptyBuffer()) {}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<std::byte> buffer)
    : dtype_(dtype),
      shape_(std::move(shape)),
      num_elements_(shape_.num_elements()),
      buffer_(std::move(buffer)) {}

Expected<Tensor> Tensor::Allocate(DType dtype, Shape shape, bool zeroed) {
  if (DTypeSize(dtype) == 0) return InvalidArgument("invalid dtype");
  RETURN_IF_ERROR(CheckAllocatable(dtype, shape));
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  std::shared_ptr<std::byte> buffer = BufferPool::Global().Allocate(bytes, zeroed);
  if (!buffer) {
    return InvalidArgument("cannot allocate " + std::string(DTypeName(dtype)) + shape.ToString() +
                           " (" + HumanBytes(bytes) + "): out of memory");
  }
  return Tensor(dtype, std::move(shape), std::move(buffer));
}

Tensor::Tensor(DType dtype, Shape shape) {
  Expected<Tensor> t = Allocate(dtype, std::move(shape), /*zeroed=*/true);
  BF_CHECK(t.ok(), t.status().message());
  *this = std::move(t).value();
}

Tensor Tensor::Uninitialized(DType dtype, Shape shape) {
  Expected<Tensor> t = Allocate(dtype, std::move(shape), /*zeroed=*/false);
  BF_CHECK(t.ok(), t.status().message());
  return std::move(t).value();
}

Expected<Tensor> Tensor::Create(DType dtype, Shape shape) {
  return Allocate(dtype, std::move(shape), /*zeroed=*/true);
}

Expected<Tensor> Tensor::FromBuffer(DType dtype, Shape shape, std::shared_ptr<std::byte> buffer) {
  if (DTypeSize(dtype) == 0) return InvalidArgument("invalid dtype");
  RETURN_IF_ERROR(CheckAllocatable(dtype, shape));
  if (!buffer) return InvalidArgument("FromBuffer: null buffer");
  if (reinterpret_cast<uintptr_t>(buffer.get()) % 64 != 0) {
    return InvalidArgument("FromBuffer: the buffer is not 64-byte aligned");
  }
  return Tensor(dtype, std::move(shape), std::move(buffer));
}

Expected<Tensor> Tensor::FromExternal(DType dtype, Shape shape, void* data,
                                      std::shared_ptr<const void> owner) {
  const size_t element = DTypeSize(dtype);
  if (element == 0) return InvalidArgument("invalid dtype");
  RETURN_IF_ERROR(CheckAllocatable(dtype, shape));
  if (!data) return InvalidArgument("FromExternal: null data");
  if (reinterpret_cast<uintptr_t>(data) % element != 0) {
    return InvalidArgument("FromExternal: the data is not aligned to its " +
                           std::to_string(element) + "-byte elements");
  }
  // The aliasing constructor: the tensor points at `data` and shares ownership of `owner`.
  std::shared_ptr<std::byte> buffer(std::move(owner), static_cast<std::byte*>(data));
  return Tensor(dtype, std::move(shape), std::move(buffer));
}

double Tensor::GetAsDouble(int64_t i) const {
  const void* p = raw();
  switch (dtype_) {
    case DType::kFloat16:
      return static_cast<float>(static_cast<const Half*>(p)[i]);
    case DType::kBFloat16:
      return static_cast<float>(static_cast<const BFloat16*>(p)[i]);
    case DType::kFloat32:
      return static_cast<const float*>(p)[i];
    case DType::kFloat64:
      return static_cast<const double*>(p)[i];
    case DType::kInt32:
      return static_cast<const int32_t*>(p)[i];
    case DType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kBool:
      return static_cast<const bool*>(p)[i] ? 1.0 : 0.0;
    case DType::kInvalid:
      break;
  }
  return 0;
}

void Tensor::SetFromDouble(int64_t i, double v) {
  void* p = raw();
  switch (dtype_) {
    case DType::kFloat16:
      static_cast<Half*>(p)[i] = Half(v);
      break;
    case DType::kBFloat16:
      static_cast<BFloat16*>(p)[i] = BFloat16(v);
      break;
    case DType::kFloat32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::kFloat64:
      static_cast<double*>(p)[i] = v;
      break;
    case DType::kInt32:
      static_cast<int32_t*>(p)[i] = SaturateCast<int32_t>(v);
      break;
    case DType::kInt64:
      static_cast<int64_t*>(p)[i] = SaturateCast<int64_t>(v);
      break;
    case DType::kBool:
      static_cast<bool*>(p)[i] = v != 0;
      break;
    case DType::kInvalid:
      break;
  }
}

Tensor Tensor::Clone() const {
  Tensor t = Uninitialized(dtype_, shape_);
  if (num_bytes()) std::memcpy(t.raw(), raw(), num_bytes());
  return t;
}

Expected<Tensor> Tensor::Reshaped(const Shape& shape) const {
  if (!shape.IsFullyDefined() || shape.num_elements() != num_elements_) {
    return InvalidArgument("cannot reshape " + DebugString() + " to " + shape.ToString() +
                           ": element counts differ");
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
      if (dtype == DType::kFloat16)
        t.data<Half>()[i] = Half(src[i]);
      else
        t.data<BFloat16>()[i] = BFloat16(src[i]);
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
    if (std::isnan(v)) {
      ++s.nan_count;
      continue;
    }
    if (std::isinf(v)) {
      ++s.inf_count;
      continue;
    }
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
  BF_CHECK(dtype_ == DType::kInt32 || dtype_ == DType::kInt64,
           "ToInt64Vector needs an integer tensor");
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

std::string Tensor::DebugString() const {
  return std::string(DTypeName(dtype_)) + shape_.ToString();
}

}  // namespace blockflow
