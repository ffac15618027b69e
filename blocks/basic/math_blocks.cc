// Element-wise arithmetic with NumPy broadcasting (Add, Sub, Mul) and the Sum reduction.
#include <algorithm>

#include "blocks/basic/basic_blocks.h"

namespace blockflow {
namespace {

// NumPy broadcasting: align from the right; sizes must match or one must be 1.
Expected<Shape> BroadcastShape(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dim(ia) : 1, db = ib >= 0 ? b.dim(ib) : 1;
    if (da != 1 && db != 1 && da >= 0 && db >= 0 && da != db) {
      return InvalidArgument("shapes " + a.ToString() + " and " + b.ToString() +
                             " cannot be broadcast: dimension " + std::to_string(i) + " is " +
                             std::to_string(da) + " vs " + std::to_string(db) +
                             " (sizes must match or one must be 1)");
    }
    // A 1 takes the other size; an unknown size (-1) stays unknown unless the other is 1.
    const int64_t d = (da == 1 || (da < 0 && db != 1)) ? db : da;
    dims[static_cast<size_t>(i)] = d;
  }
  return Shape(dims);
}

// Row-major strides of `in` seen as `out`'s rank, with 0 where `in` is broadcast.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(static_cast<size_t>(out.rank()), 0);
  int64_t s = 1;
  for (int i = in.rank() - 1; i >= 0; --i) {
    const int o = out.rank() - in.rank() + i;
    strides[static_cast<size_t>(o)] = in.dim(i) == 1 ? 0 : s;
    s *= in.dim(i);
  }
  return strides;
}

enum class BinaryOp { kAdd, kSub, kMul };

// One element: 16-bit floats computed in float and rounded once; integers wrap around as in
// TensorFlow (unsigned arithmetic: no undefined overflow).
template <typename T, BinaryOp kOp>
inline T Combine(T x, T y) {
  using Acc = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
  const Acc a = static_cast<Acc>(x), b = static_cast<Acc>(y);
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    const U ua = static_cast<U>(a), ub = static_cast<U>(b);
    return static_cast<T>(kOp == BinaryOp::kAdd   ? static_cast<U>(ua + ub)
                          : kOp == BinaryOp::kSub ? static_cast<U>(ua - ub)
                                                  : static_cast<U>(ua * ub));
  } else {
    return static_cast<T>(kOp == BinaryOp::kAdd ? a + b : kOp == BinaryOp::kSub ? a - b : a * b);
  }
}

// One innermost row: x and y each advance by 1 or stay (broadcast). The common cases get their
// own loops so the compiler vectorises them.
template <typename T, BinaryOp kOp>
void Row(const T* x, int64_t sx, const T* y, int64_t sy, T* out, int64_t n) {
  if (sx == 1 && sy == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = Combine<T, kOp>(x[j], y[j]);
  } else if (sx == 1 && sy == 0) {
    const T b = y[0];
    for (int64_t j = 0; j < n; ++j) out[j] = Combine<T, kOp>(x[j], b);
  } else if (sx == 0 && sy == 1) {
    const T a = x[0];
    for (int64_t j = 0; j < n; ++j) out[j] = Combine<T, kOp>(a, y[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = Combine<T, kOp>(x[j * sx], y[j * sy]);
  }
}

// out[i] = x[bx(i)] op y[by(i)], row by row along the innermost dimension; the outer
// dimensions advance as an odometer.
template <typename T, BinaryOp kOp>
void BinaryKernel(const Tensor& x, const Tensor& y, Tensor& out) {
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  T* po = out.data<T>();
  const Shape& shape = out.shape();
  const auto sx = BroadcastStrides(x.shape(), shape), sy = BroadcastStrides(y.shape(), shape);
  const int rank = shape.rank();
  if (out.num_elements() == 0) return;
  if (rank == 0) {
    po[0] = Combine<T, kOp>(px[0], py[0]);
    return;
  }
  const size_t last = static_cast<size_t>(rank - 1);
  const int64_t inner = shape.dim(rank - 1);
  const int64_t rows = out.num_elements() / inner;
  std::vector<int64_t> index(last, 0);
  int64_t ox = 0, oy = 0;
  for (int64_t r = 0; r < rows; ++r) {
    Row<T, kOp>(px + ox, sx[last], py + oy, sy[last], po + r * inner, inner);
    for (int d = rank - 2; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      if (++index[u] < shape.dim(d)) {
        ox += sx[u];
        oy += sy[u];
        break;
      }
      ox -= sx[u] * (shape.dim(d) - 1);
      oy -= sy[u] * (shape.dim(d) - 1);
      index[u] = 0;
    }
  }
}

template <typename T>
void BinaryKernel(BinaryOp op, const Tensor& x, const Tensor& y, Tensor& out) {
  switch (op) {
    case BinaryOp::kAdd:
      return BinaryKernel<T, BinaryOp::kAdd>(x, y, out);
    case BinaryOp::kSub:
      return BinaryKernel<T, BinaryOp::kSub>(x, y, out);
    case BinaryOp::kMul:
      return BinaryKernel<T, BinaryOp::kMul>(x, y, out);
  }
}

void RegisterBinary(OpRegistry& registry, const std::string& name, BinaryOp op, Linearity linearity,
                    const std::string& doc) {
  registry.Register(
      OpSchema(name)
          .Category("Math")
          .Doc(doc + " With NumPy broadcasting.")
          .Input("x", NumericDTypes(), "First operand.")
          .Input("y", NumericDTypes(), "Second operand; broadcast against x.")
          .Output("z", NumericDTypes(), "The result, with the broadcast shape of x and y.")
          .Batch(BatchRule::Elementwise(linearity))
          .SameDType({"x", "y"})
          .SetShapeFn([](InferContext& c) {
            ASSIGN_OR_RETURN(Shape s, BroadcastShape(c.input(0).shape, c.input(1).shape));
            c.SetOutput(0, c.input(0).dtype, s);
            return Status::OK();
          })
          .SetReferenceKernel([op](KernelContext& k) {
            Tensor& out = k.AllocateUninitializedOutput(0);  // every element set
            DispatchAll(out.dtype(), [&](auto t) {
              using T = decltype(t);
              if constexpr (!std::is_same_v<T, bool>)
                BinaryKernel<T>(op, k.input(0), k.input(1), out);
            });
            return Status::OK();
          }));
}

// Sum: reduces `input` over the axes in `axis` (negative counts from the end).
Expected<std::vector<bool>> ReducedAxes(const PortInfo& axis, int rank) {
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, [&]() -> Expected<std::vector<int64_t>> {
    if (!axis.value) return InvalidArgument("input 'axis' must be a known constant");
    if (axis.value->shape().rank() > 1) return InvalidArgument("input 'axis' must be 0-D or 1-D");
    return axis.value->ToInt64Vector();
  }());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return InvalidArgument("axis " + std::to_string(a) +
                             " is out of range for a tensor of rank " + std::to_string(rank));
    }
    const size_t u = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reduced[u]) return InvalidArgument("axis " + std::to_string(a) + " is listed twice");
    reduced[u] = true;
  }
  return reduced;
}

Shape ReducedShape(const Shape& in, const std::vector<bool>& reduced, bool keep_dims) {
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!reduced[static_cast<size_t>(i)])
      dims.push_back(in.dim(i));
    else if (keep_dims)
      dims.push_back(1);
  }
  return Shape(dims);
}

}  // namespace

namespace {

// Sum over the split axis adds the samples up; over other axes it keeps the split, moved left by
// the reduced axes before it unless keep_dims; a sum of a sum over the batch is one too.
BatchValue SumBatch(const BatchContext& c) {
  const BatchValue& in = c.batch[0];
  if (c.batch[1].kind != BatchKind::kFree) return c.Undecided("input 'axis' depends on the batch");
  if (in.kind == BatchKind::kFree || in.kind == BatchKind::kSums ||
      in.kind == BatchKind::kUndecided)
    return in;
  if (in.kind != BatchKind::kCarries) return c.Undecided("sums a shape that depends on the batch");
  Expected<std::vector<bool>> reduced = ReducedAxes(c.inputs[1], c.inputs[0].shape.rank());
  if (!reduced.ok()) return c.Undecided(reduced.status().message());
  if ((*reduced)[static_cast<size_t>(in.axis)]) return BatchValue::Sums();
  if (c.attrs.GetBool("keep_dims")) return in;
  int axis = in.axis;
  for (int d = 0; d < in.axis; ++d) axis -= (*reduced)[static_cast<size_t>(d)] ? 1 : 0;
  return BatchValue::Carries(axis);
}

}  // namespace

void RegisterMathBlocks(OpRegistry& registry) {
  RegisterBinary(registry, "Add", BinaryOp::kAdd, Linearity::kLinear, "x + y, element-wise.");
  RegisterBinary(registry, "Sub", BinaryOp::kSub, Linearity::kLinear, "x - y, element-wise.");
  RegisterBinary(registry, "Mul", BinaryOp::kMul, Linearity::kBilinear, "x * y, element-wise.");

  registry.Register(
      OpSchema("Sum")
          .Category("Math")
          .Doc("Sum of `input` over the dimensions in `axis`. Floats accumulate in float64 and "
               "round once.")
          .Input("input", NumericDTypes(), "The tensor to reduce.")
          .Input("axis", {DType::kInt32, DType::kInt64},
                 "Dimensions to reduce; negative counts from the end.")
          .Output("output", NumericDTypes(), "The reduced tensor.")
          .Batch(BatchRule::Fn(SumBatch))
          .Attr("keep_dims", AttrType::kBool, false, "Keep reduced dimensions with size 1.")
          .SetShapeFn([](InferContext& c) {
            const Shape& in = c.input(0).shape;
            ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedAxes(c.input(1), in.rank()));
            c.SetOutput(0, c.input(0).dtype,
                        ReducedShape(in, reduced, c.attrs().GetBool("keep_dims")));
            return Status::OK();
          })
          .SetReferenceKernel([](KernelContext& k) {
            const Tensor& in = k.input(0);
            PortInfo axis{k.input(1).dtype(), k.input(1).shape(),
                          std::make_shared<const Tensor>(k.input(1))};
            ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedAxes(axis, in.shape().rank()));
            Tensor& out = k.AllocateOutput(0);
            // Output offset of each input element: drop the reduced dimensions.
            const int rank = in.shape().rank();
            std::vector<int64_t> out_stride(static_cast<size_t>(rank), 0);
            int64_t s = 1;
            for (int d = rank - 1; d >= 0; --d) {
              if (reduced[static_cast<size_t>(d)]) continue;
              out_stride[static_cast<size_t>(d)] = s;
              s *= in.shape().dim(d);
            }
            const bool is_int = in.dtype() == DType::kInt32 || in.dtype() == DType::kInt64;
            std::vector<double> acc(static_cast<size_t>(out.num_elements()), 0.0);
            std::vector<uint64_t> iacc(is_int ? acc.size() : 0, 0);  // wraps like the integer dtype
            std::vector<int64_t> index(static_cast<size_t>(rank), 0);
            int64_t o = 0;
            for (int64_t i = 0; i < in.num_elements(); ++i) {
              if (is_int) {
                iacc[static_cast<size_t>(o)] += static_cast<uint64_t>(
                    in.dtype() == DType::kInt32 ? int64_t{in.data<int32_t>()[i]}
                                                : in.data<int64_t>()[i]);
              } else {
                acc[static_cast<size_t>(o)] += in.GetAsDouble(i);
              }
              for (int d = rank - 1; d >= 0; --d) {
                const size_t u = static_cast<size_t>(d);
                if (++index[u] < in.shape().dim(d)) {
                  o += out_stride[u];
                  break;
                }
                o -= out_stride[u] * (in.shape().dim(d) - 1);
                index[u] = 0;
              }
            }
            for (int64_t j = 0; j < out.num_elements(); ++j) {
              if (!is_int)
                out.SetFromDouble(j, acc[static_cast<size_t>(j)]);
              else if (out.dtype() == DType::kInt32)
                out.data<int32_t>()[j] =
                    static_cast<int32_t>(static_cast<uint32_t>(iacc[static_cast<size_t>(j)]));
              else
                out.data<int64_t>()[j] = static_cast<int64_t>(iacc[static_cast<size_t>(j)]);
            }
            return Status::OK();
          }));
}

}  // namespace blockflow
