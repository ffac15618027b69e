// Shape: the dimensions of a tensor; -1 marks a size unknown until run time.
//
//   Shape s{1, 8, 8, 2};
//   s.rank() == 4; s.num_elements() == 128; s.ToString() == "[1,8,8,2]";
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace blockflow {

/// Dimensions of a tensor. A dimension of -1 is unknown (a Placeholder's "any size").
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  /// Number of dimensions.
  int rank() const { return static_cast<int>(dims_.size()); }
  /// Dimension i (may be -1 when unknown).
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t operator[](int i) const { return dim(i); }
  /// Sets dimension i.
  void set_dim(int i, int64_t v) { dims_[static_cast<size_t>(i)] = v; }
  /// All dimensions.
  const std::vector<int64_t>& dims() const { return dims_; }
  /// True when no dimension is unknown.
  bool IsFullyDefined() const;
  /// Product of the dimensions (1 for rank 0); -1 when not fully defined; INT64_MAX on overflow.
  int64_t num_elements() const;
  /// "[1,8,8,2]"; unknown dims print as "?".
  std::string ToString() const;
  /// True when every known dimension of `other` matches (unknown matches anything).
  bool IsCompatibleWith(const Shape& other) const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

/// "[4,-1]": a list of integers as written (unlike Shape::ToString, -1 stays -1).
std::string IntsToString(const std::vector<int64_t>& values);

}  // namespace blockflow
