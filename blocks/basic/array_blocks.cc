// Blocks that move data without arithmetic: Identity, Reshape, Transpose.
#include <cstring>
#include <memory>

#include "blocks/basic/basic_blocks.h"

namespace blockflow {
namespace {

// Reshape: `shape` may hold one -1, inferred from the element count.
Expected<Shape> ResolveReshape(const Shape& in, const std::vector<int64_t>& target) {
  int unknown = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (unknown >= 0)
        return InvalidArgument("input 'shape' " + IntsToString(target) + " has more than one -1");
      unknown = static_cast<int>(i);
    } else if (target[i] < 0) {
      return InvalidArgument("input 'shape' " + IntsToString(target) +
                             " has a negative size other than -1");
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      return InvalidArgument("input 'shape' " + IntsToString(target) +
                             " has more elements than fit in 64 bits");
    }
  }
  std::vector<int64_t> dims = target;
  const int64_t count = in.num_elements();
  if (count < 0) {
    if (unknown >= 0) dims[static_cast<size_t>(unknown)] = -1;
    return Shape(dims);
  }
  if (unknown >= 0) {
    if (known == 0 || count % known != 0) {
      return InvalidArgument("cannot reshape " + in.ToString() + " (" + std::to_string(count) +
                             " elements) to " + IntsToString(target));
    }
    dims[static_cast<size_t>(unknown)] = count / known;
  } else if (known != count) {
    return InvalidArgument("cannot reshape " + in.ToString() + " (" + std::to_string(count) +
                           " elements) to " + IntsToString(target) + " (" + std::to_string(known) +
                           " elements)");
  }
  return Shape(dims);
}

Expected<std::vector<int>> CheckPerm(const std::vector<int64_t>& perm, int rank) {
  if (static_cast<int>(perm.size()) != rank) {
    return InvalidArgument("input 'perm' " + IntsToString(perm) + " must have " +
                           std::to_string(rank) + " entries, one per dimension of 'x'");
  }
  std::vector<int> p(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t v = perm[i] < 0 ? perm[i] + rank : perm[i];
    if (v < 0 || v >= rank || seen[static_cast<size_t>(v)]) {
      return InvalidArgument("input 'perm' " + IntsToString(perm) + " is not a permutation of 0.." +
                             std::to_string(rank - 1));
    }
    seen[static_cast<size_t>(v)] = true;
    p[i] = static_cast<int>(v);
  }
  return p;
}

// A tensor split along axis 0 stays split along axis 0 when the new shape's first entry scales
// with the batch: -1 (inferred), or the split batch size itself (a Shape of a split tensor).
// Row-major order keeps each process's rows together then; any other reshape mixes them.
BatchValue ReshapeBatch(const BatchContext& c) {
  const BatchValue& in = c.batch[0];
  const BatchValue& shape = c.batch[1];
  if (in.kind == BatchKind::kUndecided) return in;
  if (shape.kind == BatchKind::kUndecided) return shape;
  if (in.kind == BatchKind::kFree && shape.kind == BatchKind::kFree) return in;
  if (in.kind == BatchKind::kSums && shape.kind == BatchKind::kFree) return in;
  if (in.kind == BatchKind::kCarries && in.axis == 0) {
    if (shape.kind == BatchKind::kBatchShape && shape.axis == 0) return in;
    if (shape.kind == BatchKind::kFree && c.inputs[1].value &&
        c.inputs[1].value->num_elements() > 0 && c.inputs[1].value->ToInt64Vector()[0] == -1) {
      return in;
    }
  }
  return c.Undecided(
      "reshapes a tensor that depends on the batch into a shape whose first entry " +
      std::string("is not -1 (or the split batch size), which mixes processes' rows"));
}

// Output axis j is input axis perm[j]: the split axis moves to where perm names it.
BatchValue TransposeBatch(const BatchContext& c) {
  const BatchValue& in = c.batch[0];
  if (c.batch[1].kind != BatchKind::kFree) return c.Undecided("input 'perm' depends on the batch");
  if (in.kind != BatchKind::kCarries) return in;
  if (!c.inputs[1].value) return c.Undecided("input 'perm' is not a known constant");
  const std::vector<int64_t> perm = c.inputs[1].value->ToInt64Vector();
  for (size_t j = 0; j < perm.size(); ++j) {
    if (perm[j] == in.axis) return BatchValue::Carries(static_cast<int>(j));
  }
  return c.Undecided("input 'perm' does not name the split axis");
}

}  // namespace

void RegisterArrayBlocks(OpRegistry& registry) {
  registry.Register(OpSchema("Identity")
                        .Category("Basic")
                        .Doc("Returns its input unchanged.")
                        .Input("input", AllDTypes(), "Any tensor.")
                        .Output("output", AllDTypes(), "The same tensor.")
                        .Batch(BatchRule::Same("input"))
                        .SetShapeFn([](InferContext& c) {
                          c.SetOutput(0, c.input(0));
                          return Status::OK();
                        })
                        .SetReferenceKernel([](KernelContext& k) {
                          k.outputs = {k.input(0)};
                          return Status::OK();
                        }));

  registry.Register(
      OpSchema("Reshape")
          .Category("Array")
          .Doc("The elements of `tensor` in row-major order with a new shape; one -1 in `shape` is "
               "inferred.")
          .Input("tensor", AllDTypes(), "The tensor to reshape.")
          .Input("shape", {DType::kInt32, DType::kInt64}, "1-D target shape.")
          .Output("output", AllDTypes(), "The reshaped tensor.")
          .Batch(BatchRule::Fn(ReshapeBatch))
          .SetShapeFn([](InferContext& c) {
            const PortInfo& shape = c.input(1);
            if (!shape.value) return SetOutputOfUnknownSizes(c, 1, "shape", c.input(0).dtype);
            ASSIGN_OR_RETURN(std::vector<int64_t> target, ConstIntVector(shape, "shape"));
            ASSIGN_OR_RETURN(Shape out, ResolveReshape(c.input(0).shape, target));
            PortInfo info{c.input(0).dtype, out, nullptr, c.input(0).from_feed};
            if (c.input(0).value && out.IsFullyDefined()) {
              ASSIGN_OR_RETURN(Tensor t, c.input(0).value->Reshaped(out));
              info.value = std::make_shared<const Tensor>(std::move(t));
            }
            c.SetOutput(0, info);
            return Status::OK();
          })
          .SetReferenceKernel([](KernelContext& k) {
            return k.SetOutput(k.input(0).Reshaped(k.output_infos[0].shape));
          }));

  registry.Register(
      OpSchema("Transpose")
          .Category("Array")
          .Doc("Permutes the dimensions of `x`: output dimension i is input dimension perm[i].")
          .Input("x", AllDTypes(), "The tensor to transpose.")
          .Input("perm", {DType::kInt32, DType::kInt64}, "A permutation of 0..rank-1.")
          .Output("y", AllDTypes(), "The transposed tensor.")
          .Batch(BatchRule::Fn(TransposeBatch))
          .SetShapeFn([](InferContext& c) {
            const Shape& in = c.input(0).shape;
            if (!c.input(1).value) {
              c.SetOutput(0, c.input(0).dtype,
                          Shape(std::vector<int64_t>(static_cast<size_t>(in.rank()), -1)));
              return Status::OK();
            }
            ASSIGN_OR_RETURN(std::vector<int64_t> perm, ConstIntVector(c.input(1), "perm"));
            ASSIGN_OR_RETURN(std::vector<int> p, CheckPerm(perm, in.rank()));
            std::vector<int64_t> dims;
            dims.reserve(p.size());
            for (int d : p) dims.push_back(in.dim(d));
            c.SetOutput(0, c.input(0).dtype, Shape(dims));
            return Status::OK();
          })
          .SetReferenceKernel([](KernelContext& k) {
            const Tensor& in = k.input(0);
            ASSIGN_OR_RETURN(std::vector<int> p,
                             CheckPerm(k.input(1).ToInt64Vector(), in.shape().rank()));
            Tensor& out = k.AllocateOutput(0);
            const int rank = in.shape().rank();
            std::vector<int64_t> in_stride(static_cast<size_t>(rank), 1);
            for (int d = rank - 2; d >= 0; --d) {
              in_stride[static_cast<size_t>(d)] =
                  in_stride[static_cast<size_t>(d) + 1] * in.shape().dim(d + 1);
            }
            const size_t size = DTypeSize(in.dtype());
            const auto* src = static_cast<const std::byte*>(in.raw());
            auto* dst = static_cast<std::byte*>(out.raw());
            std::vector<int64_t> index(static_cast<size_t>(rank), 0);
            for (int64_t i = 0; i < out.num_elements(); ++i) {
              int64_t off = 0;
              for (int d = 0; d < rank; ++d)
                off += index[static_cast<size_t>(d)] *
                       in_stride[static_cast<size_t>(p[static_cast<size_t>(d)])];
              std::memcpy(dst + i * static_cast<int64_t>(size),
                          src + off * static_cast<int64_t>(size), size);
              for (int d = rank - 1; d >= 0; --d) {
                if (++index[static_cast<size_t>(d)] < out.shape().dim(d)) break;
                index[static_cast<size_t>(d)] = 0;
              }
            }
            return Status::OK();
          }));
}

}  // namespace blockflow
