// Scope constructors for the basic blocks (see core/scope.h).
//
//   auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<float>({1, 2, 3}));
//   auto p = ops::Placeholder(root.WithOpName("p"), DType::kFloat32, Shape{3});
//   auto y = ops::Mul(root, ops::Add(root, x, p), x);
#pragma once

#include "core/scope.h"

namespace blockflow::ops {

/// A Const holding `value` inline (as a flat value list).
Output Const(const Scope& scope, const Tensor& value);
/// A Const read from a .npy file (relative to the graph file when saved).
Output ConstFromFile(const Scope& scope, DType dtype, const std::string& file);
/// A Placeholder to feed at run time; -1 in `shape` for any size.
Output Placeholder(const Scope& scope, DType dtype, const Shape& shape);
Output Identity(const Scope& scope, const Output& input);
Output Add(const Scope& scope, const Output& x, const Output& y);
Output Sub(const Scope& scope, const Output& x, const Output& y);
Output Mul(const Scope& scope, const Output& x, const Output& y);
Output Sum(const Scope& scope, const Output& input, const Output& axis, bool keep_dims = false);
Output Reshape(const Scope& scope, const Output& tensor, const Output& shape);
Output Transpose(const Scope& scope, const Output& x, const Output& perm);
Output Fill(const Scope& scope, const Output& dims, const Output& value);
Output ZerosLike(const Scope& scope, const Output& x);
Output RandomUniform(const Scope& scope, const Output& shape, DType dtype, int64_t seed = 0,
                     int64_t seed2 = 0);
Output RandomStandardNormal(const Scope& scope, const Output& shape, DType dtype, int64_t seed = 0,
                            int64_t seed2 = 0);

/// The JSON value list of a tensor, as Const's `value` attr holds it.
nlohmann::json TensorToJsonValues(const Tensor& t);

}  // namespace blockflow::ops
