#include "core/shape.h"

#include <limits>

namespace blockflow {

bool Shape::IsFullyDefined() const {
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : dims_) {
    if (d < 0) return -1;
    if (d == 0) return 0;
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  return overflow ? std::numeric_limits<int64_t>::max() : n;
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

bool Shape::IsCompatibleWith(const Shape& other) const {
  if (rank() != other.rank()) return false;
  for (int i = 0; i < rank(); ++i) {
    if (dim(i) >= 0 && other.dim(i) >= 0 && dim(i) != other.dim(i)) return false;
  }
  return true;
}

std::string IntsToString(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
  return s + "]";
}

}  // namespace blockflow
